"""A deletion or an edit must not spread (issue 13, item 1): every log.md line a clone has seen
stays byte for byte in every later log; sync refuses to commit, push or take in history that
drops or rewrites a line, or carries an entry whose bytes differ from its logged sha256, and
says which. verify proves what git history allows. Each test: a bare repository, two clones."""

from __future__ import annotations

import hashlib
import os
import shutil

import pytest

from conftest import Cli, git, write_args
from test_sync import clone, make_origin

pytestmark = pytest.mark.usefixtures("git_identity")  # commits need an author (conftest)


@pytest.fixture(scope="module")
def _built_pair() -> dict:
    return {}


@pytest.fixture
def pair(tmp_path, monkeypatch, tmp_path_factory, _built_pair):
    """origin.git, its seed and two clones of it in ``tmp_path``, the first clone's write synced
    to the second. Built once for the module (git and sync take half a second), then copied into
    each test's ``tmp_path`` with the clones' remote pointed at the copy of origin.git."""
    if not _built_pair:
        root = tmp_path_factory.mktemp("pair")
        bare, _ = make_origin(root, monkeypatch)
        _, cli1 = clone(root, bare, "one")
        _, cli2 = clone(root, bare, "two")
        monkeypatch.setenv("LLM_WIKI_NOW", "2026-03-01")
        x = cli1.json(*write_args("Keep the ledger in Postgres", domain="ledger"))
        assert cli1.json("sync")["pushed"]
        assert cli2.json("sync")["pulled"] == 1
        _built_pair.update(root=root, x=x)
    root = _built_pair["root"]
    shutil.copytree(root, tmp_path, symlinks=True, dirs_exist_ok=True)
    for name in ("seed", "one", "two"):
        config = tmp_path / name / ".git" / "config"
        text = config.read_text()
        assert str(root / "origin.git") in text
        config.write_text(text.replace(str(root / "origin.git"), str(tmp_path / "origin.git")))
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-03-01")
    one, two = tmp_path / "one", tmp_path / "two"
    return (one, Cli(one)), (two, Cli(two)), dict(_built_pair["x"])


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


# ----------------------------------------------------------------- every tamper kind, every door
# Each kind of tamper in issue 13's list, made on clone one: verify there finds it, sync there
# refuses to commit it; pushed with plain git, the other clone's sync refuses to take it in (and
# keeps its own copy), and a fresh clone's verify finds it from git history alone.


def _forge_archive(root, cli, monkeypatch, x):
    import io
    import tarfile

    import zstandard

    monkeypatch.setenv("LLM_WIKI_NOW", "2026-03-02")
    cli(*write_args("Keep the ledger in Postgres 16", domain="ledger", supersedes=x["id"]))
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-09-01")
    archived = cli.json("archive")
    assert cli.json("sync")["pushed"]
    path = root / archived["archive"]
    raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(path.read_bytes())).read()
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(raw)) as src, tarfile.open(fileobj=out, mode="w") as tar:
        for info in src.getmembers():
            data = src.extractfile(info).read().replace(b"Postgres", b"MySQL!!!")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    os.chmod(path, 0o644)
    path.write_bytes(zstandard.ZstdCompressor().compress(out.getvalue()))
    return {"archive-mismatch", "unreadable-archive"}


def _tamper(kind, root, cli, monkeypatch, x):
    """Make one kind of tamper on clone ``root``; the finding kinds verify may report."""
    if kind == "deletion":
        _drop_entry_and_its_line(root, x)
        return {"dropped-line"}
    if kind == "edit":
        _edit(root, x, "Postgres", "MySQL")
        return {"edited", "rewritten"}
    if kind == "edit-and-sha":
        new_sha = _edit(root, x, "Postgres", "MySQL")
        log = root / "log.md"
        log.write_text(log.read_text().replace(x["sha256"], new_sha))
        return {"dropped-line", "rewritten"}
    assert kind == "forged-archive"
    return _forge_archive(root, cli, monkeypatch, x)


KINDS = ("deletion", "edit", "edit-and-sha", "forged-archive")


@pytest.mark.parametrize("kind", KINDS)
def test_each_tamper_is_found_locally_and_not_committed(tmp_path, pair, monkeypatch, kind):
    (one, cli1), _, x = pair
    expected = _tamper(kind, one, cli1, monkeypatch, x)
    head = _pushed_head(tmp_path)
    found = {f["kind"] for f in cli1.json("verify", code=1)["findings"]}
    assert found and found <= expected, found
    result = cli1("sync", code=1)
    assert result.stderr.startswith("Error: refusing to commit: the record is not intact (")
    assert _pushed_head(tmp_path) == head


@pytest.mark.parametrize("kind", KINDS)
def test_each_tamper_pushed_with_plain_git_is_refused_and_found_from_history(
    tmp_path, pair, monkeypatch, kind
):
    (one, cli1), (two, cli2), x = pair
    expected = _tamper(kind, one, cli1, monkeypatch, x)
    if kind == "forged-archive":
        cli2("sync")  # two holds the genuine archive before the forgery goes out
    before = {
        p.relative_to(two).as_posix(): p.read_bytes()
        for p in two.rglob("*")
        if p.is_file() and ".git" not in p.parts and ".llm-wiki" not in p.parts
    }
    git(one, "add", "-A")
    git(one, "commit", "--quiet", "-m", "tidy up")
    git(one, "push", "--quiet", "origin", "HEAD:main")
    # The clone that did it: its own record proves it.
    assert {f["kind"] for f in cli1.json("verify", code=1)["findings"]} & expected
    # The clone that pulls: refuses, names the entry or archive, keeps its files as they were.
    result = cli2("sync", code=1)
    assert result.stderr.startswith("Error: refusing what origin/main holds")
    assert x["id"] in result.stderr or "archive" in result.stderr
    after = {
        p.relative_to(two).as_posix(): p.read_bytes()
        for p in two.rglob("*")
        if p.is_file() and ".git" not in p.parts and ".llm-wiki" not in p.parts
    }
    assert {
        k: v for k, v in after.items() if k not in ("INDEX.md",) and not k.startswith("index/")
    } == {k: v for k, v in before.items() if k not in ("INDEX.md",) and not k.startswith("index/")}
    cli2("verify")
    # A fresh clone, which never saw the line: git history alone proves it.
    fresh, cli3 = clone(tmp_path, tmp_path / "origin.git", "fresh")
    found = {f["kind"] for f in cli3.json("verify", code=1)["findings"]}
    assert found & expected, found


def test_what_no_local_check_can_prove_an_entry_added_with_its_own_log_line(tmp_path, pair):
    """An entry written by hand, with a log line whose sha256 matches, is indistinguishable from
    one the tool wrote: verify is clean and sync replicates it (DESIGN.md, 'What verify can
    prove'). This test pins that limit so a change to it is seen."""
    (one, cli1), (two, cli2), x = pair
    src = (one / x["path"]).read_text().replace("Keep the ledger in Postgres", "Forged")
    forged_id = x["id"][:-4] + "beef"
    src = src.replace(x["id"], forged_id)
    path = one / x["path"].replace(x["id"], forged_id)
    path.write_text(src)
    os.chmod(path, 0o444)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    log = one / "log.md"
    line = next(ln for ln in log.read_text().splitlines() if x["id"] in ln)
    log.write_text(
        log.read_text() + line.replace(x["id"], forged_id).replace(x["sha256"], sha) + "\n"
    )
    assert cli1.json("verify")["ok"]
    assert cli1.json("sync")["pushed"]
    assert cli2.json("sync")["pulled"] == 1
    assert forged_id in {e["id"] for e in cli2.json("list")["entries"]}
