"""INDEX.md, index/<domain>.md and the catalog: incremental, rebuildable byte for byte."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import fewer, index_files, plant, remove_derived, write_args


def populate(cli, monkeypatch):
    ids = {}
    for day, domain, summary in [
        ("2026-01-05", "platform", "Use Postgres for the ledger"),
        ("2026-02-10", "platform", "Adopt Kubernetes for services"),
        ("2026-02-11", "security", "Rotate keys every 90 days"),
        ("2026-03-01", "ops", "Page on-call only for customer impact"),
    ]:
        monkeypatch.setenv("LLM_WIKI_NOW", day)
        ids[summary] = cli.json(*write_args(summary, domain=domain, tag=[domain]))["id"]
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-03-02")
    ids["new"] = cli.json(
        *write_args("Move the ledger to CockroachDB", supersedes=ids["Use Postgres for the ledger"])
    )["id"]
    cli.json("write", "--type", "incident", "--domain", "ops", "--summary", "Disk filled on db-1")
    return ids


def test_index_md_is_the_map(cli, wiki_path, monkeypatch):
    ids = populate(cli, monkeypatch)
    index = (wiki_path / "INDEX.md").read_text()
    assert "**6 entries**: 5 active · 1 superseded" in index
    assert "Types: 5 decision · 1 incident" in index
    assert "- [platform](index/platform.md) — 3 entries, 2 active, latest 2026-03-02" in index
    latest = index.split("## Latest")[1]
    assert latest.index(ids["new"]) < latest.index(ids["Use Postgres for the ledger"])
    domain = (wiki_path / "index/platform.md").read_text().splitlines()
    lines = [ln for ln in domain if ln.startswith("- ")]
    assert [ln.split(" ")[1] for ln in lines] == ["2026-03-02", "2026-02-10", "2026-01-05"]
    assert f"[{ids['new']}](../entries/2026/03/{ids['new']}.md)" in lines[0]
    assert "#platform" in lines[1]


def test_rebuild_from_scratch_gives_identical_bytes(cli, wiki_path, monkeypatch):
    populate(cli, monkeypatch)
    before = index_files(wiki_path)
    cli("index", "--check")
    remove_derived(wiki_path)
    cli("index")
    assert index_files(wiki_path) == before
    cli("index", "--check")


def test_a_big_domain_is_indexed_by_month(cli, wiki_path, monkeypatch):
    """Over SPLIT_AT entries (2 here), index/<domain>.md lists the months and each month's file
    holds its lines, so a write rewrites a small file; `index` from scratch gives the same bytes
    and `index --check` finds nothing stale. Back under it, the month files go."""
    from llm_wiki.catalog import index_md

    monkeypatch.setattr(index_md, "SPLIT_AT", 2)
    ids = populate(cli, monkeypatch)
    index = (wiki_path / "INDEX.md").read_text()
    assert "- [platform](index/platform.md) — 3 entries, 2 active, latest 2026-03-02" in index
    assert "A domain of over 2 entries lists its months instead" in index
    months = (wiki_path / "index/platform.md").read_text().splitlines()
    assert months[0] == "# Domain: platform"
    assert [ln for ln in months if ln.startswith("- ")] == [
        "- [2026-03](platform/2026-03.md) — 1 entry",
        "- [2026-02](platform/2026-02.md) — 1 entry",
        "- [2026-01](platform/2026-01.md) — 1 entry",
    ]
    march = (wiki_path / "index/platform/2026-03.md").read_text().splitlines()
    assert march[0] == "# Domain: platform, 2026-03"
    assert f"[{ids['new']}](../../entries/2026/03/{ids['new']}.md)" in march[4]
    january = (wiki_path / "index/platform/2026-01.md").read_text()
    assert f"**superseded by {ids['new']}**" in january  # the older month's file, spliced
    assert (wiki_path / "index/security.md").read_text().count("\n- ") == 1  # small: one file
    cli("index", "--check")
    before = index_files(wiki_path)
    remove_derived(wiki_path)
    cli("index")
    assert index_files(wiki_path) == before
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-03-03")
    shard = cli.json(*write_args("Shard the ledger", domain="platform"))
    assert (
        "- [2026-03](platform/2026-03.md) — 2 entries"
        in (wiki_path / "index/platform.md").read_text()
    )
    cli("index", "--check")
    for path in (shard["path"], f"entries/2026/02/{ids['Adopt Kubernetes for services']}.md"):
        (wiki_path / path).unlink()  # by hand: back to two entries
    cli("index")
    assert not (wiki_path / "index/platform").exists()
    assert (wiki_path / "index/platform.md").read_text().count("\n- ") == 2
    cli("index", "--check")


def test_check_reports_stale_files(cli, wiki_path, monkeypatch):
    populate(cli, monkeypatch)
    (wiki_path / "index/ops.md").write_text("stale\n")
    result = cli("index", "--check", code=1)
    assert "index/ops.md" in result.stdout
    (wiki_path / "index/typo.md").write_text("left over\n")
    assert "index/typo.md" in cli("index", "--check", code=1).stdout
    cli("index")
    cli("index", "--check")
    assert not (wiki_path / "index/typo.md").exists()


def test_catalog_follows_files_added_behind_its_back(cli, wiki_path, monkeypatch):
    """A file added by git (with its log line) is picked up by the next read."""
    ids = populate(cli, monkeypatch)
    src = wiki_path / f"entries/2026/03/{ids['new']}.md"
    other = wiki_path.parent / "other"
    shutil.copytree(wiki_path, other)
    from conftest import Cli

    Cli(other)(
        "write", "--type", "incident", "--domain", "ops", "--summary", "Found on the other machine"
    )
    # bring the other machine's new entry and its log line over, as git would
    new_files = set(p.relative_to(other) for p in (other / "entries").rglob("*.md")) - set(
        p.relative_to(wiki_path) for p in (wiki_path / "entries").rglob("*.md")
    )
    assert len(new_files) == 1
    rel = new_files.pop()
    (wiki_path / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(other / rel, wiki_path / rel)
    (wiki_path / "log.md").write_bytes((other / "log.md").read_bytes())
    listed = cli.json("list", "--domain", "ops")
    assert "Found on the other machine" in [e["summary"] for e in listed["entries"]]
    assert "Found on the other machine" in (wiki_path / "index/ops.md").read_text()
    cli("index", "--check")
    assert src.exists()


def test_index_reparses_only_changed_files(cli, wiki_path, monkeypatch):
    populate(cli, monkeypatch)
    first = cli.json("index")
    assert first["parsed"] == 0  # writes kept the catalog current
    shutil.rmtree(wiki_path / ".llm-wiki")
    assert cli.json("index")["parsed"] == 6


def test_index_lists_only_the_folders_that_changed(cli, wiki_path, monkeypatch):
    """A folder whose stat is as the last scan saw it (settled) is not listed again; a file
    added, removed or replaced in a folder moves its mtime, and the next index reads it."""
    import importlib

    import llm_wiki.store as store

    refresh = importlib.import_module("llm_wiki.catalog.refresh")  # (the package's refresh())

    ids = populate(cli, monkeypatch)
    monkeypatch.setattr(refresh, "FOLDER_SETTLED_NS", 0)  # this test's folders settle at once
    listed: list[str] = []
    month_files = store.month_files

    def counted(path, **kwargs):
        listed.append(os.path.basename(path))
        return month_files(path, **kwargs)

    monkeypatch.setattr(store, "month_files", counted)
    cli("index")  # lists each folder once more, now that they have settled
    listed.clear()

    def index(changed):
        result = cli.json("index")
        assert sorted(listed) == changed
        listed.clear()
        return result

    assert index([])["parsed"] == 0
    time.sleep(0.05)  # past the filesystem's clock tick: the folders' mtimes move
    fields = {"type": "decision", "domain": "ops", "summary": "Planted by hand"}
    plant(wiki_path, "2026-02-20-planted-abcd", "2026-02-20", fields)
    assert index(["02"])["parsed"] == 1
    assert "Planted by hand" in (wiki_path / "index/ops.md").read_text()
    time.sleep(0.05)
    (wiki_path / f"entries/2026/02/{ids['Rotate keys every 90 days']}.md").unlink()
    assert index(["02"])["removed"] == 1
    time.sleep(0.05)
    path = wiki_path / f"entries/2026/03/{ids['new']}.md"
    tmp = path.with_name(".saving")
    tmp.write_text(path.read_text().replace("CockroachDB", "Spanner"))
    os.replace(tmp, path)  # an editor's save: a new file renamed over the old one
    assert index(["03"])["parsed"] == 1
    assert "Spanner" in (wiki_path / "index/platform.md").read_text()
    assert index([])["parsed"] == 0
    cli("index", "--check")


def test_an_entry_rewritten_in_place_is_reported_by_check_with_the_fix(cli, wiki_path, monkeypatch):
    """A file rewritten in place (same inode) leaves its folder's stat as it was, so a scan
    that trusts the settled folder does not see it; `index --check` does, and says to run
    `index --full`, after which the catalog and index files match the files again."""
    import importlib

    ids = populate(cli, monkeypatch)
    monkeypatch.setattr(importlib.import_module("llm_wiki.catalog.refresh"), "FOLDER_SETTLED_NS", 0)
    cli("index")  # the folders are signed as settled
    path = wiki_path / f"entries/2026/02/{ids['Adopt Kubernetes for services']}.md"
    path.chmod(0o644)
    with open(path, "r+") as fh:  # in place: no new file, no rename
        text = fh.read().replace("Adopt Kubernetes", "Adopt Nomad")
        fh.seek(0)
        fh.write(text)
        fh.truncate()
    assert cli.json("index")["parsed"] == 0  # as DESIGN.md says: the folder vouches for it
    result = cli("index", "--check", code=1)
    assert "Stale (run `llm-wiki index --full`)" in result.stdout
    assert ".llm-wiki/catalog.sqlite3" in result.stdout
    assert cli.json("index", "--full")["parsed"] == 6
    assert "Adopt Nomad" in (wiki_path / "index/platform.md").read_text()
    cli("index", "--check")


def test_unparseable_file_is_reported_not_fatal(cli, wiki_path, monkeypatch):
    populate(cli, monkeypatch)
    bad = wiki_path / "entries/2026/03/broken.md"
    bad.write_text("no frontmatter here\n")
    result = cli("index")
    assert "broken.md" in result.stderr and "unreadable entry skipped" in result.stderr
    assert cli.json("stats")["entries"] == 6


@pytest.mark.parametrize("walls", [False, True])
def test_a_synced_entry_cannot_point_index_files_outside_the_wiki(cli, wiki_path, walls):
    """Entry files arrive by git and by hand, past write's checks; their domain and scope name
    index files, so a name like ../../x must not reach the disk (it overwrote <parent>/x.md)."""
    if walls:
        (wiki_path / "access.yaml").write_text("readers:\n  root:\n    admin: true\n")
    plant(
        wiki_path,
        "x-1",
        "2026-01-02",
        {"type": "incident", "domain": '"../../outside"', "summary": "pulled from a teammate"},
    )
    plant(
        wiki_path,
        "x-2",
        "2026-01-03",
        {
            "type": "incident",
            "domain": "ops",
            "scope": '"../../elsewhere"',
            "summary": "pulled too",
        },
    )
    before = sorted(p.name for p in wiki_path.parent.iterdir())
    result = cli("index")
    assert sorted(p.name for p in wiki_path.parent.iterdir()) == before
    assert "its domain '../../outside' is not lowercase" in result.stderr
    assert "its scope '../../elsewhere' is not lowercase" in result.stderr
    assert cli.json("list", *(["--as", "root"] if walls else []))["total"] == 0
    cli("index", "--check")


def test_a_synced_entry_with_a_binary_field_does_not_break_every_read(cli, wiki_path):
    """The catalog stores extra fields as JSON; YAML's !!binary has no JSON form, and one such
    file made every read (list, show, index) die with a traceback."""
    cli(*write_args())
    fields = {"type": "incident", "domain": "ops", "summary": "s", "blob": "!!binary aGVsbG8="}
    plant(wiki_path, "x-1", "2026-01-02", fields)
    assert "Use Postgres" in cli("list").stdout
    indexed = cli("index")
    assert "x-1.md: unreadable entry skipped" in indexed.stderr and "'blob' holds" in indexed.stderr
    assert cli.json("stats")["entries"] == 1


def test_list_filters(cli, monkeypatch):
    ids = populate(cli, monkeypatch)
    assert cli.json("list", "--tag", "security")["total"] == 1
    assert cli.json("list", "--type", "incident")["total"] == 1
    assert cli.json("list", "--since", "2026-02-11", "--until", "2026-03-01")["total"] == 2
    assert [e["id"] for e in cli.json("list", "--status", "superseded")["entries"]] == [
        ids["Use Postgres for the ledger"]
    ]
    page = cli.json("list", "--limit", "2", "--offset", "2")
    assert page["total"] == 6 and len(page["entries"]) == 2
    text = cli("list", "--limit", "2").stdout
    assert "4 more" in text
    for flag, value in (("--since", "2026-13-01"), ("--until", "yesterday")):
        result = cli("list", flag, value, code=2)  # not a silent "No entries match."
        assert (
            result.stderr
            == f"Error: {flag} {value!r} is not an ISO date; use YYYY-MM-DD, e.g. 2026-05-02.\n"
        )


def test_actor_filter(cli):
    cli(*write_args(actor=["alice", "bob"]))
    cli(*write_args("Second", actor=["bob"]))
    assert cli.json("list", "--actor", "alice")["total"] == 1
    assert cli.json("list", "--actor", "bob")["total"] == 2


def test_stats(cli, monkeypatch):
    populate(cli, monkeypatch)
    stats = cli.json("stats")
    assert stats["entries"] == 6
    assert stats["by_status"] == {"active": 5, "superseded": 1}
    assert stats["by_domain"] == {"ops": 2, "platform": 3, "security": 1}
    assert "6 entries" in cli("stats").stdout


# Domain files are spliced on a write (index_md._splice), not rendered: the same bytes, by property.
_SPLICE_SUMMARIES = ["Use Postgres", "See [the RFC](https://x.test/rfc) first", "Zebra", "alpha"]


@st.composite
def write_plans(draw):
    """A few writes: domain, day, scope, status, summary, and which earlier write each
    supersedes (same scope only, as write requires)."""
    plan = []
    for i in range(draw(st.integers(1, 9))):
        scope = draw(st.sampled_from(["shared", "team"]))
        earlier = [j for j, p in enumerate(plan) if p["scope"] == scope]
        plan.append(
            {
                "domain": draw(st.sampled_from(["ops", "data"])),
                "date": draw(st.sampled_from(["2026-01-01", "2026-01-02", "2025-12-31"])),
                "scope": scope,
                "status": draw(st.sampled_from(["active", "active", "proposed"])),
                "summary": f"{draw(st.sampled_from(_SPLICE_SUMMARIES))} {i}",
                "supersedes": draw(st.sets(st.sampled_from(earlier), max_size=2))
                if earlier
                else set(),
            }
        )
    return plan


@settings(
    max_examples=fewer(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(plan=write_plans(), walls=st.booleans(), split_at=st.sampled_from([None, 1, 3]))
def test_spliced_domain_files_equal_a_render(tmp_path_factory, plan, walls, split_at):
    """Also with a domain indexed by month (``split_at``: a small SPLIT_AT), crossing it."""
    from llm_wiki.access import Viewer
    from llm_wiki.catalog import index_md, read_catalog
    from llm_wiki.create import init_wiki
    from llm_wiki.entries import Entry
    from llm_wiki.wiki import Wiki
    from llm_wiki.write import write_entry

    root = tmp_path_factory.mktemp("splice") / "wiki"
    init_wiki(root)
    if walls:
        (root / "access.yaml").write_text("readers:\n  root:\n    admin: true\n")
    wiki = Wiki(root)
    ids: list[str] = []
    renders = []
    real_render, real_split = index_md._render_domain, index_md.SPLIT_AT
    split_at = real_split if split_at is None else split_at
    sizes: dict[tuple[str | None, str], int] = {}

    def counting(*args, **kwargs):
        renders.append(args[2])
        return real_render(*args, **kwargs)

    index_md._render_domain = counting
    index_md.SPLIT_AT = split_at
    try:
        for step in plan:
            entry = Entry(
                id="",
                type="incident",
                date=step["date"],
                summary=step["summary"],
                domain=step["domain"],
                scope=step["scope"],
                status=step["status"],
                supersedes=tuple(ids[j] for j in sorted(step["supersedes"])),
            )
            base = root / "indexes" / step["scope"] if walls else root
            n = sizes.get((step["scope"] if walls else None, step["domain"]), 0)
            sizes[(step["scope"] if walls else None, step["domain"])] = n + 1
            if n + 1 <= split_at:
                holder = base / "index" / f"{step['domain']}.md"
            else:  # indexed by month: the line goes in its month's file
                holder = base / "index" / step["domain"] / f"{step['date'][:7]}.md"
            existed = holder.exists() and (n <= split_at) == (n + 1 <= split_at)
            i = len(ids)
            links = [p["summary"] for p in plan[: i + 1]]  # a line holding a link: rendered
            renders.clear()
            ids.append(write_entry(wiki, entry, viewer=Viewer.everyone()).id)
            rendered_by_write = list(renders)
            with read_catalog(wiki) as catalog:
                for rel, text in index_md.expected_files(catalog):
                    assert (root / rel).read_text() == text, rel
            if existed and not any("](" in text for text in links):
                assert step["domain"] not in rendered_by_write  # spliced, not rendered
        before = {
            p.relative_to(root): p.read_bytes() for p in root.rglob("*.md") if "ndex" in str(p)
        }
        for derived in (".llm-wiki", "index", "indexes"):
            shutil.rmtree(root / derived, ignore_errors=True)
        (root / "INDEX.md").unlink(missing_ok=True)
        from llm_wiki.catalog import rebuild_index

        rebuild_index(wiki)
        after = {
            p.relative_to(root): p.read_bytes() for p in root.rglob("*.md") if "ndex" in str(p)
        }
        assert after == before
    finally:
        index_md._render_domain, index_md.SPLIT_AT = real_render, real_split


@pytest.mark.parametrize("walls", [False, True])
def test_index_sweeps_what_killed_index_writes_left_in_every_index_folder(
    cli, wiki_path, monkeypatch, walls
):
    """A write killed while it replaced an index file leaves its temp file beside it; `index`
    removes those over an hour old, in each scope's folders under walls as at the root."""
    from llm_wiki.catalog import index_md

    monkeypatch.setattr(index_md, "SPLIT_AT", 2)
    as_root = []
    if walls:
        (wiki_path / "access.yaml").write_text("readers:\n  root:\n    admin: true\n")
        as_root = ["--as", "root"]
    for day in ("2026-01-05", "2026-02-10", "2026-03-01"):
        monkeypatch.setenv("LLM_WIKI_NOW", day)
        cli(*write_args(f"Decision of {day}", scope="team"), *as_root)
    base = wiki_path / "indexes" / "team" if walls else wiki_path
    assert (base / "index" / "platform" / "2026-03.md").exists()  # indexed by month
    hour_ago = time.time() - 2 * 3600
    left = [
        base / ".INDEX.md.4242.0123456789ab.tmp",
        base / "index" / ".platform.md.4242.0123456789ab.tmp",
        base / "index" / "platform" / ".2026-03.md.4242.0123456789ab.tmp",
    ]
    for path in left:
        path.write_text("half an index file\n")
        os.utime(path, (hour_ago, hour_ago))
    cli("index", *as_root)
    assert [p.name for p in left if p.exists()] == []
    cli("index", "--check", *as_root)


def test_index_says_when_it_takes_in_an_entry_edited_by_hand(cli, wiki_path):
    """The catalog follows the files, so an edit by hand goes into INDEX.md and answers: index
    names it (verify says more) instead of publishing it without a word."""
    entry_id = cli.json(*write_args("The nightly ledger report runs at 02:00"))["id"]
    (path,) = wiki_path.glob(f"entries/*/*/{entry_id}.md")
    os.chmod(path, 0o644)
    path.write_text(path.read_text().replace("runs at 02:00", "was fine"))
    assert [u["id"] for u in cli.json("index")["unlogged"]] == [entry_id]
    path.write_text(path.read_text().replace("was fine", "was fine, really"))
    said = cli("index").stderr
    assert f"warning: {entry_id} (entries/" in said and "`llm-wiki verify` says more" in said
    assert cli.json("index")["unlogged"] == []  # nothing read again: nothing to say
    cli(*write_args("Written through the tool"))
    assert cli.json("index", "--full")["unlogged"] == [
        {"id": entry_id, "path": str(path.relative_to(wiki_path))}
    ]
