"""A deletion or an edit must not spread (issue 13, item 1): every log.md line a clone has seen
stays byte for byte in every later log; sync refuses to commit, push or take in history that
drops or rewrites a line, or carries an entry whose bytes differ from its logged sha256, and
says which. verify proves what git history allows. Each test: a bare repository, two clones."""

from __future__ import annotations

import hashlib
import os

import pytest

from conftest import write_args
from test_sync import clone, git, git_identity, origin  # noqa: F401 - fixtures


@pytest.fixture
def pair(tmp_path, origin, monkeypatch):  # noqa: F811 - the fixture imported above
    bare, ids = origin
    one, cli1 = clone(tmp_path, bare, "one")
    two, cli2 = clone(tmp_path, bare, "two")
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-03-01")
    x = cli1.json(*write_args("Keep the ledger in Postgres", domain="ledger"))
    assert cli1.json("sync")["pushed"]
    assert cli2.json("sync")["pulled"] == 1
    return (one, cli1), (two, cli2), x


def _drop_entry_and_its_line(root, entry):
    os.unlink(root / entry["path"])
    log = root / "log.md"
    log.write_text("".join(ln for ln in log.read_text().splitlines(True) if entry["id"] not in ln))


def _edit(root, entry, old, new):
    path = root / entry["path"]
    os.chmod(path, 0o644)
    path.write_text(path.read_text().replace(old, new))
    os.chmod(path, 0o444)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _pushed_head(tmp_path):
    return git(tmp_path / "origin.git", "rev-parse", "main").strip()


def test_a_deletion_with_its_log_line_is_found_and_not_synced(tmp_path, pair):
    (one, cli1), (two, cli2), x = pair
    head = _pushed_head(tmp_path)
    _drop_entry_and_its_line(one, x)
    found = cli1.json("verify", code=1)["findings"]
    assert [(f["kind"], f["id"]) for f in found] == [("dropped-line", x["id"])]
    result = cli1("sync", code=1)
    assert "refusing to commit" in result.stderr and x["id"] in result.stderr
    assert _pushed_head(tmp_path) == head  # nothing went out
    assert x["id"] in [e["id"] for e in cli2.json("list")["entries"]]


def test_an_edited_entry_is_not_committed(tmp_path, pair):
    (one, cli1), _, x = pair
    head = _pushed_head(tmp_path)
    _edit(one, x, "Postgres", "MySQL")
    result = cli1("sync", code=1)
    assert "refusing to commit" in result.stderr and f"edited: {x['id']}" in result.stderr
    assert _pushed_head(tmp_path) == head


def test_an_entry_edited_with_its_sha_in_log_md_is_found_and_not_synced(tmp_path, pair):
    (one, cli1), _, x = pair
    head = _pushed_head(tmp_path)
    old_sha = x["sha256"]
    new_sha = _edit(one, x, "Postgres", "MySQL")
    log = one / "log.md"
    log.write_text(log.read_text().replace(old_sha, new_sha))
    kinds = {(f["kind"], f["id"]) for f in cli1.json("verify", code=1)["findings"]}
    assert kinds == {("dropped-line", x["id"])}
    result = cli1("sync", code=1)
    assert "refusing to commit" in result.stderr and x["id"] in result.stderr
    assert _pushed_head(tmp_path) == head


def test_a_deletion_committed_with_plain_git_is_not_taken_in(tmp_path, pair):
    """Clone one bypasses the tool: git rm, a log.md without the line, commit, push."""
    (one, cli1), (two, cli2), x = pair
    _drop_entry_and_its_line(one, x)
    git(one, "add", "-A")
    git(one, "commit", "--quiet", "-m", "tidy")
    git(one, "push", "--quiet", "origin", "HEAD:main")
    found = {(f["kind"], f["id"]) for f in cli1.json("verify", code=1)["findings"]}
    assert ("dropped-line", x["id"]) in found  # its own history proves it
    before = git(two, "rev-parse", "HEAD")
    y = cli2.json(*write_args("Written on two meanwhile", domain="ops"))
    result = cli2("sync", code=1)
    assert "refusing what origin/main holds" in result.stderr and x["id"] in result.stderr
    assert git(two, "rev-parse", "HEAD") != before  # two's own new commit is kept ...
    assert (two / x["path"]).exists()  # ... and the entry is still there
    ids = [e["id"] for e in cli2.json("list")["entries"]]
    assert x["id"] in ids and y["id"] in ids
    cli2("verify")


def test_an_edited_entry_pushed_with_plain_git_is_not_taken_in(tmp_path, pair):
    (one, cli1), (two, cli2), x = pair
    _edit(one, x, "Postgres", "MySQL")
    git(one, "commit", "--quiet", "-am", "typo")
    git(one, "push", "--quiet", "origin", "HEAD:main")
    assert ("rewritten", x["id"]) in {
        (f["kind"], f["id"]) for f in cli1.json("verify", code=1)["findings"]
    }
    result = cli2("sync", code=1)
    assert "refusing what origin/main holds" in result.stderr and x["id"] in result.stderr
    assert "Postgres" in (two / x["path"]).read_text()
    cli2("verify")


def test_a_forged_archive_member_is_found_and_not_synced(tmp_path, pair, monkeypatch):
    (one, cli1), _, x = pair
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-03-02")
    cli1(*write_args("Keep the ledger in Postgres 16", domain="ledger", supersedes=x["id"]))
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-09-01")
    archived = cli1.json("archive")
    assert x["id"] in archived["archived"]
    assert cli1.json("sync")["pushed"]
    head = _pushed_head(tmp_path)
    # Rebuild the archive with the member's text changed (same name: readers find it).
    import io
    import tarfile

    import zstandard

    path = one / archived["archive"]
    raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(path.read_bytes())).read()
    members = []
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        for info in tar.getmembers():
            members.append((info, tar.extractfile(info).read()))
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for info, data in members:
            data = data.replace(b"Postgres", b"MySQL!!!")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    os.chmod(path, 0o644)
    path.write_bytes(zstandard.ZstdCompressor().compress(out.getvalue()))
    found = {(f["kind"], f["id"]) for f in cli1.json("verify", code=1)["findings"]}
    assert ("archive-mismatch", x["id"]) in found or ("unreadable-archive", "") in found
    result = cli1("sync", code=1)
    assert "refusing to commit" in result.stderr
    assert _pushed_head(tmp_path) == head


def test_a_clean_sync_still_replicates(tmp_path, pair):
    (one, cli1), (two, cli2), x = pair
    y = cli2.json(*write_args("Written on two", domain="ops"))
    assert cli2.json("sync")["pushed"]
    assert cli1.json("sync")["pulled"] == 1
    assert {x["id"], y["id"]} <= {e["id"] for e in cli1.json("list")["entries"]}
    assert cli1.json("verify")["ok"] and cli2.json("verify")["ok"]
