"""Schedules: the jobs that keep a wiki current unattended, as launchd agents (macOS) or systemd
user timers (Linux), rendered from the jinja2 templates in ``templates/schedule/``.

The jobs are the POSIX sh scripts in ``_system/bin/`` (see :data:`JOBS`): consolidate nightly
(02:30), brief daily (06:45), archive monthly (``wiki-archive --monthly``), lint weekly (Monday
07:00); and, when asked for (``--jobs ingest,sync``), the inbox ingest every five minutes and
``sync`` hourly. Once installed, an optional job stays installed until ``uninstall --jobs``.

**One set per wiki.** Labels and unit names carry the wiki: ``com.llm-wiki.<wiki>.<job>`` and
``llm-wiki-<wiki>-<job>.{service,timer}``, where ``<wiki>`` is ``schedule.name`` in its
settings.yaml, else the first 8 hex digits of the sha256 of its absolute path. Two wikis on one
account keep their own jobs; ``install`` replaces the unnamed jobs of an earlier version
(``com.llm-wiki.<job>``) that ran this wiki.

Catch-up: launchd runs a calendar job missed while the Mac slept once it wakes, but not one
missed while it was off; systemd's ``Persistent=true`` runs a missed timer at the next boot. The
archive job runs at most once per calendar month (``wiki-archive --monthly``), so launchd calls it
daily: the first run of a month archives, even when the machine was off on the 1st. On Linux,
user timers run only while the user is logged in unless lingering is on (``loginctl
enable-linger``); ``install`` and ``status`` say so when it is off.

Every job names absolute paths only (``/bin/sh``, the job script, the Python in
``LLM_WIKI_PYTHON``), logs to ``<wiki>/.llm-wiki/logs/<job>.log`` (``LLM_WIKI_LOG``; the job
script rotates it past ``LLM_WIKI_LOG_MAX_BYTES``, 1 MiB, keeping three old ones), and takes
everything else — the API key, PATH additions such as where ``claude`` lives, the reader under
walls — from ONE env file (``~/.config/llm-wiki/env``, mode 0600), never from the plist or unit.
``install`` creates that file (0600, everything commented out) when it is missing.

The target folder (``--dest``) and the ``launchctl`` / ``systemctl`` commands
(``LLM_WIKI_LAUNCHCTL`` / ``LLM_WIKI_SYSTEMCTL``, else found on PATH; ``loginctl`` on PATH) can be
replaced, so tests never touch the real user's agents or units.
"""

from __future__ import annotations

import hashlib
import os
import plistlib
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_wiki.entries import NAME_RE
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.files import atomic_write
from llm_wiki.prompts import render_template
from llm_wiki.wiki import Wiki

PLATFORMS = ("launchd", "systemd")
LABEL = "com.llm-wiki"  # launchd labels: com.llm-wiki.<wiki>.<job>
UNIT = "llm-wiki"  # systemd units: llm-wiki-<wiki>-<job>.service / .timer
ENV_FILE = "LLM_WIKI_ENV_FILE"
ENV_COMMAND = {"launchd": "LLM_WIKI_LAUNCHCTL", "systemd": "LLM_WIKI_SYSTEMCTL"}
COMMAND = {"launchd": "launchctl", "systemd": "systemctl"}
LOG_DIR = "logs"  # under the wiki's .llm-wiki/


@dataclass(frozen=True)
class Job:
    name: str
    script: str
    args: tuple[str, ...]
    what: str  # what it does, for descriptions
    launchd: tuple[dict[str, int], ...]  # StartCalendarInterval entries
    launchd_when: str
    systemd: str  # OnCalendar
    systemd_when: str
    optional: bool = False  # installed only when asked for (--jobs)
    interval: int | None = None  # launchd StartInterval (seconds), in place of a calendar

    def when(self, platform: str) -> str:
        return self.launchd_when if platform == "launchd" else self.systemd_when


