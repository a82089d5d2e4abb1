"""Concurrent writers and writers killed mid-write: nothing lost, nothing torn, verify tells."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import Cli, run_module, subprocess_env, write_args

WRITER = textwrap.dedent(
    """
    import sys
    from llm_wiki.wiki import Wiki
    from llm_wiki.access import Viewer
    from llm_wiki.entries import draft
    from llm_wiki.write import write_entry

    wiki, worker = Wiki(sys.argv[1]), sys.argv[2]
    for i in range(int(sys.argv[3])):
        entry = draft(type="incident", domain="ops", summary="Disk filled up on the primary",
                      body=f"worker {worker} write {i}")
        result = write_entry(wiki, entry, viewer=Viewer.everyone())
        assert result.created, result
        print(result.id)
    """
)


@pytest.mark.slow
def test_eight_processes_hundred_writes_same_date_and_summary(wiki_path):
    env = subprocess_env(LLM_WIKI_NOW="2026-05-02T12:00:00Z")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(wiki_path), str(w), "100"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(8)
    ]
    ids = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        ids += out.split()
    assert len(ids) == 800 and len(set(ids)) == 800
    files = list((wiki_path / "entries").rglob("*.md"))
    assert len(files) == 800
    writes = [ln for ln in (wiki_path / "log.md").read_text().splitlines() if " write " in ln]
    assert len(writes) == 800
    assert {ln.split()[2] for ln in writes} == set(ids)
    cli = Cli(wiki_path)
    assert "Verified 800 entries: clean." in cli("verify").stdout
    cli("index", "--check")
    assert cli.json("stats")["entries"] == 800
    # four hex digits collide among 800 same-day, same-summary entries; ids grew instead
    assert any(len(i.rsplit("-", 1)[1]) > 4 for i in ids)


ARGS = ["write", "--type", "incident", "--domain", "ops", "--summary", "Killed mid-write"]


def log_lines(wiki_path):
    return (wiki_path / "log.md").read_bytes()


@pytest.mark.parametrize("step", ["before-link", "after-link", "mid-log"])
def test_sigkill_at_each_step_of_a_write(wiki_path, step):
    cli = Cli(wiki_path)
    cli("write", "--type", "incident", "--domain", "ops", "--summary", "Before the crash")
    env = subprocess_env(LLM_WIKI_DIR=str(wiki_path), LLM_WIKI_CRASH_AT=step)
    proc = run_module(*ARGS, env=env)
    assert proc.returncode == -9, proc.stderr
    files = sorted((wiki_path / "entries").rglob("*.md"))
    # no partial entry: every file there is whole
    from llm_wiki.entries import parse_entry

    for path in files:
        parse_entry(path.read_text())
    verify = cli.json("verify", code=None)
    if step == "before-link":
        assert len(files) == 1
        assert verify["ok"]
    else:
        assert len(files) == 2
        assert [(f["kind"]) for f in verify["findings"]] == ["unlogged"]
    # the next write leaves no torn line behind, and a retried write finishes the dead one
    cli("write", "--type", "incident", "--domain", "ops", "--summary", "After the crash")
    data = log_lines(wiki_path)
    assert data.endswith(b"\n")
    from llm_wiki.store import parse_log_line

    body = data.decode().split("\n\n", 2)[-1]
    for line in body.splitlines():
        assert parse_log_line(line) is not None, line
    cli(*ARGS)
    assert cli.json("verify")["ok"]
    cli("index", "--check")
    assert cli.json("stats")["entries"] == 3


def test_a_torn_log_line_longer_than_4_kib_is_cut_whole(wiki_path):
    """An ingest line lists every entry it wrote, so a log line can pass 4 KiB; a writer killed
    while appending one leaves its first part. The next append must cut all of it, or the next
    line is glued to it and its entry reads as unlogged."""
    cli = Cli(wiki_path)
    cli("write", "--type", "incident", "--domain", "ops", "--summary", "Before the crash")
    ids = ",".join(f"2026-05-02-an-entry-the-ingest-wrote-number-{n}-3f2a" for n in range(100))
    torn = f"2026-05-02T10:00:00Z ingest raw/{'0' * 64}.txt entries={ids}"[:6000]
    with open(wiki_path / "log.md", "a") as fh:
        fh.write(torn)
    cli("write", "--type", "incident", "--domain", "ops", "--summary", "After the crash")
    assert cli.json("verify")["ok"]
    from llm_wiki.store import parse_log_line

    body = log_lines(wiki_path).decode().split("\n\n", 2)[-1]
    assert [parse_log_line(line).op for line in body.splitlines()] == ["write", "write"]


def test_a_write_that_opens_a_new_year_syncs_every_folder_it_made(cli, wiki_path, monkeypatch):
    """The entry is linked and its month folder synced; the month and year folders are new, so
    their parents are synced too, or a crash could drop the folder and the entry with it."""
    import llm_wiki.files as files

    synced: list[str] = []
    real = files.fsync_dir
    monkeypatch.setattr(files, "fsync_dir", lambda path: (synced.append(str(path)), real(path)))
    monkeypatch.setenv("LLM_WIKI_NOW", "2031-02-03T10:00:00Z")
    entry = cli.json(*write_args("A decision in a year of its own"))
    entries = wiki_path / "entries"
    month = entries / "2031" / "02"
    assert (month / f"{entry['id']}.md").exists()
    assert {str(month), str(entries / "2031"), str(entries)} <= {os.path.abspath(p) for p in synced}


def test_a_write_into_a_folder_a_killed_write_made_still_syncs_its_parents(
    cli, wiki_path, monkeypatch
):
    """A write killed after making the month's folder and before syncing its parent leaves the
    folder in place but not durable; the next write finds it there and syncs the parents anyway."""
    import llm_wiki.files as files

    monkeypatch.setenv("LLM_WIKI_NOW", "2032-03-04T10:00:00Z")
    entries = wiki_path / "entries"
    os.makedirs(entries / "2032" / "03")  # what the killed write left: made, never synced
    synced: list[str] = []
    real = files.fsync_dir
    monkeypatch.setattr(files, "fsync_dir", lambda path: (synced.append(str(path)), real(path)))
    entry = cli.json(*write_args("A decision after a killed write"))
    month = entries / "2032" / "03"
    assert (month / f"{entry['id']}.md").exists()
    assert {str(month), str(entries / "2032"), str(entries)} <= {os.path.abspath(p) for p in synced}


def test_a_raw_source_stored_syncs_no_folder_outside_the_wiki(wiki_path, monkeypatch):
    """A raw source is linked into raw/ (one level under the wiki, where an entry is three): its
    folder and the wiki's root are synced, never the folder the wiki lies in, which its user
    may not be able to open (a shared wiki under a folder of mode 0711): that open failed
    after the file was linked, and the ingest reported the source as not stored."""
    import hashlib

    import llm_wiki.files as files
    from llm_wiki.ingest import _store_raw
    from llm_wiki.wiki import Wiki

    synced: list[str] = []
    real = files.fsync_dir
    monkeypatch.setattr(files, "fsync_dir", lambda path: (synced.append(str(path)), real(path)))
    data = b"a raw source\n"
    sha = hashlib.sha256(data).hexdigest()
    _store_raw(Wiki(wiki_path), data, sha, f"raw/{sha}.txt")
    assert (wiki_path / "raw" / f"{sha}.txt").read_bytes() == data
    root = os.path.abspath(wiki_path)
    synced_abs = {os.path.abspath(p) for p in synced}
    assert {os.path.join(root, "raw"), root} <= synced_abs
    assert all(p == root or p.startswith(root + os.sep) for p in synced_abs), synced_abs
    synced.clear()  # there already (an ingest killed after linking it): synced all the same
    _store_raw(Wiki(wiki_path), data, sha, f"raw/{sha}.txt")
    assert {os.path.abspath(p) for p in synced} == {os.path.join(root, "raw"), root}


def test_a_retried_write_syncs_the_folders_of_the_file_it_finishes(wiki_path, monkeypatch):
    """A write killed after linking its file and before its log line leaves the file, and the
    retried write logs it as written (it does not link it again). The killed write may have
    died before the file's folders were synced: the retry syncs them before the line goes in,
    or a power cut could take away a file log.md says was written."""
    import llm_wiki.files as files
    import llm_wiki.store as store

    env = subprocess_env(
        LLM_WIKI_DIR=str(wiki_path), LLM_WIKI_CRASH_AT="after-link", LLM_WIKI_NOW="2033-04-05"
    )
    proc = run_module(*ARGS, env=env)
    assert proc.returncode == -9, proc.stderr
    (left,) = (wiki_path / "entries").rglob("*.md")
    events: list[str] = []
    real_sync, real_append = files.fsync_dir, store.append_log
    monkeypatch.setattr(files, "fsync_dir", lambda p: (events.append(str(p)), real_sync(p)))
    monkeypatch.setattr(
        store, "append_log", lambda *a, **k: (events.append("log"), real_append(*a, **k))[1]
    )
    monkeypatch.setenv("LLM_WIKI_NOW", "2033-04-05")
    got = Cli(wiki_path).json(*ARGS)
    assert got["id"] == left.stem and not got["created"]
    month = os.path.abspath(left.parent)
    synced = [os.path.abspath(p) for p in events[: events.index("log")] if p != "log"]
    assert {month, os.path.dirname(month), os.path.dirname(os.path.dirname(month))} <= set(synced)
