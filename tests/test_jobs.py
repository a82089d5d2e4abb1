"""Every scheduled job script: dash, `env -i` plus its env file, a job lock, timestamped logs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import Cli
from llm_wiki.schedule import JOBS
from test_scripts import BIN, STAMP, running

SCHEDULED = [job.script for job in JOBS if not job.optional] + ["wiki-index"]


def run_with_env_file(home, name, *args, now="2026-05-10"):
    """`env -i HOME=... LLM_WIKI_NOW=...` and nothing else: the rest comes from
    ~/.config/llm-wiki/env."""
    cmd = ["env", "-i", f"HOME={home}", f"LLM_WIKI_NOW={now}", "dash", str(BIN / name), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture
def home(tmp_path, wiki_path):
    home = tmp_path / "home"
    env_file = home / ".config" / "llm-wiki" / "env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text(f"LLM_WIKI_DIR={wiki_path}\nLLM_WIKI_PYTHON={sys.executable}\n")
    env_file.chmod(0o600)
    return home


@pytest.mark.parametrize("script", SCHEDULED)
def test_job_runs_under_env_i_with_its_env_file(script, home, wiki_path):
    Cli(wiki_path)("write", "--type", "incident", "--domain", "ops", "--summary", "Disk full")
    proc = run_with_env_file(home, script)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines and all(STAMP.match(line) for line in lines), proc.stderr
    assert f" {script} start: " in lines[0] and lines[-1].endswith(f"{script} done (exit 0)")
    assert not (wiki_path / ".llm-wiki" / "jobs" / f"{script}.lock").exists()  # released


@pytest.mark.parametrize("script", SCHEDULED)
def test_job_takes_its_lock(script, home, wiki_path):
    lock = wiki_path / ".llm-wiki" / "jobs" / f"{script}.lock"
    lock.mkdir(parents=True)
    with running(script) as pid:  # held by another run
        (lock / "pid").write_text(str(pid))
        proc = run_with_env_file(home, script)
    assert proc.returncode == 0 and "holds the lock; exiting" in proc.stderr
    assert STAMP.match(proc.stderr) and "start:" not in proc.stderr


def test_archive_runs_once_a_month_and_catches_up(home, wiki_path):
    cli = Cli(wiki_path)
    old = cli.json(
        "write", "--type", "incident", "--domain", "ops", "--summary", "Disk full", "--date",
        "2026-01-05",
    )["id"]  # fmt: skip
    cli("write", "--type", "incident", "--domain", "ops", "--summary", "Disk full again",
        "--supersedes", old, "--date", "2026-01-20")  # fmt: skip
    first = run_with_env_file(home, "wiki-archive", "--monthly")
    assert first.returncode == 0, first.stderr
    assert "Archived 1 entry" in first.stdout  # the first run of May (the 1st was missed)
    again = run_with_env_file(home, "wiki-archive", "--monthly", now="2026-05-11")
    assert again.returncode == 0 and "already ran in 2026-05" in again.stderr
    assert again.stderr.rstrip().endswith("done (exit 0)")
    assert again.stdout == "" and "start:" not in again.stderr
    june = run_with_env_file(home, "wiki-archive", "--monthly", now="2026-06-03")
    assert june.returncode == 0 and "Nothing to archive" in june.stdout
    assert (wiki_path / ".llm-wiki" / "jobs" / "wiki-archive.month").read_text() == "2026-06\n"
    assert cli.json("show", old)["archive"]  # still readable, from the archive


def test_a_failed_monthly_archive_is_retried_the_same_month(home, wiki_path):
    settings = wiki_path / "settings.yaml"
    settings.write_text(settings.read_text().replace("older_than_days: 90", "older_than_days: -1"))
    bad = run_with_env_file(home, "wiki-archive", "--monthly")
    assert bad.returncode != 0 and " ERROR: " in bad.stderr
    assert not (wiki_path / ".llm-wiki" / "jobs" / "wiki-archive.month").exists()
    settings.write_text(settings.read_text().replace("older_than_days: -1", "older_than_days: 90"))
    good = run_with_env_file(home, "wiki-archive", "--monthly")
    assert good.returncode == 0 and "Nothing to archive" in good.stdout


def test_wiki_write_runs_with_only_its_env_file(home, wiki_path):
    """wiki-write is a write helper, not a scheduled job: concurrent writes are serialized by the
    store's lock, never skipped by a job lock; it logs a timestamped line when it fails."""
    ok = run_with_env_file(
        home, "wiki-write", "--type", "incident", "--domain", "ops", "--summary", "Disk full"
    )
    assert ok.returncode == 0 and ok.stdout.startswith("Recorded 2026-05-10-disk-full-")
    bad = run_with_env_file(home, "wiki-write", "--type", "memo")
    assert bad.returncode == 2
    assert STAMP.search(bad.stderr) and "wiki-write write failed (exit 2)" in bad.stderr


def test_the_optional_jobs_run_under_env_i(home, wiki_path, tmp_path):
    """ingest and sync (`schedule install --jobs ingest,sync`) need more than a wiki: an inbox
    and an LLM backend, a git repository with a remote. Given those, they run like the others."""
    import os

    remote = tmp_path / "remote.git"
    identity = "\n".join(
        f"GIT_{who}_{what}={value}"
        for who in ("AUTHOR", "COMMITTER")
        for what, value in (("NAME", "Wiki Tester"), ("EMAIL", "tester@example.org"))
    )
    env_file = home / ".config" / "llm-wiki" / "env"
    env_file.write_text(env_file.read_text() + identity + "\nGIT_CONFIG_NOSYSTEM=1\n"
                        f"PATH={os.environ['PATH']}\n")  # fmt: skip
    Cli(wiki_path)("write", "--type", "incident", "--domain", "ops", "--summary", "Disk full")
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True, capture_output=True)
    git = ["git", "-C", str(wiki_path)]
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(home)}
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["remote", "add", "origin", str(remote)],
    ):
        subprocess.run(git + args, check=True, capture_output=True, env=env)
    subprocess.run(
        git + ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "start"],
        check=True, capture_output=True, env=env,
    )  # fmt: skip
    subprocess.run(
        git + ["push", "-q", "-u", "origin", "main"], check=True, capture_output=True, env=env
    )
    Cli(wiki_path)("write", "--type", "incident", "--domain", "ops", "--summary", "Disk full again")
    sync = run_with_env_file(home, "wiki-sync")
    assert sync.returncode == 0, sync.stderr
    assert sync.stderr.splitlines()[-1].endswith("wiki-sync done (exit 0)")
    (wiki_path / "inbox").mkdir()
    ingest = run_with_env_file(home, "wiki-ingest")  # backend: offline: fails loudly
    assert ingest.returncode == 1 and " ERROR: ingest needs an LLM backend" in ingest.stderr
    assert ingest.stderr.splitlines()[-1].endswith("wiki-ingest done (exit 1)")