JOBS = (
    Job(
        "consolidate",
        "wiki-consolidate",
        (),
        "rewrite out-of-date domains as cited syntheses",
        ({"Hour": 2, "Minute": 30},),
        "nightly at 02:30",
        "*-*-* 02:30:00",
        "nightly at 02:30",
    ),
    Job(
        "brief",
        "wiki-brief",
        (),
        "write today's briefing to briefings/",
        ({"Hour": 6, "Minute": 45},),
        "daily at 06:45",
        "*-*-* 06:45:00",
        "daily at 06:45",
    ),
    Job(
        "archive",
        "wiki-archive",
        ("--monthly",),
        "archive long-superseded entries, once a month",
        ({"Hour": 3, "Minute": 30},),
        "daily at 03:30, archiving on the first run of each month (a missed 1st catches up)",
        "*-*-01 03:30:00",
        "on the 1st of each month at 03:30",
    ),
    Job(
        "lint",
        "wiki-lint",
        (),
        "find schema breaks, broken supersedes, tampering, stale syntheses",
        ({"Weekday": 1, "Hour": 7, "Minute": 0},),
        "Mondays at 07:00",
        "Mon *-*-* 07:00:00",
        "Mondays at 07:00",
    ),
    Job(
        "ingest",
        "wiki-ingest",
        (),
        "ingest the inbox files quiet for 10 minutes (transcripts the agent hooks drop there)",
        (),
        "every 5 minutes",
        "*:0/5",
        "every 5 minutes",
        optional=True,
        interval=300,
    ),
    Job(
        "sync",
        "wiki-sync",
        (),
        "commit, pull with rebase and push the git repository of the wiki",
        ({"Minute": 17},),
        "hourly at :17",
        "*-*-* *:17:00",
        "hourly at :17",
        optional=True,
    ),
)
STANDARD = tuple(j.name for j in JOBS if not j.optional)
OPTIONAL = tuple(j.name for j in JOBS if j.optional)


def pick_jobs(names: str | None) -> tuple[str, ...]:
    """``--jobs ingest,sync`` (``all``: every optional job) as job names, checked."""
    if not names:
        return ()
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    if "all" in wanted:
        return tuple(j.name for j in JOBS)
    unknown = [n for n in wanted if n not in {j.name for j in JOBS}]
    if unknown:
        raise InvalidInput(
            f"no job {unknown[0]!r}; --jobs takes {', '.join(OPTIONAL)} (the others, "
            f"{', '.join(STANDARD)}, are always installed), or all."
        )
    return tuple(j.name for j in JOBS if j.name in wanted)


def wiki_name(wiki_root: Path) -> str:
    """The wiki's part of job names: ``schedule.name`` in settings.yaml, else a short hash of
    its absolute path."""
    name = Wiki(wiki_root).settings.get("schedule.name")
    if name is None:
        return path_hash(wiki_root)
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise InvalidInput(
            f"schedule.name in {wiki_root / 'settings.yaml'} must be lowercase letters, digits "
            "and hyphens, e.g. team-wiki."
        )
    return name


def path_hash(path: Path) -> str:
    return hashlib.sha256(str(path).encode()).hexdigest()[:8]


def job_label(name: str, job: str) -> str:
    """launchd: ``com.llm-wiki.<wiki>.<job>``."""
    return f"{LABEL}.{name}.{job}"


def job_unit(name: str, job: str) -> str:
    """systemd: ``llm-wiki-<wiki>-<job>`` (.service, .timer)."""
    return f"{UNIT}-{name}-{job}"


