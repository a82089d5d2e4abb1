"""The job scripts in _system/bin/ run under dash with `env -i` plus only what they document."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys

from conftest import REPO, Cli

BIN = REPO / "_system" / "bin"
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ wiki-\w+ ", re.M)


def run_script(name, *args, env=None, timeout=120):
    base = {"LLM_WIKI_PYTHON": sys.executable}
    base.update(env or {})
    cmd = ["env", "-i", *(f"{k}={v}" for k, v in base.items()), "dash", str(BIN / name), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_scripts_are_posix_sh():
    for path in BIN.iterdir():
        text = path.read_text()
        assert "pipefail" not in text and "[[" not in text and "function " not in text, path.name
        if path.name != "_lib.sh":
            assert text.startswith("#!/bin/sh\n"), path.name
            assert os.access(path, os.X_OK), path.name
        proc = subprocess.run(["dash", "-n", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_wiki_write_and_index_under_env_i(wiki_path):
    proc = run_script(
        "wiki-write",
        "--type",
        "incident",
        "--domain",
        "ops",
        "--summary",
        "Written by a job",
        env={"LLM_WIKI_DIR": wiki_path},
    )
    assert proc.returncode == 0, proc.stderr
    assert "Recorded " in proc.stdout
    proc = run_script("wiki-index", env={"LLM_WIKI_DIR": wiki_path})
    assert proc.returncode == 0, proc.stderr
    assert "Indexed 1 entry" in proc.stdout
    assert len(STAMP.findall(proc.stderr)) >= 2
    assert Cli(wiki_path).json("stats")["entries"] == 1


def test_env_file_supplies_the_environment(wiki_path, tmp_path):
    env_file = tmp_path / "env"
    env_file.write_text(f"LLM_WIKI_DIR={wiki_path}\n")
    env_file.chmod(0o600)
    proc = run_script("wiki-index", env={"LLM_WIKI_ENV_FILE": env_file})
    assert proc.returncode == 0, proc.stderr
    home = tmp_path / "home"
    (home / ".config/llm-wiki").mkdir(parents=True)
    (home / ".config/llm-wiki/env").write_text(f"LLM_WIKI_DIR={wiki_path}\n")
    proc = run_script("wiki-index", env={"HOME": home})
    assert proc.returncode == 0, proc.stderr


def test_missing_wiki_dir_fails_loudly():
    proc = run_script("wiki-index")
    assert proc.returncode == 2
    assert "LLM_WIKI_DIR is not set" in proc.stderr and STAMP.search(proc.stderr)
    error, done = proc.stderr.rstrip().splitlines()
    assert error.endswith("set it in the env file.")  # not "... file. 2"
    assert done.endswith("wiki-index done (exit 2)")  # so `schedule status` sees the failure


def test_failed_write_exits_non_zero(wiki_path):
    proc = run_script("wiki-write", "--type", "memo", env={"LLM_WIKI_DIR": wiki_path})
    assert proc.returncode == 2
    assert "write failed (exit 2)" in proc.stderr


@contextlib.contextmanager
def running(*args):
    """A live process with these arguments (one that looks like a running job, or not)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def run_while_locked(wiki_path, job, holder):
    """Run ``job`` while its lock names the pid of a live process with the argument ``holder``;
    returns the lock folder and the run."""
    lock = wiki_path / f".llm-wiki/jobs/{job}.lock"
    lock.mkdir(parents=True)
    with running(holder) as pid:
        (lock / "pid").write_text(str(pid))
        return lock, run_script(job, env={"LLM_WIKI_DIR": wiki_path})


def test_overlapping_job_exits_zero_and_says_so(wiki_path):
    # another run of the job holds it
    lock, proc = run_while_locked(wiki_path, "wiki-index", "wiki-index")
    assert proc.returncode == 0
    assert "holds the lock" in proc.stderr
    assert proc.stderr.rstrip().endswith("done (exit 0)")  # every run ends with its done line
    (lock / "pid").write_text("999999")  # dead: the lock is stale
    proc = run_script("wiki-index", env={"LLM_WIKI_DIR": wiki_path})
    assert proc.returncode == 0 and "stale lock" in proc.stderr and "Indexed" in proc.stdout
    assert not lock.exists()


def test_a_lock_left_by_a_crash_whose_pid_was_reused_is_stale(wiki_path):
    """A job killed hard (power cut, SIGKILL) leaves its lock; after a reboot its pid may be any
    other live process, and reading that as "another run" skipped the nightly job for good."""
    lock, proc = run_while_locked(wiki_path, "wiki-index", "some-editor")
    assert proc.returncode == 0 and "stale lock" in proc.stderr and "Indexed" in proc.stdout
    assert not lock.exists()


def use_backend(wiki_path, name):
    path = wiki_path / "settings.yaml"
    text = path.read_text().replace("backend: offline", f"backend: {name}")
    path.write_text(text.replace("retry_wait_seconds: 2", "retry_wait_seconds: 0"))


