"""`llm-wiki sync`: two clones that both write and both archive replicate through a bare git
repository without a merge conflict; the catalog notices a log.md that git merged."""

from __future__ import annotations

import subprocess

import pytest

from conftest import Cli, git, write_args

pytestmark = pytest.mark.usefixtures("git_identity")  # commits need an author (conftest)


@pytest.fixture
def origin(tmp_path, monkeypatch):
    """A bare repository holding a wiki with two decisions, each superseded in January."""
    return make_origin(tmp_path, monkeypatch)


def make_origin(tmp_path, monkeypatch):
    """``origin`` in ``tmp_path``: returns (the bare repository, the two decisions' ids)."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(bare))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "--quiet", str(bare), str(seed))
    cli = Cli(seed)
    cli("init", str(seed))
    git(seed, "add", "-A")
    git(seed, "commit", "--quiet", "-m", "Start the wiki")
    ids = {}
    for name, (old_day, new_day) in {
        "a": ("2026-01-05", "2026-01-10"),
        "b": ("2026-01-06", "2026-02-01"),
    }.items():
        monkeypatch.setenv("LLM_WIKI_NOW", old_day)
        ids[name] = cli.json(*write_args(f"Decision {name}"))["id"]
        monkeypatch.setenv("LLM_WIKI_NOW", new_day)
        cli(*write_args(f"Decision {name}, revised", supersedes=ids[name]))
    out = cli("sync").stdout
    assert "Committed 5 files" in out and "Pushed to origin/main." in out
    return bare, ids


def clone(tmp_path, bare, name):
    path = tmp_path / name
    git(tmp_path, "clone", "--quiet", str(bare), str(path))
    return path, Cli(path)


def all_ids(cli):
    return sorted(e["id"] for e in cli.json("list", "--limit", "1000")["entries"])


def test_two_clones_write_and_archive_then_sync_without_conflict(tmp_path, origin, monkeypatch):
    bare, ids = origin
    one, cli1 = clone(tmp_path, bare, "one")
    two, cli2 = clone(tmp_path, bare, "two")

    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-15")  # both a and b are due here
    x = cli1.json(*write_args("Written on machine one", domain="ops"))["id"]
    first = cli1.json("archive")
    assert sorted(first["archived"]) == sorted(ids.values())
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-04-20")  # only a is due here
    y = cli2.json(*write_args("Written on machine two", domain="ops"))["id"]
    second = cli2.json("archive")
    assert second["archived"] == [ids["a"]] and second["archive"] != first["archive"]

    assert cli1.json("sync")["pushed"]
    two_sync = cli2.json("sync")
    assert two_sync["pulled"] == 1 and two_sync["pushed"]
    assert cli1.json("sync")["pulled"] == 1

    expected = sorted([*all_ids(cli1)])
    assert len(expected) == 6 and {x, y, *ids.values()} <= set(expected)
    for path, cli in ((one, cli1), (two, cli2)):
        assert all_ids(cli) == expected
        assert cli.json("verify")["ok"]
        cli("index", "--check")
        for entry_id in ids.values():
            assert cli.json("show", entry_id)["archive"].startswith("archive/2026-0")
        assert cli.json("stats")["archived"] == 2
        assert sorted(p.name for p in (path / "archive").iterdir()) == sorted(
            [first["archive"][8:], second["archive"][8:]]
        )
        assert git(path, "status", "--porcelain") == ""  # nothing unmerged, nothing left over
        assert "<<<<<<<" not in (path / "log.md").read_text()
        assert git(path, "ls-files", "INDEX.md", "index", ".llm-wiki") == ""  # never merged
        assert (path / "INDEX.md").exists()
    assert (one / "log.md").read_bytes() == (two / "log.md").read_bytes()
    log = (one / "log.md").read_text()
    assert log.count(" archive ") == 3 and f" write {x} " in log and f" write {y} " in log
    assert oct((two / f"entries/2026/05/{x}.md").stat().st_mode & 0o777) == "0o444"
    assert cli2.json("sync")["committed"] == 0  # a second sync has nothing to do


def test_the_catalog_notices_a_log_md_that_git_merged(tmp_path, origin, monkeypatch):
    bare, _ = origin
    one, cli1 = clone(tmp_path, bare, "one")
    two, cli2 = clone(tmp_path, bare, "two")
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-03-01")
    x = cli1.json(*write_args("Written on machine one", domain="ops"))["id"]
    cli1("sync")
    y = cli2.json(*write_args("Written on machine two", domain="ops"))["id"]
    assert x not in all_ids(cli2)  # the catalog is fresh and has seen its own log
    seen = (two / "log.md").read_bytes()
    git(two, "add", "-A")
    git(two, "commit", "--quiet", "-m", "by hand")
    git(two, "pull", "--quiet", "--rebase")  # git alone: the tool is not told
    merged = (two / "log.md").read_bytes()
    assert not merged.startswith(seen)  # a union, not an append of what two had
    assert f" write {x} ".encode() in merged and f" write {y} ".encode() in merged
    assert {x, y} <= set(all_ids(cli2))
    cli2("index", "--check")
    assert cli2.json("verify")["ok"]


def test_sync_needs_git_and_a_union_merged_log(tmp_path, cli, wiki_path):
    result = cli("sync", code=1)
    assert "not in a git repository" in result.stderr and "git init" in result.stderr
    git(wiki_path, "init", "--quiet", "-b", "main")
    assert "commit it once" in cli("sync", code=1).stderr
    git(wiki_path, "add", "-A")
    git(wiki_path, "commit", "--quiet", "-m", "Start the wiki")
    cli(*write_args())
    out = cli("sync").stdout
    assert "No git remote: committed locally only" in out
    assert git(wiki_path, "status", "--porcelain") == ""
    # the hourly job's check: committed, but nothing replicated is a failure it reports
    cli(*write_args("Another decision"))
    job = cli("sync", "--require-remote", code=1)
    assert "Committed" in job.stdout and git(wiki_path, "status", "--porcelain") == ""
    assert job.stderr.count("\n") == 1 and "no git remote" in job.stderr
    assert "git remote add" in job.stderr
    (wiki_path / ".gitattributes").write_text("")
    assert "log.md must merge as a union" in cli("sync", code=1).stderr
    (wiki_path / ".gitattributes").write_text("log.md merge=union\n")
    assert "entries/** -text" in cli("sync", code=1).stderr


def test_git_line_ending_settings_never_change_an_entry(tmp_path, origin):
    """log.md keeps each entry's sha256 as written. A clone with core.autocrlf=input turned a
    body's CRLF into LF on commit, and one with core.autocrlf=true turns every LF into CRLF on
    checkout: every other clone's verify then called those entries edited."""
    bare, _ = origin
    one, cli1 = clone(tmp_path, bare, "one")
    git(one, "config", "core.autocrlf", "input")
    note = tmp_path / "note.md"
    note.write_bytes(b"---\ntype: incident\ndomain: ops\nsummary: Disk full\n---\nA\r\nB\r\n")
    written = cli1.json("write", "--from", str(note))
    assert cli1.json("sync")["pushed"]
    two = tmp_path / "two"
    git(tmp_path, "clone", "--quiet", "-c", "core.autocrlf=true", str(bare), str(two))
    cli2 = Cli(two)
    cli2("index")
    assert cli2.json("verify")["ok"] and cli2.json("verify")["checked"] == 5
    assert (two / written["path"]).read_bytes() == (one / written["path"]).read_bytes()
    assert b"A\r\nB" in (two / written["path"]).read_bytes()