@dataclass(frozen=True)
class Layout:
    """Where everything a job needs lives: all absolute paths."""

    wiki: Path
    python: Path
    bin_dir: Path
    env_file: Path
    name: str = ""  # the wiki's part of job names (see wiki_name); "" for a short path hash

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", path_hash(self.wiki))

    @property
    def log_dir(self) -> Path:
        return self.wiki / ".llm-wiki" / LOG_DIR

    def label(self, job: str) -> str:
        return job_label(self.name, job)

    def unit(self, job: str) -> str:
        return job_unit(self.name, job)

    def to_dict(self) -> dict[str, str]:
        return {
            "wiki": str(self.wiki),
            "name": self.name,
            "python": str(self.python),
            "bin": str(self.bin_dir),
            "env_file": str(self.env_file),
            "logs": str(self.log_dir),
        }


def default_platform() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


def default_env_file() -> Path:
    """The one env file: ``LLM_WIKI_ENV_FILE``, else ``~/.config/llm-wiki/env`` (as _lib.sh)."""
    return Path(os.environ.get(ENV_FILE) or Path.home() / ".config" / "llm-wiki" / "env")


def default_bin_dir() -> Path:
    """``_system/bin`` next to the package (a checkout, an editable install), else the copy
    inside the installed package (``llm_wiki/bin``: pipx, uv tool, a wheel)."""
    here = Path(__file__).resolve().parent
    checkout = here.parent / "bin"
    return checkout if (checkout / "_lib.sh").is_file() else here / "bin"


def layout(
    wiki_root: Path,
    *,
    python: str | None = None,
    bin_dir: str | None = None,
    env_file: str | None = None,
) -> Layout:
    """The layout for this machine, checked: the job scripts and the Python must exist."""
    py = Path(python).expanduser() if python else Path(sys.executable)
    bins = Path(bin_dir).expanduser() if bin_dir else default_bin_dir()
    env = Path(env_file).expanduser() if env_file else default_env_file()
    py, bins, env = (p if p.is_absolute() else Path.cwd() / p for p in (py, bins, env))
    missing = [job.script for job in JOBS if not (bins / job.script).is_file()]
    if missing:
        raise InvalidInput(
            f"no job scripts ({', '.join(missing)}) in {bins}; reinstall llm-wiki, or pass --bin "
            "with the _system/bin folder of a checkout."
        )
    if not (py.is_file() and os.access(py, os.X_OK)):
        raise InvalidInput(f"{py} is not an executable Python; pass --python with one.")
    root = Path(wiki_root).absolute()
    return Layout(wiki=root, python=py, bin_dir=bins, env_file=env, name=wiki_name(root))


# --------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class Rendered:
    name: str  # file name, e.g. com.llm-wiki.consolidate.plist
    text: str
    job: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "job": self.job, "text": self.text}


def check_platform(platform: str) -> str:
    if platform not in PLATFORMS:
        raise InvalidInput(f"unknown platform {platform!r}; choose launchd or systemd.")
    return platform


def render(platform: str, where: Layout, jobs: tuple[str, ...] = STANDARD) -> list[Rendered]:
    """The files for ``platform``: one plist per job, or a service and a timer per job."""

    check_platform(platform)
    out: list[Rendered] = []
    for job in JOBS:
        if job.name not in jobs:
            continue
        context: dict[str, Any] = {
            "job": job,
            "when": job.when(platform),
            "layout": where,
            "script": str(where.bin_dir / job.script),
            "log": str(where.log_dir / f"{job.name}.log"),
        }
        if platform == "launchd":
            label = where.label(job.name)
            text = render_template("schedule/launchd.plist.j2", label=label, **context)
            out.append(Rendered(f"{label}.plist", text, job.name))
        else:
            context.update(word=_systemd_word, env=_systemd_env, spec=_systemd_spec)
            unit = where.unit(job.name)
            for kind in ("service", "timer"):
                text = render_template(f"schedule/systemd.{kind}.j2", unit=unit, **context)
                out.append(Rendered(f"{unit}.{kind}", text, job.name))
    return out


def _systemd_spec(value: str) -> str:
    """A value with systemd's specifier character escaped (``%`` -> ``%%``)."""
    return value.replace("%", "%%")


