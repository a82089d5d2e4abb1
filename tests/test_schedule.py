"""`llm-wiki schedule`: launchd plists and systemd units for the jobs, installed with fakes."""

from __future__ import annotations

import os
import plistlib
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from llm_wiki import schedule

REAL_PATH = os.environ.get("PATH", "")  # before a test points PATH at fake managers

BIN = REPO / "_system" / "bin"
EXAMPLE = schedule.Layout(
    wiki=Path("/Users/you/llm-wiki"),
    python=Path("/Users/you/src/llm-wiki/.venv/bin/python"),
    bin_dir=Path("/Users/you/src/llm-wiki/_system/bin"),
    env_file=Path("/Users/you/.config/llm-wiki/env"),
)
NAME = EXAMPLE.name  # the example wiki's part of job names: a hash of /Users/you/llm-wiki
RANGES = {"Minute": (0, 59), "Hour": (0, 23), "Day": (1, 31), "Weekday": (0, 7), "Month": (1, 12)}
WANT = {  # job -> (calendar intervals, extra arguments)
    "consolidate": ([{"Hour": 2, "Minute": 30}], []),
    "brief": ([{"Hour": 6, "Minute": 45}], []),
    "archive": ([{"Hour": 3, "Minute": 30}], ["--monthly"]),
    "lint": ([{"Weekday": 1, "Hour": 7, "Minute": 0}], []),
}
OPTIONAL = {"ingest": 300, "sync": [{"Minute": 17}]}  # StartInterval, or calendar intervals


def units(name, jobs=WANT):
    return sorted(f"llm-wiki-{name}-{j}.{k}" for j in jobs for k in ("service", "timer"))


def plists(name, jobs=WANT):
    return sorted(f"com.llm-wiki.{name}.{j}.plist" for j in jobs)


def real_layout(tmp_path, wiki_path) -> schedule.Layout:
    env = tmp_path / "home" / ".config" / "llm-wiki" / "env"
    return schedule.layout(wiki_path, python=sys.executable, bin_dir=str(BIN), env_file=str(env))


def test_plists_round_trip_with_absolute_paths_and_valid_calendars(tmp_path, wiki_path):
    where = real_layout(tmp_path, wiki_path)
    assert sorted(f.name for f in schedule.render("launchd", where)) == plists(where.name)
    files = schedule.render(
        "launchd", where, ("consolidate", "brief", "archive", "lint", "ingest", "sync")
    )
    assert sorted(f.name for f in files) == plists(where.name, [*WANT, *OPTIONAL])
    assert where.name == schedule.path_hash(wiki_path) and len(where.name) == 8
    for item in files:
        data = plistlib.loads(item.text.encode())
        assert plistlib.loads(plistlib.dumps(data)) == data
        job = item.job
        when = "StartInterval" if job == "ingest" else "StartCalendarInterval"
        assert set(data) == {
            "Label", "ProgramArguments", "EnvironmentVariables", "WorkingDirectory",
            when, "StandardOutPath", "StandardErrorPath", "ProcessType", "RunAtLoad",
        }  # fmt: skip
        assert data["Label"] == f"com.llm-wiki.{where.name}.{job}" and data["RunAtLoad"] is False
        shell, script, *args = data["ProgramArguments"]
        assert shell == "/bin/sh" and script == str(BIN / f"wiki-{job}") and Path(script).is_file()
        assert args == (WANT[job][1] if job in WANT else [])
        env = data["EnvironmentVariables"]
        assert set(env) == {"LLM_WIKI_DIR", "LLM_WIKI_PYTHON", "LLM_WIKI_ENV_FILE", "LLM_WIKI_LOG"}
        assert all(Path(v).is_absolute() for v in env.values())
        assert env["LLM_WIKI_PYTHON"] == sys.executable and env["LLM_WIKI_DIR"] == str(wiki_path)
        if job == "ingest":
            assert data["StartInterval"] == OPTIONAL["ingest"]
            continue
        intervals = data["StartCalendarInterval"]
        intervals = intervals if isinstance(intervals, list) else [intervals]
        assert intervals == (WANT[job][0] if job in WANT else OPTIONAL[job])
        for interval in intervals:
            for key, value in interval.items():
                low, high = RANGES[key]
                assert isinstance(value, int) and low <= value <= high, (job, key, value)
        log = str(wiki_path / ".llm-wiki" / "logs" / f"{job}.log")
        assert data["StandardOutPath"] == data["StandardErrorPath"] == env["LLM_WIKI_LOG"] == log