def test_a_pull_that_stops_leaves_no_rebase_behind_from_any_directory(tmp_path, origin):
    """Run with --wiki from another directory, a stopped pull left the clone mid-rebase (git
    gave the rebase path relative to the wiki, the code looked for it from its own directory),
    and the next sync failed with an empty message."""
    bare, _ = origin
    one, cli1 = clone(tmp_path, bare, "one")
    two, cli2 = clone(tmp_path, bare, "two")
    for path, line in ((one, "mine-one\n"), (two, "mine-two\n")):
        with open(path / ".gitignore", "a") as f:
            f.write(line)
    assert cli1.json("sync")["pushed"]
    for _ in range(2):  # the second sync meets the same clean state
        result = cli2("sync", code=1)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: git pull from origin stopped")
        assert "git pull --rebase" in result.stderr
        assert not (two / ".git" / "rebase-merge").exists()
        assert not (two / ".git" / "rebase-apply").exists()
        assert git(two, "status", "--porcelain") == ""


def test_sync_says_so_when_a_rebase_is_in_progress(tmp_path, origin):
    bare, _ = origin
    one, cli1 = clone(tmp_path, bare, "one")
    two, cli2 = clone(tmp_path, bare, "two")
    for path, line in ((one, "mine-one\n"), (two, "mine-two\n")):
        with open(path / ".gitignore", "a") as f:
            f.write(line)
        git(path, "commit", "--quiet", "-am", "local change")
    assert cli1.json("sync")["pushed"]
    proc = subprocess.run(["git", "pull", "--rebase"], cwd=two, capture_output=True, text=True)
    assert proc.returncode != 0  # a person's own pull stopped on the conflict
    result = cli2("sync", code=1)
    assert result.stderr.startswith("Error: a git rebase is in progress in ")
    assert "git rebase --continue" in result.stderr and "git rebase --abort" in result.stderr


def test_an_unreachable_remote_says_the_commit_is_kept(tmp_path, origin):
    bare, _ = origin
    one, cli1 = clone(tmp_path, bare, "one")
    git(one, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    cli1(*write_args("Written while the remote is away"))
    result = cli1("sync", code=1)
    head = git(one, "rev-parse", "HEAD").strip()
    assert result.stderr.count("\n") == 1 and "could not reach origin" in result.stderr
    assert f"This sync committed {head[:12]} locally; it is kept." in result.stderr


def test_a_clone_of_a_fresh_wiki_is_a_wiki(tmp_path):
    """git keeps no empty folder, so a clone of a wiki with no entry yet had no entries/ and
    every command called it 'not a wiki'."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(bare))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "--quiet", str(bare), str(seed))
    Cli(seed)("init", str(seed))
    git(seed, "add", "-A")
    git(seed, "commit", "--quiet", "-m", "Start the wiki")
    git(seed, "push", "--quiet", "origin", "main")
    path, cli = clone(tmp_path, bare, "fresh")
    assert not (path / "entries").exists()
    assert cli.json("list")["entries"] == []
    assert cli.json("verify")["ok"]
    cli("lint")
    written = cli.json(*write_args())
    assert (path / written["path"]).is_file()
    assert cli.json("sync")["pushed"]
    assert Cli(seed).json("sync")["pulled"] == 1