def _systemd_word(value: str, *, command: bool = True) -> str:
    """One word of an ExecStart= line (``command``) or an Environment= assignment: ``%`` (and in
    a command ``$``) escaped, quoted when it holds anything but plain path characters."""
    value = value.replace("%", "%%")
    if command:
        value = value.replace("$", "$$")
    if re.fullmatch(r"[A-Za-z0-9_@%+=:,./$-]+", value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _systemd_env(value: str) -> str:
    return _systemd_word(value, command=False)


def write_rendered(files: list[Rendered], folder: Path) -> list[Path]:
    """Write ``files`` into ``folder`` (created), each atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for item in files:
        path = folder / item.name
        atomic_write(path, item.text)
        paths.append(path)
    return paths


# --------------------------------------------------------------------------- install


def default_dest(platform: str) -> Path:
    if platform == "launchd":
        return Path.home() / "Library" / "LaunchAgents"
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user"


ENV_TEMPLATE = "schedule/env"


@dataclass(frozen=True)
class InstallResult:
    platform: str
    dest: str
    jobs: tuple[str, ...]
    files: tuple[str, ...]
    env_file: str
    env_created: bool
    commands: tuple[str, ...]
    replaced: tuple[str, ...] = ()  # an earlier version's unnamed jobs of this wiki
    notes: tuple[str, ...] = ()
    layout: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "dest": self.dest,
            "jobs": list(self.jobs),
            "files": list(self.files),
            "env_file": self.env_file,
            "env_created": self.env_created,
            "commands": list(self.commands),
            "replaced": list(self.replaced),
            "notes": list(self.notes),
            "layout": self.layout,
        }


def installed_jobs(platform: str, where: Layout, folder: Path) -> tuple[str, ...]:
    """The jobs of this wiki with files in ``folder``."""
    return tuple(j.name for j in JOBS if _paths(platform, where.name, j.name, folder)[0].exists())


def install(
    platform: str, where: Layout, *, dest: Path | None = None, jobs: tuple[str, ...] = ()
) -> InstallResult:
    """Write this wiki's job files into ``dest`` and load them (launchctl bootstrap / systemctl
    enable): the standard jobs, the optional ones in ``jobs``, and any optional job installed
    before. An earlier version's unnamed jobs that ran this wiki are unloaded and removed."""
    check_platform(platform)
    folder = dest or default_dest(platform)
    keep = set(STANDARD) | set(jobs) | set(installed_jobs(platform, where, folder))
    chosen = tuple(j.name for j in JOBS if j.name in keep)
    files = render(platform, where, chosen)
    tool = _command(platform)  # before writing anything: fail early where there is no manager
    created, notes = ensure_env_file(where.env_file)
    where.log_dir.mkdir(parents=True, exist_ok=True)
    if "ingest" in chosen:
        (where.wiki / "inbox").mkdir(exist_ok=True)  # the job's default inbox (LLM_WIKI_INBOX)
    notes += _job_notes(where, chosen)
    commands: list[list[str]] = []
    replaced = _remove_legacy(platform, where, folder, tool, commands)
    paths = write_rendered(files, folder)
    if platform == "launchd":
        domain = f"gui/{os.getuid()}"
        for item, path in zip(files, paths, strict=True):
            label = item.name.removesuffix(".plist")
            _run([tool, "bootout", f"{domain}/{label}"], check=False)  # a previous version
            commands.append([tool, "bootstrap", domain, str(path)])
            _run(commands[-1])
    else:
        timers = [f.name for f in files if f.name.endswith(".timer")]
        for argv in (
            [tool, "--user", "daemon-reload"],
            [tool, "--user", "enable", "--now", *timers],
        ):
            commands.append(argv)
            _run(argv)
        if lingering() is False:
            notes.append(LINGER_NOTE)
    return InstallResult(
        platform=platform,
        dest=str(folder),
        jobs=chosen,
        files=tuple(str(p) for p in paths),
        env_file=str(where.env_file),
        env_created=created,
        commands=tuple(" ".join(c) for c in commands),
        replaced=tuple(replaced),
        notes=tuple(notes),
        layout=where.to_dict(),
    )


