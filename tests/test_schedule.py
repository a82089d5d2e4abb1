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

BIN = REPO / "_system" / "bin"
EXAMPLE = schedule.Layout(
    wiki=Path("/Users/you/llm-wiki"),
    python=Path("/Users/you/src/llm-wiki/.venv/bin/python"),
    bin_dir=Path("/Users/you/src/llm-wiki/_system/bin"),
    env_file=Path("/Users/you/.config/llm-wiki/env"),
)
RANGES = {"Minute": (0, 59), "Hour": (0, 23), "Day": (1, 31), "Weekday": (0, 7), "Month": (1, 12)}
WANT = {  # job -> (calendar intervals, extra arguments)
    "consolidate": ([{"Hour": 2, "Minute": 30}], []),
    "brief": ([{"Hour": 6, "Minute": 45}], []),
    "archive": ([{"Hour": 3, "Minute": 30}], ["--monthly"]),
    "lint": ([{"Weekday": 1, "Hour": 7, "Minute": 0}], []),
}


def real_layout(tmp_path, wiki_path) -> schedule.Layout:
    env = tmp_path / "home" / ".config" / "llm-wiki" / "env"
    return schedule.layout(wiki_path, python=sys.executable, bin_dir=str(BIN), env_file=str(env))


def test_plists_round_trip_with_absolute_paths_and_valid_calendars(tmp_path, wiki_path):
    where = real_layout(tmp_path, wiki_path)
    files = schedule.render("launchd", where)
    assert sorted(f.name for f in files) == sorted(f"com.llm-wiki.{j}.plist" for j in WANT)
    for item in files:
        data = plistlib.loads(item.text.encode())
        assert plistlib.loads(plistlib.dumps(data)) == data
        assert set(data) == {
            "Label", "ProgramArguments", "EnvironmentVariables", "WorkingDirectory",
            "StartCalendarInterval", "StandardOutPath", "StandardErrorPath", "ProcessType",
            "RunAtLoad",
        }  # fmt: skip
        job = item.job
        assert data["Label"] == f"com.llm-wiki.{job}" and data["RunAtLoad"] is False
        shell, script, *args = data["ProgramArguments"]
        assert shell == "/bin/sh" and script == str(BIN / f"wiki-{job}") and Path(script).is_file()
        assert args == WANT[job][1]
        env = data["EnvironmentVariables"]
        assert set(env) == {"LLM_WIKI_DIR", "LLM_WIKI_PYTHON", "LLM_WIKI_ENV_FILE"}
        assert all(Path(v).is_absolute() for v in env.values())
        assert env["LLM_WIKI_PYTHON"] == sys.executable and env["LLM_WIKI_DIR"] == str(wiki_path)
        intervals = data["StartCalendarInterval"]
        intervals = intervals if isinstance(intervals, list) else [intervals]
        assert intervals == WANT[job][0]
        for interval in intervals:
            for key, value in interval.items():
                low, high = RANGES[key]
                assert isinstance(value, int) and low <= value <= high, (job, key, value)
        log = str(wiki_path / ".llm-wiki" / "logs" / f"{job}.log")
        assert data["StandardOutPath"] == data["StandardErrorPath"] == log


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
    rendered = {f.name: f.text for f in schedule.render("launchd", EXAMPLE)}
    on_disk = {p.name: p.read_text() for p in (REPO / "launchd").glob("*.plist")}
    assert on_disk == rendered, (
        "launchd/ is stale: regenerate it with schedule.write_rendered(schedule.render("
        "'launchd', EXAMPLE), Path('launchd')) (see tests/test_schedule.py)"
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
    units = tmp_path / "units"
    paths = schedule.write_rendered(schedule.render("systemd", where), units)
    assert sorted(p.name for p in paths) == sorted(
        f"llm-wiki-{j}.{k}" for j in WANT for k in ("service", "timer")
    )
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
    timer = (units / "llm-wiki-archive.timer").read_text()
    assert "OnCalendar=*-*-01 03:30:00\nPersistent=true\n" in timer
    for path in paths:
        if path.suffix == ".timer":
            assert "Persistent=true" in path.read_text()


def test_unit_contents(tmp_path, wiki_path):
    where = real_layout(tmp_path, wiki_path)
    files = {f.name: f.text for f in schedule.render("systemd", where)}
    service = files["llm-wiki-lint.service"]
    assert f"ExecStart=/bin/sh {BIN}/wiki-lint\n" in service
    assert f"Environment=LLM_WIKI_PYTHON={sys.executable}\n" in service
    assert f"StandardError=append:{wiki_path}/.llm-wiki/logs/lint.log\n" in service
    assert "OnCalendar=Mon *-*-* 07:00:00" in files["llm-wiki-lint.timer"]
    assert "wiki-archive --monthly\n" in files["llm-wiki-archive.service"]


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
    names = sorted(p.name for p in dest.iterdir())
    assert names == sorted(f"llm-wiki-{j}.{k}" for j in WANT for k in ("service", "timer"))
    assert not any("sk-ant-secret" in p.read_text() for p in dest.iterdir())
    assert (wiki_path / ".llm-wiki" / "logs").is_dir()
    ran = calls.read_text().splitlines()
    assert ran[0].endswith("systemctl --user daemon-reload")
    assert ran[1].endswith(
        "systemctl --user enable --now llm-wiki-consolidate.timer llm-wiki-brief.timer "
        "llm-wiki-archive.timer llm-wiki-lint.timer"
    )
    loaded.touch()
    result = cli.json("schedule", "status", *args)
    assert [(j["job"], j["installed"], j["current"], j["loaded"]) for j in result["jobs"]] == [
        (j, True, True, True) for j in WANT
    ]
    assert result["env_ok"] is True
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
    (dest / "llm-wiki-lint.timer").write_text("edited\n")
    assert (
        "installed, out of date (install again)" in cli("schedule", "status", *args, code=1).stdout
    )
    out = cli("schedule", "uninstall", "--platform", "systemd", "--dest", dest).stdout
    assert out.count("Removed ") == 8 and list(dest.iterdir()) == []
    assert "--user disable --now llm-wiki-consolidate.timer" in calls.read_text()
    assert env_file.exists()  # the env file stays
    again = cli("schedule", "uninstall", "--platform", "systemd", "--dest", dest).stdout
    assert again.startswith("No llm-wiki jobs installed")


def test_install_launchd_with_a_fake_launchctl(
    cli, tmp_path, wiki_path, no_real_managers, monkeypatch
):
    fakes, calls, loaded = fake_manager(tmp_path, "fake-launchctl")
    monkeypatch.setenv("LLM_WIKI_LAUNCHCTL", str(fakes / "fake-launchctl"))
    dest = tmp_path / "LaunchAgents"
    args = ["--platform", "launchd", "--dest", dest, "--bin", BIN, "--python", sys.executable]
    cli("schedule", "install", *args)
    assert sorted(p.name for p in dest.iterdir()) == sorted(f"com.llm-wiki.{j}.plist" for j in WANT)
    ran = calls.read_text().splitlines()
    uid = os.getuid()
    assert f"bootout gui/{uid}/com.llm-wiki.consolidate" in ran[0]
    assert ran[1].endswith(f"bootstrap gui/{uid} {dest}/com.llm-wiki.consolidate.plist")
    status = cli.json("schedule", "status", *args, code=1)
    assert all(j["installed"] and j["loaded"] is False for j in status["jobs"])
    assert f"print gui/{uid}/com.llm-wiki.lint" in calls.read_text()
    cli("schedule", "uninstall", "--platform", "launchd", "--dest", dest)
    assert list(dest.iterdir()) == []


def test_install_without_the_manager_fails_and_writes_nothing(cli, tmp_path, no_real_managers):
    dest = tmp_path / "units"
    result = cli("schedule", "install", "--platform", "systemd", "--dest", dest, code=1)
    assert "`systemctl` not found" in result.stderr and "render --out" in result.stderr
    assert not dest.exists()


def test_an_existing_env_file_is_kept_and_a_loose_one_is_flagged(
    cli, tmp_path, no_real_managers, monkeypatch
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
    service = (tmp_path / "u" / "llm-wiki-brief.service").read_text()
    assert f"Environment=LLM_WIKI_ENV_FILE={env_file}\n" in service and "sk-ant" not in service


def test_render_prints_or_writes(cli, tmp_path, wiki_path):
    out = cli("schedule", "render", "--platform", "systemd").stdout
    assert out.count("# ---- llm-wiki-") == 8 and "[Timer]" in out
    target = tmp_path / "agents"
    out = cli("schedule", "render", "--platform", "launchd", "--out", target).stdout
    assert out.count("Wrote ") == 4 and len(list(target.glob("*.plist"))) == 4
    bad = cli("schedule", "render", "--bin", tmp_path, code=2)
    assert "no job scripts" in bad.stderr