def test_wiki_consolidate_runs_the_configured_backend(wiki_path):
    cli = Cli(wiki_path)
    for summary in ("Keep the ledger in Postgres", "Partition postings by month"):
        cli(
            "write", "--type", "incident", "--domain", "ledger", "--tag", "db", "--summary", summary
        )
    use_backend(wiki_path, "mock")
    env = {"LLM_WIKI_DIR": wiki_path, "LLM_WIKI_MOCK_FILE": REPO / "tests" / "mock_llm.py"}
    proc = run_script("wiki-consolidate", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "written   shared/ledger" in proc.stdout and "2 LLM calls" in proc.stdout
    assert "checking statements against their citations took 1 call" in proc.stdout
    assert len(STAMP.findall(proc.stderr)) >= 2 and "done (exit 0)" in proc.stderr
    proc = run_script("wiki-consolidate", env=env)
    assert proc.returncode == 0 and "0 LLM calls" in proc.stdout


def test_wiki_consolidate_fails_loudly_when_the_backend_is_unusable(wiki_path):
    cli = Cli(wiki_path)
    cli("write", "--type", "incident", "--domain", "ledger", "--summary", "Disk full on db-1")
    use_backend(wiki_path, "anthropic")  # no ANTHROPIC_API_KEY under env -i
    proc = run_script("wiki-consolidate", env={"LLM_WIKI_DIR": wiki_path})
    assert proc.returncode != 0
    errors = [ln for ln in proc.stderr.splitlines() if " ERROR: " in ln]
    assert errors and STAMP.match(errors[0]) and "anthropic" in errors[0], proc.stderr
    assert f"done (exit {proc.returncode})" in proc.stderr
    listed = cli.json("list", "--type", "synthesis")
    assert listed["total"] == 0  # nothing written, no offline fallback


def test_wiki_consolidate_skips_a_run_that_overlaps(wiki_path):
    _, proc = run_while_locked(wiki_path, "wiki-consolidate", "wiki-consolidate")
    assert proc.returncode == 0 and "holds the lock" in proc.stderr


def test_wiki_lint_job(wiki_path):
    ok = run_script("wiki-lint", env={"LLM_WIKI_DIR": wiki_path})
    assert ok.returncode == 0, ok.stderr
    assert "Linted 0 entries: 0 errors" in ok.stdout
    broken = wiki_path / "entries/2026/01/2026-01-01-hand-made-abcd.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("---\nid: 2026-01-01-hand-made-abcd\ntype: memo\n---\n")
    bad = run_script("wiki-lint", env={"LLM_WIKI_DIR": wiki_path})
    assert bad.returncode == 1
    assert "done (exit 1)" in bad.stderr and STAMP.search(bad.stderr)


def test_wiki_ingest_job_ingests_quiet_files_once(wiki_path):
    inbox = wiki_path / "inbox"
    inbox.mkdir()
    chat = inbox / "team-chat.txt"
    chat.write_bytes((REPO / "tests/data/ingest/team-chat.txt").read_bytes())
    os.utime(chat, (1776178800, 1776178800))  # 2026-04-14T15:00:00Z
    use_backend(wiki_path, "mock")
    env = {
        "LLM_WIKI_DIR": wiki_path,
        "LLM_WIKI_MOCK_FILE": REPO / "tests" / "mock_ingest.py",
        "LLM_WIKI_NOW": "2026-04-14T15:05:00Z",
    }
    early = run_script("wiki-ingest", env=env)
    assert early.returncode == 0, early.stderr
    assert "team-chat.txt: waiting" in early.stdout
    env["LLM_WIKI_NOW"] = "2026-04-14T15:10:00Z"
    proc = run_script("wiki-ingest", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "team-chat.txt: Stored raw/" in proc.stdout and "2 entries written" in proc.stdout
    assert len(STAMP.findall(proc.stderr)) >= 2 and "done (exit 0)" in proc.stderr
    again = run_script("wiki-ingest", env=env)
    assert again.returncode == 0 and "team-chat.txt: Nothing new" in again.stdout
    assert Cli(wiki_path).json("stats")["entries"] == 2


def test_wiki_ingest_job_fails_loudly_without_an_llm(wiki_path):
    inbox = wiki_path / "inbox"
    inbox.mkdir()
    (inbox / "chat.txt").write_text("maria: we decided\n")
    os.utime(inbox / "chat.txt", (1700000000, 1700000000))
    proc = run_script("wiki-ingest", env={"LLM_WIKI_DIR": wiki_path})  # backend: offline
    assert proc.returncode == 1
    errors = [ln for ln in proc.stderr.splitlines() if " ERROR: " in ln]
    assert errors and STAMP.match(errors[0]) and "anthropic or claude-cli" in errors[0]
    assert not (wiki_path / "raw").exists()
    missing = run_script("wiki-ingest", env={"LLM_WIKI_DIR": wiki_path, "LLM_WIKI_INBOX": "/nope"})
    assert missing.returncode == 2 and "LLM_WIKI_INBOX" in missing.stderr