def _job_notes(where: Layout, jobs: tuple[str, ...]) -> list[str]:
    """What would make an optional job fail at each run, said once at install."""
    notes = []
    backend = Wiki(where.wiki).settings.get("backend", "offline")
    if "ingest" in jobs and backend == "offline":
        notes.append(
            "the ingest job needs an LLM backend: set backend (anthropic, claude-cli or openai) in "
            f"{where.wiki / 'settings.yaml'}; until then each run exits 1."
        )
    if "sync" in jobs and not _has_remote(where.wiki):
        notes.append(
            f"the sync job needs {where.wiki} to be a git repository with a remote (see the "
            "README's Sync); until then each run exits 1."
        )
    return notes


def _has_remote(wiki: Path) -> bool:
    """Whether ``wiki`` is a git repository with a remote (``git remote`` names one)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(wiki), "remote"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and bool(out.stdout.strip())


def _remove_legacy(
    platform: str, where: Layout, folder: Path, tool: str, commands: list[list[str]]
) -> list[str]:
    """Unload and remove the unnamed jobs of an earlier version (``com.llm-wiki.<job>``,
    ``llm-wiki-<job>.*``) that ran this wiki; those of another wiki stay."""
    removed: list[str] = []
    for job in STANDARD:
        if platform == "launchd":
            path = folder / f"{LABEL}.{job}.plist"
            try:
                data = plistlib.loads(path.read_bytes())
            except (OSError, plistlib.InvalidFileException, ValueError):
                continue
            if data.get("EnvironmentVariables", {}).get("LLM_WIKI_DIR") != str(where.wiki):
                continue
            argv = [tool, "bootout", f"gui/{os.getuid()}/{LABEL}.{job}"]
            _run(argv, check=False)
            commands.append(argv)
            paths = [path]
        else:
            service, timer = folder / f"{UNIT}-{job}.service", folder / f"{UNIT}-{job}.timer"
            try:
                text = service.read_text(encoding="utf-8")
            except OSError:
                continue
            if f"Environment={_systemd_env('LLM_WIKI_DIR=' + str(where.wiki))}\n" not in text:
                continue
            argv = [tool, "--user", "disable", "--now", timer.name]
            _run(argv, check=False)
            commands.append(argv)
            paths = [service, timer]
        for old in paths:
            if old.exists():
                old.unlink()
                removed.append(str(old))
    return removed


def ensure_env_file(path: Path) -> tuple[bool, list[str]]:
    """Create the env file (mode 0600, nothing set) if missing; say so if it is too open."""

    if path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            return False, [
                f"{path} is readable by others (mode {mode:o}); it may hold an API key: "
                f"chmod 600 {path}"
            ]
        return False, []
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, render_template(ENV_TEMPLATE), mode=0o600)
    return True, []


@dataclass(frozen=True)
class UninstallResult:
    platform: str
    dest: str
    removed: tuple[str, ...]
    commands: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "dest": self.dest,
            "removed": list(self.removed),
            "commands": list(self.commands),
        }


def uninstall(
    platform: str, name: str, *, dest: Path | None = None, jobs: tuple[str, ...] = ()
) -> UninstallResult:
    """Unload and remove this wiki's jobs (only ``jobs``, when given); the env file and the
    logs stay, and so do other wikis' jobs."""
    check_platform(platform)
    folder = dest or default_dest(platform)
    names = jobs or tuple(j.name for j in JOBS)
    present = [p for job in names for p in _paths(platform, name, job, folder) if p.exists()]
    commands: list[list[str]] = []
    if present:
        tool = _command(platform)
        if platform == "launchd":
            domain = f"gui/{os.getuid()}"
            for path in present:
                argv = [tool, "bootout", f"{domain}/{path.name.removesuffix('.plist')}"]
                _run(argv, check=False)  # not loaded is fine
                commands.append(argv)
        else:
            timers = [p.name for p in present if p.suffix == ".timer"]
            if timers:
                argv = [tool, "--user", "disable", "--now", *timers]
                _run(argv, check=False)
                commands.append(argv)
        for path in present:
            path.unlink()
        if platform == "systemd":
            argv = [tool, "--user", "daemon-reload"]
            _run(argv)
            commands.append(argv)
    return UninstallResult(
        platform,
        str(folder),
        tuple(str(p) for p in present),
        tuple(" ".join(c) for c in commands),
    )


