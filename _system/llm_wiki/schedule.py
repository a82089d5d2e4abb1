"""Schedules: the jobs that keep a wiki current unattended, as launchd agents (macOS) or systemd
user timers (Linux), rendered from the jinja2 templates in ``templates/schedule/``.

The jobs are the POSIX sh scripts in ``_system/bin/`` (see :data:`JOBS`): consolidate nightly
(02:30), brief daily (06:45), archive monthly (``wiki-archive --monthly``), lint weekly (Monday
07:00).

Catch-up: launchd runs a calendar job missed while the Mac slept once it wakes, but not one
missed while it was off; systemd's ``Persistent=true`` runs a missed timer at the next boot. The
archive job runs at most once per calendar month (``wiki-archive --monthly``), so launchd calls it
daily: the first run of a month archives, even when the machine was off on the 1st.

Every job names absolute paths only (``/bin/sh``, the job script, the Python in
``LLM_WIKI_PYTHON``), logs to ``<wiki>/.llm-wiki/logs/<job>.log``, and takes everything else —
the API key, PATH additions such as where ``claude`` lives, the reader under walls — from ONE env
file (``~/.config/llm-wiki/env``, mode 0600), never from the plist or unit. ``install`` creates
that file (0600, everything commented out) when it is missing.

The target folder (``--dest``) and the ``launchctl`` / ``systemctl`` commands
(``LLM_WIKI_LAUNCHCTL`` / ``LLM_WIKI_SYSTEMCTL``, else found on PATH) can be replaced, so tests
never touch the real user's agents or units.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.files import atomic_write
from llm_wiki.prompts import render_template

PLATFORMS = ("launchd", "systemd")
LABEL = "com.llm-wiki"  # launchd labels: com.llm-wiki.<job>
UNIT = "llm-wiki"  # systemd units: llm-wiki-<job>.service / .timer
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
)


@dataclass(frozen=True)
class Layout:
    """Where everything a job needs lives: all absolute paths."""

    wiki: Path
    python: Path
    bin_dir: Path
    env_file: Path

    @property
    def log_dir(self) -> Path:
        return self.wiki / ".llm-wiki" / LOG_DIR

    def to_dict(self) -> dict[str, str]:
        return {
            "wiki": str(self.wiki),
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
    """``_system/bin`` next to the package (a checkout, or an editable install)."""
    return Path(__file__).resolve().parent.parent / "bin"


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
            f"no job scripts ({', '.join(missing)}) in {bins}; run from a checkout of llm-wiki "
            "(pip install -e .) or pass --bin with its _system/bin folder."
        )
    if not (py.is_file() and os.access(py, os.X_OK)):
        raise InvalidInput(f"{py} is not an executable Python; pass --python with one.")
    return Layout(wiki=Path(wiki_root).absolute(), python=py, bin_dir=bins, env_file=env)


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


def render(platform: str, where: Layout) -> list[Rendered]:
    """The files for ``platform``: one plist per job, or a service and a timer per job."""

    check_platform(platform)
    out: list[Rendered] = []
    for job in JOBS:
        context: dict[str, Any] = {
            "job": job,
            "when": job.when(platform),
            "layout": where,
            "script": str(where.bin_dir / job.script),
            "log": str(where.log_dir / f"{job.name}.log"),
        }
        if platform == "launchd":
            text = render_template(
                "schedule/launchd.plist.j2", label=f"{LABEL}.{job.name}", **context
            )
            out.append(Rendered(f"{LABEL}.{job.name}.plist", text, job.name))
        else:
            context.update(word=_systemd_word, env=_systemd_env, spec=_systemd_spec)
            for kind in ("service", "timer"):
                text = render_template(f"schedule/systemd.{kind}.j2", unit=UNIT, **context)
                out.append(Rendered(f"{UNIT}-{job.name}.{kind}", text, job.name))
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
    files: tuple[str, ...]
    env_file: str
    env_created: bool
    commands: tuple[str, ...]
    notes: tuple[str, ...] = ()
    layout: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "dest": self.dest,
            "files": list(self.files),
            "env_file": self.env_file,
            "env_created": self.env_created,
            "commands": list(self.commands),
            "notes": list(self.notes),
            "layout": self.layout,
        }


def install(platform: str, where: Layout, *, dest: Path | None = None) -> InstallResult:
    """Write the files into ``dest`` and load them (launchctl bootstrap / systemctl enable)."""
    check_platform(platform)
    folder = dest or default_dest(platform)
    files = render(platform, where)
    tool = _command(platform)  # before writing anything: fail early where there is no manager
    created, notes = ensure_env_file(where.env_file)
    where.log_dir.mkdir(parents=True, exist_ok=True)
    paths = write_rendered(files, folder)
    commands: list[list[str]] = []
    if platform == "launchd":
        domain = f"gui/{os.getuid()}"
        for item, path in zip(files, paths, strict=True):
            label = item.name.removesuffix(".plist")
            _run([tool, "bootout", f"{domain}/{label}"], check=False)  # a previous version
            commands.append([tool, "bootstrap", domain, str(path)])
            _run(commands[-1])
    else:
        timers = [f.name for f in files if f.name.endswith(".timer")]
        commands.append([tool, "--user", "daemon-reload"])
        commands.append([tool, "--user", "enable", "--now", *timers])
        for argv in commands:
            _run(argv)
    return InstallResult(
        platform=platform,
        dest=str(folder),
        files=tuple(str(p) for p in paths),
        env_file=str(where.env_file),
        env_created=created,
        commands=tuple(" ".join(c) for c in commands),
        notes=tuple(notes),
        layout=where.to_dict(),
    )


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


def uninstall(platform: str, *, dest: Path | None = None) -> UninstallResult:
    """Unload and remove the installed files (the env file and the logs stay)."""
    check_platform(platform)
    folder = dest or default_dest(platform)
    present = [p for p in _installed_paths(platform, folder) if p.exists()]
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


def _installed_paths(platform: str, folder: Path) -> list[Path]:
    if platform == "launchd":
        return [folder / f"{LABEL}.{job.name}.plist" for job in JOBS]
    return [folder / f"{UNIT}-{job.name}.{kind}" for job in JOBS for kind in ("service", "timer")]


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
    last_error: str | None  # its last ERROR log line, when the last run failed
    log: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StatusResult:
    platform: str
    dest: str
    env_file: str
    env_ok: bool
    jobs: tuple[JobStatus, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "dest": self.dest,
            "env_file": self.env_file,
            "env_ok": self.env_ok,
            "jobs": [j.to_dict() for j in self.jobs],
            "notes": list(self.notes),
        }


_DONE_RE = re.compile(r"^(\S+) wiki-\S+ done \(exit (\d+)\)$")
_ERROR_RE = re.compile(r"^\S+ wiki-\S+ ERROR: (.*)$")


def status(platform: str, where: Layout, *, dest: Path | None = None) -> StatusResult:
    """For each job: installed, current, loaded, and how its last run ended (from its log)."""
    check_platform(platform)
    folder = dest or default_dest(platform)
    rendered = render(platform, where)
    notes: list[str] = []
    try:
        tool: str | None = _command(platform)
    except WikiError as exc:
        tool = None
        notes.append(exc.message)
    jobs = []
    for job in JOBS:
        mine = [r for r in rendered if r.job == job.name]
        paths = [folder / r.name for r in mine]
        installed = all(p.exists() for p in paths)
        current = installed and all(
            p.read_text(encoding="utf-8") == r.text for p, r in zip(paths, mine, strict=True)
        )
        loaded = _loaded(platform, tool, job) if installed and tool else None
        log = where.log_dir / f"{job.name}.log"
        last_run, last_exit, last_error = _last_run(log)
        jobs.append(
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
    return StatusResult(
        platform, str(folder), str(where.env_file), env_ok, tuple(jobs), tuple(notes)
    )


def _loaded(platform: str, tool: str, job: Job) -> bool:
    if platform == "launchd":
        argv = [tool, "print", f"gui/{os.getuid()}/{LABEL}.{job.name}"]
    else:
        argv = [tool, "--user", "is-enabled", "--quiet", f"{UNIT}-{job.name}.timer"]
    return _run(argv, check=False).returncode == 0


def _last_run(log: Path) -> tuple[str | None, int | None, str | None]:
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
                errors = [m.group(1) for ln in lines[:i] if (m := _ERROR_RE.match(ln))]
                error = errors[-1] if errors else None
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