def test_paths_are_escaped(tmp_path):
    odd = schedule.Layout(
        Path("/tmp/a & <b> %h $HOME"), Path("/usr/bin/python3"), BIN, Path("/tmp/e nv")
    )
    for item in schedule.render("launchd", odd):
        data = plistlib.loads(item.text.encode())
        assert data["WorkingDirectory"] == "/tmp/a & <b> %h $HOME"
    service = next(f for f in schedule.render("systemd", odd) if f.name.endswith(".service"))
    assert 'Environment="LLM_WIKI_DIR=/tmp/a & <b> %%h $HOME"' in service.text
    assert "WorkingDirectory=/tmp/a & <b> %%h $HOME" in service.text


def test_the_repo_launchd_folder_is_what_the_templates_render():
    every = tuple(j.name for j in schedule.JOBS)  # the optional jobs too, to show them
    rendered = {f.name: f.text for f in schedule.render("launchd", EXAMPLE, every)}
    on_disk = {p.name: p.read_text() for p in (REPO / "launchd").glob("*.plist")}
    assert on_disk == rendered, (
        "launchd/ is stale: remove its plists and regenerate them with schedule.write_rendered("
        "schedule.render('launchd', EXAMPLE, every), Path('launchd')) (see tests/test_schedule.py)"
    )
    assert "/Users/you/" in "".join(on_disk.values())


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
@pytest.mark.parametrize("name", ["wiki", "my wiki & 100%"])
def test_units_pass_systemd_analyze_verify(tmp_path, name):
    from llm_wiki.create import init_wiki

    wiki = tmp_path / name
    init_wiki(wiki)
    env_file = tmp_path / "env"
    env_file.write_text("")
    where = schedule.layout(wiki, python=sys.executable, bin_dir=str(BIN), env_file=str(env_file))
    where.log_dir.mkdir(parents=True)
    folder = tmp_path / "units"
    every = tuple(j.name for j in schedule.JOBS)
    paths = schedule.write_rendered(schedule.render("systemd", where, every), folder)
    assert sorted(p.name for p in paths) == units(where.name, [*WANT, *OPTIONAL])
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    proc = subprocess.run(
        ["systemd-analyze", "verify", "--user", *map(str, paths)],
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    timer = (folder / f"llm-wiki-{where.name}-archive.timer").read_text()
    assert "OnCalendar=*-*-01 03:30:00\nPersistent=true\n" in timer
    for path in paths:
        if path.suffix == ".timer":
            assert "Persistent=true" in path.read_text()


def test_unit_contents(tmp_path, wiki_path):
    where = real_layout(tmp_path, wiki_path)
    files = {
        f.name.replace(f"-{where.name}-", "-"): f.text
        for f in schedule.render("systemd", where, ("lint", "archive", "ingest"))
    }
    service = files["llm-wiki-lint.service"]
    assert f"ExecStart=/bin/sh {BIN}/wiki-lint\n" in service
    assert f"Environment=LLM_WIKI_PYTHON={sys.executable}\n" in service
    assert f"StandardError=append:{wiki_path}/.llm-wiki/logs/lint.log\n" in service
    assert f"Environment=LLM_WIKI_LOG={wiki_path}/.llm-wiki/logs/lint.log\n" in service
    assert f"Description=llm-wiki lint ({wiki_path}): " in service
    assert "OnCalendar=Mon *-*-* 07:00:00" in files["llm-wiki-lint.timer"]
    assert "wiki-archive --monthly\n" in files["llm-wiki-archive.service"]
    assert "OnCalendar=*:0/5\n" in files["llm-wiki-ingest.timer"]


# --------------------------------------------------------------------------- install, with fakes

FAKE = """#!/bin/sh
echo "$0 $*" >> {log}
case "$*" in
  *print*|*is-enabled*) [ -e {loaded} ] ;;
  *) exit 0 ;;
esac
"""


def fake_manager(tmp_path, name):
    folder = tmp_path / "fakebin"
    folder.mkdir(exist_ok=True)
    calls = tmp_path / f"{name}.calls"
    loaded = tmp_path / f"{name}.loaded"
    script = folder / name
    script.write_text(FAKE.format(log=calls, loaded=loaded))
    script.chmod(0o755)
    return folder, calls, loaded


def path_with(folder):
    return f"{folder}:{os.environ.get('PATH', '/usr/bin:/bin')}"


@pytest.fixture
def no_real_managers(monkeypatch):
    """Never reach the machine's own systemctl or launchctl: only fakes on a bare PATH."""
    monkeypatch.setenv("PATH", "/nonexistent")


def test_install_status_uninstall_systemd(cli, tmp_path, wiki_path, no_real_managers, monkeypatch):
    fakes, calls, loaded = fake_manager(tmp_path, "systemctl")
    monkeypatch.setenv("PATH", str(fakes))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")  # must never be written out
    dest = tmp_path / "units"
    args = ["--platform", "systemd", "--dest", dest, "--bin", BIN, "--python", sys.executable]
    out = cli("schedule", "install", *args).stdout
    env_file = Path(os.environ["HOME"]) / ".config" / "llm-wiki" / "env"
    assert f"Created {env_file} (mode 0600)" in out
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert "sk-ant" not in env_file.read_text().replace("sk-ant-...", "")
    name = schedule.path_hash(wiki_path)
    assert sorted(p.name for p in dest.iterdir()) == units(name)
    assert not any("sk-ant-secret" in p.read_text() for p in dest.iterdir())
    assert (wiki_path / ".llm-wiki" / "logs").is_dir()
    ran = calls.read_text().splitlines()
    assert ran[0].endswith("systemctl --user daemon-reload")
    assert ran[1].endswith(
        f"systemctl --user enable --now llm-wiki-{name}-consolidate.timer "
        f"llm-wiki-{name}-brief.timer llm-wiki-{name}-archive.timer llm-wiki-{name}-lint.timer"
    )
    loaded.touch()
    result = cli.json("schedule", "status", *args)
    assert [(j["job"], j["installed"], j["current"], j["loaded"]) for j in result["jobs"]] == [
        (j, True, True, True) for j in WANT
    ]
    assert result["env_ok"] is True and result["ok"] is True
    log = wiki_path / ".llm-wiki" / "logs" / "consolidate.log"
    log.write_text(
        "2026-05-10T02:30:00Z wiki-consolidate start: consolidate in /w\n"
        "2026-05-10T02:30:01Z wiki-consolidate ERROR: No API key for the anthropic backend\n"
        "2026-05-10T02:30:01Z wiki-consolidate done (exit 1)\n"
    )
    text = cli("schedule", "status", *args, code=1).stdout
    assert (
        "consolidate  installed; nightly at 02:30; last run 2026-05-10T02:30:01Z exit 1: No API key"
        in text
    )
    assert cli.json("schedule", "status", *args, code=1)["ok"] is False  # for agents: no exit code
    (dest / f"llm-wiki-{name}-lint.timer").write_text("edited\n")
    assert (
        "installed, out of date (install again)" in cli("schedule", "status", *args, code=1).stdout
    )
    out = cli("schedule", "uninstall", "--platform", "systemd", "--dest", dest).stdout
    assert out.count("Removed ") == 8 and list(dest.iterdir()) == []
    assert f"--user disable --now llm-wiki-{name}-consolidate.timer" in calls.read_text()
    assert env_file.exists()  # the env file stays
    again = cli("schedule", "uninstall", "--platform", "systemd", "--dest", dest).stdout
    assert again.startswith("No llm-wiki jobs of this wiki installed")


def test_install_launchd_with_a_fake_launchctl(
    cli, tmp_path, wiki_path, no_real_managers, monkeypatch
):
    fakes, calls, loaded = fake_manager(tmp_path, "fake-launchctl")
    monkeypatch.setenv("LLM_WIKI_LAUNCHCTL", str(fakes / "fake-launchctl"))
    dest = tmp_path / "LaunchAgents"
    args = ["--platform", "launchd", "--dest", dest, "--bin", BIN, "--python", sys.executable]
    cli("schedule", "install", *args)
    name = schedule.path_hash(wiki_path)
    assert sorted(p.name for p in dest.iterdir()) == plists(name)
    ran = calls.read_text().splitlines()
    uid = os.getuid()
    assert f"bootout gui/{uid}/com.llm-wiki.{name}.consolidate" in ran[0]
    assert ran[1].endswith(f"bootstrap gui/{uid} {dest}/com.llm-wiki.{name}.consolidate.plist")
    status = cli.json("schedule", "status", *args, code=1)
    assert all(j["installed"] and j["loaded"] is False for j in status["jobs"])
    assert f"print gui/{uid}/com.llm-wiki.{name}.lint" in calls.read_text()
    cli("schedule", "uninstall", "--platform", "launchd", "--dest", dest)
    assert list(dest.iterdir()) == []


def test_install_without_the_manager_fails_and_writes_nothing(cli, tmp_path, no_real_managers):
    dest = tmp_path / "units"
    result = cli("schedule", "install", "--platform", "systemd", "--dest", dest, code=1)
    assert "`systemctl` not found" in result.stderr and "render --out" in result.stderr
    assert not dest.exists()


def result_name(wiki_path):
    return schedule.path_hash(wiki_path)


def test_an_existing_env_file_is_kept_and_a_loose_one_is_flagged(
    cli, tmp_path, wiki_path, no_real_managers, monkeypatch
):
    fakes, _, _ = fake_manager(tmp_path, "systemctl")
    monkeypatch.setenv("PATH", str(fakes))
    env_file = tmp_path / "env"
    env_file.write_text("ANTHROPIC_API_KEY=sk-ant-mine\n")
    env_file.chmod(0o644)
    args = ["--platform", "systemd", "--dest", tmp_path / "u", "--env-file", env_file]
    result = cli("schedule", "install", *args)
    assert "chmod 600" in result.stderr and "Created" not in result.stdout
    assert env_file.read_text() == "ANTHROPIC_API_KEY=sk-ant-mine\n"
    service = (tmp_path / "u" / f"llm-wiki-{result_name(wiki_path)}-brief.service").read_text()
    assert f"Environment=LLM_WIKI_ENV_FILE={env_file}\n" in service and "sk-ant" not in service


def test_render_prints_or_writes(cli, tmp_path, wiki_path):
    out = cli("schedule", "render", "--platform", "systemd").stdout
    assert out.count("# ---- llm-wiki-") == 8 and "[Timer]" in out
    target = tmp_path / "agents"
    out = cli("schedule", "render", "--platform", "launchd", "--out", target).stdout
    assert out.count("Wrote ") == 4 and len(list(target.glob("*.plist"))) == 4
    bad = cli("schedule", "render", "--bin", tmp_path, code=2)
    assert "no job scripts" in bad.stderr


# --------------------------------------------------------------------------- one set per wiki


def systemd_args(tmp_path, dest):
    return ["--platform", "systemd", "--dest", dest, "--bin", BIN, "--python", sys.executable,
            "--env-file", tmp_path / "env"]  # fmt: skip


def test_two_wikis_on_one_account_keep_their_own_jobs(cli, tmp_path, no_real_managers, monkeypatch):
    from conftest import Cli
    from llm_wiki.create import init_wiki

    fakes, calls, loaded = fake_manager(tmp_path, "systemctl")
    monkeypatch.setenv("PATH", str(fakes))
    first, second = tmp_path / "work", tmp_path / "home-wiki"
    init_wiki(first)
    init_wiki(second)
    settings = second / "settings.yaml"
    settings.write_text(settings.read_text() + "schedule:\n  name: home\n")
    dest = tmp_path / "units"
    Cli(first)("schedule", "install", *systemd_args(tmp_path, dest))
    Cli(second)("schedule", "install", *systemd_args(tmp_path, dest))
    mine = schedule.path_hash(first)
    assert sorted(p.name for p in dest.iterdir()) == sorted(units(mine) + units("home"))
    service = (dest / "llm-wiki-home-brief.service").read_text()
    assert f"Environment=LLM_WIKI_DIR={second}\n" in service
    loaded.touch()
    status = Cli(second).json("schedule", "status", *systemd_args(tmp_path, dest))
    assert status["name"] == "home" and all(j["installed"] and j["current"] for j in status["jobs"])
    Cli(first)("schedule", "uninstall", "--platform", "systemd", "--dest", dest)
    assert sorted(p.name for p in dest.iterdir()) == units("home")  # the other wiki's stay
    bad = tmp_path / "bad"
    init_wiki(bad)
    (bad / "settings.yaml").write_text("schedule:\n  name: Not A Name\n")
    refused = Cli(bad)("schedule", "install", *systemd_args(tmp_path, dest), code=2)
    assert "schedule.name in" in refused.stderr and "lowercase letters" in refused.stderr


def test_the_ingest_and_sync_jobs_are_added_and_stay(
    cli, tmp_path, wiki_path, no_real_managers, monkeypatch
):
    fakes, calls, loaded = fake_manager(tmp_path, "systemctl")
    monkeypatch.setenv("PATH", str(fakes))
    dest = tmp_path / "units"
    name = schedule.path_hash(wiki_path)
    result = cli("schedule", "install", "--jobs", "ingest,sync", *systemd_args(tmp_path, dest))
    assert sorted(p.name for p in dest.iterdir()) == units(name, [*WANT, *OPTIONAL])
    assert (wiki_path / "inbox").is_dir()  # the ingest job's default inbox
    assert "the ingest job needs an LLM backend" in result.stderr  # backend: offline
    assert "the sync job needs" in result.stderr and "git repository" in result.stderr
    git = shutil.which("git", path=REAL_PATH)
    subprocess.run([git, "init", "-q", str(wiki_path)], check=True)  # a repository, no remote
    monkeypatch.setenv("PATH", f"{fakes}{os.pathsep}{os.path.dirname(git)}")
    again = cli("schedule", "install", "--jobs", "ingest,sync", *systemd_args(tmp_path, dest))
    assert "the sync job needs" in again.stderr and "with a remote" in again.stderr
    timer = (dest / f"llm-wiki-{name}-ingest.timer").read_text()
    assert "OnCalendar=*:0/5\n" in timer
    assert "OnCalendar=*-*-* *:17:00\n" in (dest / f"llm-wiki-{name}-sync.timer").read_text()
    assert f"{BIN}/wiki-sync\n" in (dest / f"llm-wiki-{name}-sync.service").read_text()
    again = cli.json("schedule", "install", *systemd_args(tmp_path, dest))  # no --jobs
    assert again["jobs"] == [*WANT, *OPTIONAL]  # installed once, kept
    cli("schedule", "uninstall", "--jobs", "sync", "--platform", "systemd", "--dest", dest)
    assert sorted(p.name for p in dest.iterdir()) == units(name, [*WANT, "ingest"])
    loaded.touch()
    listed = [
        j["job"]
        for j in cli.json("schedule", "status", *systemd_args(tmp_path, dest), code=None)["jobs"]
    ]
    assert listed == [*WANT, "ingest"]
    bad = cli(
        "schedule", "install", "--jobs", "ingest,backup", *systemd_args(tmp_path, dest), code=2
    )
    assert "no job 'backup'; --jobs takes ingest, sync" in bad.stderr


def test_an_earlier_versions_unnamed_jobs_of_this_wiki_are_replaced(
    cli, tmp_path, wiki_path, no_real_managers, monkeypatch
):
    fakes, calls, _ = fake_manager(tmp_path, "systemctl")
    monkeypatch.setenv("PATH", str(fakes))
    dest = tmp_path / "units"
    dest.mkdir()
    for job in WANT:  # as the version before named them: llm-wiki-<job>.*
        (dest / f"llm-wiki-{job}.service").write_text(
            f"[Service]\nExecStart=/bin/sh wiki-{job}\nEnvironment=LLM_WIKI_DIR={wiki_path}\n"
        )
        (dest / f"llm-wiki-{job}.timer").write_text("[Timer]\nOnCalendar=daily\n")
    other = "[Service]\nEnvironment=LLM_WIKI_DIR=/srv/another-wiki\n"
    (dest / "llm-wiki-lint.service").write_text(other)  # another wiki's: it stays
    out = cli("schedule", "install", *systemd_args(tmp_path, dest)).stdout
    assert out.count("(an earlier version's job for this wiki)") == 6
    assert "--user disable --now llm-wiki-consolidate.timer" in calls.read_text()
    left = sorted(p.name for p in dest.iterdir() if p.name.count("-") == 2)
    assert left == ["llm-wiki-lint.service", "llm-wiki-lint.timer"]


def test_lingering_off_is_warned_about_on_linux(
    cli, tmp_path, wiki_path, no_real_managers, monkeypatch
):
    fakes, _, loaded = fake_manager(tmp_path, "systemctl")
    linger = fakes / "loginctl"
    monkeypatch.setenv("PATH", str(fakes))
    dest = tmp_path / "units"
    args = systemd_args(tmp_path, dest)
    for value, warned in (("no", True), ("yes", False)):
        linger.write_text(
            f'#!/bin/sh\n[ "$1 $3" = "show-user --property=Linger" ] && echo Linger={value}\n'
        )
        linger.chmod(0o755)
        installed = cli("schedule", "install", *args)
        assert ("lingering is off" in installed.stderr) is warned
        loaded.touch()
        status = cli.json("schedule", "status", *args)
        assert status["lingering"] is (not warned)
        assert any("loginctl enable-linger" in n for n in status["notes"]) is warned
    linger.write_text("#!/bin/sh\necho 'Could not get user' >&2\nexit 1\n")
    assert cli.json("schedule", "status", *args)["lingering"] is None  # cannot tell: no warning


def test_job_logs_rotate_by_size_and_status_reads_the_last_run(
    cli, tmp_path, wiki_path, no_real_managers, monkeypatch
):
    from conftest import subprocess_env

    log = wiki_path / ".llm-wiki" / "logs" / "consolidate.log"
    log.parent.mkdir(parents=True)
    env = subprocess_env(
        LLM_WIKI_DIR=str(wiki_path), LLM_WIKI_PYTHON=sys.executable, LLM_WIKI_LOG=str(log),
        LLM_WIKI_LOG_MAX_BYTES="200", HOME=str(tmp_path), PATH="/usr/bin:/bin",
    )  # fmt: skip

    def run():  # as the scheduler runs it: stdout and stderr appended to the log
        with open(log, "ab") as fh:
            subprocess.run(
                ["/bin/sh", str(BIN / "wiki-consolidate")],
                env=env,
                stdout=fh,
                stderr=fh,
                timeout=120,
            )

    run()
    assert len(log.read_bytes()) > 200 and not log.with_name("consolidate.log.1").exists()
    for _ in range(5):  # each run finds the log past 200 bytes and starts a fresh one
        run()
    rotated = sorted(p.name for p in log.parent.iterdir())
    assert rotated == [
        "consolidate.log",
        "consolidate.log.1",
        "consolidate.log.2",
        "consolidate.log.3",
    ]
    assert log.read_text().count(" done (exit 0)") == 1  # the last run wrote to a fresh log
    assert all(p.read_text().count(" start: ") == 1 for p in log.parent.iterdir())
    dest = tmp_path / "units"
    fakes, _, loaded = fake_manager(tmp_path, "systemctl")
    monkeypatch.setenv("PATH", str(fakes))
    args = systemd_args(tmp_path, dest)
    cli("schedule", "install", *args)
    loaded.touch()
    log.write_text(  # a run that failed, then a rotation left the log without a finished run
        "2026-05-11T02:30:00Z wiki-consolidate start: consolidate in /w\n"
        "2026-05-11T02:30:01Z wiki-consolidate ERROR: Traceback (most recent call last):\n"
        "2026-05-11T02:30:01Z wiki-consolidate ERROR: RuntimeError: the disk is full\n"
        "2026-05-11T02:30:01Z wiki-consolidate done (exit 1)\n"
    )
    log.rename(log.with_name("consolidate.log.1"))
    log.write_text("")
    text = cli("schedule", "status", *args, code=1).stdout
    assert "last run 2026-05-11T02:30:01Z exit 1: RuntimeError: the disk is full" in text