def _paths(platform: str, name: str, job: str, folder: Path) -> list[Path]:
    if platform == "launchd":
        return [folder / f"{job_label(name, job)}.plist"]
    return [folder / f"{job_unit(name, job)}.{kind}" for kind in ("service", "timer")]


# --------------------------------------------------------------------------- status


@dataclass(frozen=True)
class JobStatus:
    job: str
    when: str
    installed: bool
    current: bool  # the installed files are what `render` gives now
    loaded: bool | None  # None: could not ask the manager
    last_run: str | None  # time of its last "done" log line
    last_exit: int | None
    last_error: str | None  # the last failure line of its last run, when that run failed
    log: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StatusResult:
    platform: str
    dest: str
    name: str  # the wiki's part of the job names
    env_file: str
    env_ok: bool
    jobs: tuple[JobStatus, ...]
    lingering: bool | None = None  # systemd: loginctl's Linger (None: not asked, or unknown)
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Every job installed as `render` gives it, loaded, its last run exit 0; the env file
        private (what `schedule status` exits 1 on)."""
        return self.env_ok and all(
            j.current and j.loaded is not False and (j.last_exit or 0) == 0 for j in self.jobs
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "platform": self.platform,
            "dest": self.dest,
            "name": self.name,
            "env_file": self.env_file,
            "env_ok": self.env_ok,
            "jobs": [j.to_dict() for j in self.jobs],
            "lingering": self.lingering,
            "notes": list(self.notes),
        }


_DONE_RE = re.compile(r"^(\S+) wiki-\S+ done \(exit (\d+)\)$")
_ERROR_RE = re.compile(r"^\S+ wiki-\S+ ERROR: (.*)$")
_START_RE = re.compile(r"^\S+ wiki-\S+ start: ")
LINGER_NOTE = (
    "lingering is off for this user: systemd stops user timers at logout, so the jobs run only "
    "while you are logged in; `loginctl enable-linger` keeps them running."
)


def status(
    platform: str, where: Layout, *, dest: Path | None = None, jobs: tuple[str, ...] = ()
) -> StatusResult:
    """For each job of this wiki (the standard ones, the optional ones installed or named in
    ``jobs``): installed, current, loaded, and how its last run ended (from its log)."""
    check_platform(platform)
    folder = dest or default_dest(platform)
    keep = set(STANDARD) | set(jobs) | set(installed_jobs(platform, where, folder))
    chosen = tuple(j.name for j in JOBS if j.name in keep)
    rendered = render(platform, where, chosen)
    notes: list[str] = []
    try:
        tool: str | None = _command(platform)
    except WikiError as exc:
        tool = None
        notes.append(exc.message)
    out = []
    for job in JOBS:
        if job.name not in chosen:
            continue
        mine = [r for r in rendered if r.job == job.name]
        paths = [folder / r.name for r in mine]
        installed = all(p.exists() for p in paths)
        current = installed and all(
            p.read_text(encoding="utf-8") == r.text for p, r in zip(paths, mine, strict=True)
        )
        loaded = _loaded(platform, tool, where, job) if installed and tool else None
        log = where.log_dir / f"{job.name}.log"
        last_run, last_exit, last_error = _last_run(log)
        out.append(
            JobStatus(
                job.name,
                job.when(platform),
                installed,
                current,
                loaded,
                last_run,
                last_exit,
                last_error,
                str(log),
            )
        )
    env_ok = where.env_file.exists() and not stat.S_IMODE(where.env_file.stat().st_mode) & 0o077
    if not where.env_file.exists():
        notes.append(f"no env file at {where.env_file}; `llm-wiki schedule install` creates it.")
    elif not env_ok:
        notes.append(f"{where.env_file} is readable by others: chmod 600 {where.env_file}")
    linger = lingering() if platform == "systemd" else None
    if linger is False:
        notes.append(LINGER_NOTE)
    return StatusResult(
        platform,
        str(folder),
        where.name,
        str(where.env_file),
        env_ok,
        tuple(out),
        linger,
        tuple(notes),
    )


def lingering() -> bool | None:
    """Whether systemd keeps this user's timers running after logout (``loginctl show-user``);
    None when that cannot be told (no loginctl, no user session known)."""
    tool = shutil.which("loginctl")
    if tool is None:
        return None
    try:
        proc = subprocess.run(
            [tool, "show-user", str(os.getuid()), "--property=Linger"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = proc.stdout.strip().removeprefix("Linger=")
    if proc.returncode != 0 or value not in ("yes", "no"):
        return None
    return value == "yes"


def _loaded(platform: str, tool: str, where: Layout, job: Job) -> bool:
    if platform == "launchd":
        argv = [tool, "print", f"gui/{os.getuid()}/{where.label(job.name)}"]
    else:
        argv = [tool, "--user", "is-enabled", "--quiet", f"{where.unit(job.name)}.timer"]
    return _run(argv, check=False).returncode == 0


def _last_run(log: Path) -> tuple[str | None, int | None, str | None]:
    """(time, exit code, failure line) of the last run in ``log``, or in the log rotated
    before it when this one holds no finished run yet."""
    for path in (log, log.with_name(log.name + ".1")):
        found = _last_run_in(path)
        if found[0] is not None:
            return found
    return None, None, None


def _last_run_in(log: Path) -> tuple[str | None, int | None, str | None]:
    try:
        with open(log, "rb") as fh:
            fh.seek(max(0, log.stat().st_size - 65536))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return None, None, None
    for i in range(len(lines) - 1, -1, -1):
        done = _DONE_RE.match(lines[i])
        if done:
            code = int(done.group(2))
            error = None
            if code:
                start = next((j for j in range(i - 1, -1, -1) if _START_RE.match(lines[j])), -1)
                run = lines[start + 1 : i]
                errors = [m.group(1) for ln in run if (m := _ERROR_RE.match(ln))]
                error = (
                    errors[-1] if errors else next((ln for ln in reversed(run) if ln.strip()), None)
                )
            return done.group(1), code, error
    return None, None, None


# --------------------------------------------------------------------------- the managers


def _command(platform: str) -> str:
    """``launchctl`` / ``systemctl``: ``LLM_WIKI_LAUNCHCTL`` / ``LLM_WIKI_SYSTEMCTL``, else PATH."""
    name = os.environ.get(ENV_COMMAND[platform]) or COMMAND[platform]
    found = shutil.which(name)
    if found is None:
        other = "systemd" if platform == "launchd" else "launchd"
        raise WikiError(
            f"`{name}` not found: this machine does not run {platform}. Use --platform {other}, "
            "or `llm-wiki schedule render --out DIR` and install the files yourself."
        )
    return found


def _run(argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WikiError(f"`{' '.join(argv)}` could not run: {exc}") from None
    if check and proc.returncode != 0:
        detail = " ".join((proc.stderr or proc.stdout).split())[:300] or "no output"
        raise WikiError(
            f"`{' '.join(argv)}` failed (exit {proc.returncode}): {detail}; fix that and run "
            "`llm-wiki schedule install` again."
        )
    return proc
