"""What verify, lint and `index --check` must notice (issue 13): entries that no longer parse,
writes in progress (not "unlogged"), temp files of killed writes, hand edits to the catalog."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import SRC, plant, subprocess_env, write_args


def _plant_bytes(wiki_path, entry_id, date, data: bytes):
    rel = f"entries/{date[:4]}/{date[5:7]}/{entry_id}.md"
    path = wiki_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.chmod(path, 0o444)
    sha = hashlib.sha256(data).hexdigest()
    with open(wiki_path / "log.md", "a") as fh:
        fh.write(f"{date}T09:00:00Z write {entry_id} sha256={sha} scope=shared path={rel}\n")


def test_an_entry_that_cannot_be_read_is_reported_by_verify_and_lint(cli, wiki_path):
    """A lone surrogate was written and logged; every read failed and verify said clean."""
    cli(*write_args())
    bad = "---\nid: x-1\ntype: incident\ndate: 2026-01-02\ndomain: ops\nsummary: s\n---\n"
    _plant_bytes(wiki_path, "x-1", "2026-01-02", bad.encode()[:-5] + b"\xed\xb2\x80\n---\n")
    _plant_bytes(wiki_path, "x-2", "2026-01-03", b"no frontmatter at all\n")
    found = cli.json("verify", code=1)["findings"]
    assert {(f["kind"], f["id"]) for f in found} == {("unreadable", "x-1"), ("unreadable", "x-2")}
    lint = cli.json("lint", code=1)
    assert {"x-1", "x-2"} <= {
        i for f in lint["findings"] if f["level"] == "error" for i in f["ids"]
    }


def test_verify_does_not_call_a_write_in_progress_unlogged(cli, wiki_path, monkeypatch):
    """The file of a write is linked before its log line: verify saw the file, not the line."""
    from llm_wiki import store
    from llm_wiki import verify as verify_module
    from llm_wiki.access import Viewer
    from llm_wiki.entries import draft
    from llm_wiki.wiki import Wiki
    from llm_wiki.write import write_entry

    cli(*write_args())
    wiki = Wiki(wiki_path)
    real = store.iter_entry_files

    def listing_during_a_write(w, **kw):
        write_entry(
            wiki,
            draft(type="incident", domain="ops", summary="Written while verify ran"),
            viewer=Viewer.everyone(),
        )
        yield from real(w, **kw)

    monkeypatch.setattr(store, "iter_entry_files", listing_during_a_write)
    result = verify_module.verify(wiki, Viewer.everyone())
    assert result.ok, result.findings
    assert result.checked == 2


@pytest.mark.slow
def test_verify_during_concurrent_writes_finds_nothing(cli, wiki_path):
    """5 of 24 runs reported false "unlogged" entries while writers ran."""
    cli(*write_args())
    script = (
        "import sys; from llm_wiki.cli import main; sys.argv = ['llm-wiki', '--wiki', sys.argv[1],"
        " 'write', '--type', 'incident', '--domain', 'ops', '--summary', 'Load ' + sys.argv[2]];"
        " main()"
    )
    env = subprocess_env(PYTHONPATH=str(SRC))
    writers = []
    for w in range(3):
        loop = (
            f'for i in $(seq 1 15); do {sys.executable} -c "{script}" {wiki_path} w{w}-$i '
            ">/dev/null 2>&1; done"
        )
        writers.append(subprocess.Popen(["sh", "-c", loop], env=env))
    runs, dirty = 0, []
    try:
        while any(p.poll() is None for p in writers) and runs < 24:
            out = cli.json("verify", code=None)
            runs += 1
            if out["findings"]:
                dirty.append(out["findings"])
    finally:
        for p in writers:
            p.wait(timeout=120)
    assert runs >= 3 and not dirty, dirty
    cli("verify")


def test_temp_files_of_killed_writes_are_swept_only_when_old_and_ours(cli, wiki_path):
    cli(*write_args())
    tmp = wiki_path / ".llm-wiki" / "tmp"
    tmp.mkdir(exist_ok=True)
    old_ours = tmp / "entry.4242.0123456789ab.tmp"
    fresh_ours = tmp / "entry.4243.0123456789ac.tmp"
    old_index = wiki_path / ".INDEX.md.4244.0123456789ad.tmp"
    old_other = tmp / "notes.tmp"
    (wiki_path / "index" / "platform").mkdir(exist_ok=True)  # a domain indexed by month
    old_month = wiki_path / "index" / "platform" / ".2026-01.md.4245.0123456789ae.tmp"
    for path in (old_ours, fresh_ours, old_index, old_other, old_month):
        path.write_text("x")
    day_ago = time.time() - 86400
    for path in (old_ours, old_index, old_other, old_month):
        os.utime(path, (day_ago, day_ago))
    cli(*write_args("Another decision"))
    assert not old_ours.exists() and fresh_ours.exists() and old_other.exists()
    cli("index")
    assert not old_index.exists() and fresh_ours.exists() and old_other.exists()
    assert not old_month.exists()


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE entries SET summary = 'Use MySQL for the ledger'",
        "UPDATE entries SET scope = 'secret'",
        "UPDATE entries SET tags = '[\"quietly-added\"]'",
        "DELETE FROM tags",
        "UPDATE fts SET summary = 'nothing here'",
        "UPDATE counts SET n = n + 5",
        "DELETE FROM entries",
    ],
)
def test_index_check_notices_a_hand_edited_catalog(cli, wiki_path, edit):
    """`list` served the edit while `index --check` said all was well."""
    cli(*write_args(tag=["database"]))
    cli("index", "--check")
    db = sqlite3.connect(wiki_path / ".llm-wiki" / "catalog.sqlite3")
    with db:
        db.execute(edit)
    db.close()
    result = cli("index", "--check", code=1)
    assert "Stale (run `llm-wiki index --full`): .llm-wiki/catalog.sqlite3" in result.stdout
    cli("index", "--full")
    cli("index", "--check")


def test_plant_helper_still_verifies(cli, wiki_path):
    plant(wiki_path, "x-9", "2026-01-02", {"type": "incident", "domain": "ops", "summary": "s"})
    cli("verify")
