"""`llm-wiki site`: what the built folder holds, that it is the same bytes every time, that a
rebuild after one write renders only what that write touched, walls, the Obsidian notes, --serve.

What a person sees in a browser is tested in tests/test_site_browser.py; the walls property (random
wikis, every generated file scanned) in tests/test_site_walls.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import REPO, index_files, remove_derived, subprocess_env, write_args

EXAMPLE = REPO / "llm-wiki"
OLD = "2026-04-02-ledger-postgres"
NEW = "2026-06-15-move-the-ledger-to-a-single-postings-table-partitioned-by-c75c"


@pytest.fixture
def example(tmp_path):
    """A copy of the example wiki (a site build writes graph/ notes into the wiki)."""
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".llm-wiki", "graph"))
    return root


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def build(cli, *args):
    return cli.json("site", *args)


def test_the_example_site_has_every_surface_and_the_same_bytes_every_time(example, tmp_path):
    from conftest import Cli

    cli = Cli(example)
    first = build(cli, "--out", str(tmp_path / "a"))
    assert first["entries"] == 7 and first["reader"] == ""
    site = tree(tmp_path / "a")
    for page in (
        "index.html",
        "search.html",
        "domains/index.html",
        "domains/ledger.html",
        "tags/database.html",
        "actors/tomas.html",
        f"entries/{OLD}.html",
        "inspector/index.html",
        "inspector/log-2026-06.html",
        "search/2026-06.js",
        "assets/minisearch.js",
        "assets/minisearch-LICENSE.txt",
    ):
        assert page in site, page
    assert sorted(first["written"]) == sorted(p for p in site if p != ".site-manifest.json")
    # same wiki, same reader: the same bytes, in another folder or again in the same one
    build(cli, "--out", str(tmp_path / "b"))
    assert tree(tmp_path / "b") == site
    again = build(cli, "--out", str(tmp_path / "a"))
    assert again["written"] == [] and again["removed"] == []
    assert tree(tmp_path / "a") == site
    text = site[f"entries/{OLD}.html"].decode()
    assert "Superseded." in text and f'href="../entries/{NEW}.html"' in text
    # nothing is loaded from outside the folder: no absolute URL in any src or stylesheet
    for name, data in site.items():
        if name.endswith(".html"):
            assert not re.search(rb'(src|href)="(https?:)?//', data), name


def test_a_build_past_its_kept_bytes_reads_the_rest_again_and_shows_the_same(
    example, tmp_path, monkeypatch
):
    """An entry page shows the bytes verify read of its file while the build keeps them
    (HashCache.KEEP in all, so a big archive's build holds a bounded share); past that, the
    page reads the file again: the same site either way."""
    import llm_wiki
    from llm_wiki.verify import HashCache

    llm_wiki.open(example).site(tmp_path / "kept", full=True)
    monkeypatch.setattr(HashCache, "KEEP", 3000)  # a file or two, then none
    llm_wiki.open(example).site(tmp_path / "reread", full=True)
    manifest = ".site-manifest.json"  # names the code, the same in both
    kept, reread = tree(tmp_path / "kept"), tree(tmp_path / "reread")
    assert {k: v for k, v in kept.items() if k != manifest} == {
        k: v for k, v in reread.items() if k != manifest
    }


def test_the_default_folder_is_local_state_and_the_text_says_where(example):
    from conftest import Cli

    result = Cli(example)("site")
    out = example / ".llm-wiki" / "site"
    assert f"in {out}" in result.stdout and f"Open file://{out}/index.html" in result.stdout
    assert (out / "index.html").is_file()


def test_a_link_between_imported_adrs_goes_to_the_entry_of_that_file(cli, tmp_path):
    """An ADR's relative link to another record of its folder leads to the entry imported from
    it, resolved from the linking record's own folder: a file of the same name in another
    repository never takes the link."""
    repo = tmp_path / "moj"
    shutil.copytree(REPO / "tests/data/corpora/ministryofjustice__cloud-platform", repo)
    other = tmp_path / "other"
    other.mkdir()
    (other / "003-Use-Concourse-CI.md").write_text(
        "# 3. Use Concourse CI\n\nDate: 2017-01-01\n\n## Status\n\nAccepted\n\n"
        "## Context\n\nAnother repository's record of the same name.\n"
    )
    cli("import-adr", str(other), "--domain", "other")
    cli("import-adr", str(repo), "--domain", "cloud-platform")
    build(cli, "--out", str(tmp_path / "s"))
    site = tmp_path / "s" / "entries"
    [page] = site.glob("*-support-deployments-from-third-party-ci-*.html")
    [target] = [p for p in site.glob("*-use-concourse-ci-*.html") if "2017-01-01" not in p.name]
    html = page.read_text()
    assert f'<a href="../entries/{target.name}">is transitioning to Concourse CI</a>' in html


def test_a_gh_pages_checkout_is_a_folder_to_build_in_and_its_git_is_left_alone(cli, tmp_path):
    """A folder holding only hidden names (.git, .nojekyll) takes a site; they are never
    removed, even by the clean-up after a build that died half-way."""
    cli(*write_args("Publish the site from a gh-pages checkout"))
    out = tmp_path / "gh-pages"
    (out / ".git" / "refs" / "heads").mkdir(parents=True)
    (out / ".git" / "refs" / "tags").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/gh-pages\n")
    (out / ".nojekyll").write_text("")
    build(cli, "--out", str(out))
    assert (out / "index.html").is_file()
    (out / ".site-building").touch()  # as a build that died leaves it
    build(cli, "--out", str(out))
    assert (out / ".git" / "HEAD").read_text() == "ref: refs/heads/gh-pages\n"
    assert (out / ".git" / "refs" / "tags").is_dir() and (out / ".nojekyll").is_file()
    other = tmp_path / "other"
    (other / "notes").mkdir(parents=True)
    assert "holds no llm-wiki site" in cli("site", "--out", str(other), code=2).stderr


def test_a_bodys_link_to_one_of_its_headings_lands(cli, tmp_path):
    body = "See [the sizes](#node-instance-types).\n\n## Node instance types\n\nm5.large.\n"
    cli(*write_args("Pick node sizes", body=body))
    build(cli, "--out", str(tmp_path / "s"))
    [page] = (tmp_path / "s" / "entries").glob("*.html")
    html = page.read_text()
    assert '<a href="#node-instance-types">the sizes</a>' in html
    assert '<h2 id="node-instance-types">Node instance types</h2>' in html
    assert html.count('id="node-instance-types"') == 1


def test_entry_text_holding_html_is_shown_as_text(cli, tmp_path):
    hostile = '<b>bold</b> & <script>alert("summary")</script>'
    body = (
        "<script>window.pwned = 1</script>\n\n<img src=x onerror=alert(2)>\n\n"
        "![remote](https://example.com/tracker.png) [click](javascript:alert(3)) "
        "[adr](0002-other.md) [web](https://example.org/page)"
    )
    cli(*write_args(hostile, body=body, tag=["<i>tag</i>"], actor=["<u>ann</u>"]))
    build(cli, "--out", str(tmp_path / "s"))
    site = tree(tmp_path / "s")
    entry = next(v.decode() for k, v in site.items() if k.startswith("entries/"))
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in entry
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;" in entry
    assert "<img" not in entry and 'href="javascript:' not in entry
    assert "[click](javascript:alert(3))" in entry  # a refused link stays text
    assert 'href="https://example.org/page"' in entry  # a link: a request only when clicked
    assert '<span class="unlinked" title="0002-other.md">' in entry  # no such page here
    for name, data in site.items():
        text = data.decode(errors="replace")
        if name.endswith(".html"):
            assert "<script>alert" not in text and "<i>tag</i>" not in text, name
            assert len(re.findall(r"<script\b", text)) == text.count('<script src="'), name
        if name.startswith("search/"):  # data for textContent, never markup
            assert '"s":"<b>bold</b>' in text


def test_after_one_write_only_the_pages_it_touches_are_rendered(example, tmp_path, monkeypatch):
    from conftest import Cli

    monkeypatch.setenv("LLM_WIKI_NOW", "2026-10-01T09:00:00Z")
    cli = Cli(example)
    out = tmp_path / "site"
    build(cli, "--out", str(out))
    new = cli.json(
        *write_args(
            "Keep the ledger postings partitioned, archive old months",
            domain="ledger",
            supersedes=NEW,
            tag=["database"],
            actor=["tomas"],
            date="2026-10-01",
        )
    )["id"]
    result = build(cli, "--out", str(out))
    assert sorted(result["written"]) == sorted(
        [
            f"entries/{new}.html",  # the new entry
            f"entries/{NEW}.html",  # now superseded by it
            f"entries/{OLD}.html",  # its lineage grew
            "domains/ledger.html",
            "domains/index.html",  # counts
            "tags/database.html",
            "tags/index.html",
            "actors/tomas.html",
            "actors/dev-agent.html",  # lists NEW, now superseded
            "actors/index.html",
            "index.html",  # what is new, what changed
            "inspector/index.html",  # the write in log.md
            "inspector/log-2026-10.html",
            "search/2026-06.js",  # NEW's status changed
            "search/2026-10.js",  # the new entry
            "search.html",  # a new shard to load
        ]
    )
    # pages the write did not touch keep their bytes and mtime
    assert (out / "entries/2026-03-04-queue-sqs.html").stat().st_mtime_ns < (
        out / f"entries/{new}.html"
    ).stat().st_mtime_ns


def test_a_long_list_goes_on_pages_and_a_write_renders_only_the_newest(
    example, tmp_path, monkeypatch
):
    """Subject pages and a domain's history hold PAGE_ENTRIES entries a page: the main page the
    newest, older pages counted from the oldest, so one more entry renders the main page and
    not the older ones; every entry is still on a page the main page links to."""
    import llm_wiki.site.pages as site_pages
    from conftest import Cli

    monkeypatch.setattr(site_pages, "PAGE_ENTRIES", 3)
    cli = Cli(example)
    ids = [
        cli.json(
            *write_args(f"Paged decision number {i}", domain="paging", actor=["zoe"], tag=["pg"],
                        date=f"2026-07-{i + 1:02d}")
        )["id"]
        for i in range(7)
    ]  # fmt: skip
    out = tmp_path / "site"
    first = build(cli, "--out", str(out))
    for base in ("actors/zoe", "tags/pg", "domains/paging"):
        main = (out / f"{base}.html").read_text()
        older = sorted(p.name for p in (out / base).iterdir())
        assert older == ["1.html"], base  # 7 entries: 3 on page 1, the newest 4 on the main page
        assert f'href="../{base.split("/")[0]}/{base.split("/")[1]}/1.html"' in main, base
        page1 = (out / base / "1.html").read_text()
        assert f'href="../../{base}.html"' in page1  # back to the newest
        for i, entry_id in enumerate(ids):
            where = page1 if i < 3 else main
            assert f"entries/{entry_id}.html" in where, (base, i)
        assert main.index(f"entries/{ids[6]}.html") < main.index(f"entries/{ids[3]}.html")
    assert "actors/zoe/1.html" in first["written"]
    ids.append(
        cli.json(*write_args("Paged decision number 7", domain="paging", actor=["zoe"],
                             tag=["pg"], date="2026-07-20"))["id"]
    )  # fmt: skip
    again = build(cli, "--out", str(out))
    written = set(again["written"])
    assert {"actors/zoe.html", "tags/pg.html", "domains/paging.html"} <= written
    assert not {"actors/zoe/1.html", "tags/pg/1.html", "domains/paging/1.html"} & written
    assert f"entries/{ids[7]}.html" in (out / "actors/zoe.html").read_text()
    # a ninth entry makes three full pages' worth: the main page's oldest three go to page 2
    cli.json(*write_args("More paged", domain="paging", actor=["zoe"], tag=["pg"],
                         date="2026-07-21"))  # fmt: skip
    written = set(build(cli, "--out", str(out))["written"])
    assert {"actors/zoe/2.html", "actors/zoe/1.html"} <= written  # page 1: a newer page now
    page2 = (out / "actors/zoe/2.html").read_text()
    assert all(f"entries/{i}.html" in page2 for i in ids[3:6])
    assert 'href="../../actors/zoe/1.html"' in page2 and 'href="../../actors/zoe.html"' in page2


def test_a_tag_or_person_named_index_does_not_take_the_list_page(example, tmp_path):
    from conftest import Cli

    cli = Cli(example)
    cli.json(*write_args("Index the ledger by month", tag=["index"], actor=["index"]))
    out = tmp_path / "site"
    result = build(cli, "--out", str(out))
    assert len(result["written"]) == len(set(result["written"]))  # no page planned twice
    for folder, title in (("tags", "<h1>Tags</h1>"), ("actors", "<h1>People</h1>")):
        listing = (out / folder / "index.html").read_text()
        assert title in listing
        page = re.search(rf'href="\.\./{folder}/(index-[0-9a-f]{{6}})\.html"', listing)
        assert (
            page and "Index the ledger by month" in (out / folder / f"{page[1]}.html").read_text()
        )


def test_an_entry_naming_a_tag_or_person_twice_is_listed_once(example, tmp_path):
    """The groups take a row once per name however often it names one (see Pages._pass): the
    tag and the person count it once and list it once, as a name written once does."""
    from conftest import Cli

    cli = Cli(example)
    cli.json(*write_args("Twice tagged", tag=["twice", "twice", "once"], actor=["zed", "zed"]))
    out = tmp_path / "site"
    build(cli, "--out", str(out))
    for page in ("tags/twice.html", "tags/once.html", "actors/zed.html"):
        assert (out / page).read_text().count('">Twice tagged</a>') == 1, page
    for listing in ("tags/index.html", "actors/index.html"):
        text = (out / listing).read_text()
        for name in ("twice", "once") if listing.startswith("tags") else ("zed",):
            assert re.search(rf"{name}\.html\">{name}</a>\s*<span[^>]*>1<", text), (listing, text)


def test_a_rebuild_appends_to_the_build_state_and_a_broken_record_means_a_full_build(
    example, tmp_path, monkeypatch
):
    """After a full build the state is one file; a rebuild appends what it changed to
    ``<state>.log`` and leaves the file alone; a record that does not follow (cut short here)
    makes the next build a full one, which gives the same folder as a build from scratch."""
    from conftest import Cli
    from llm_wiki.verify import HashCache

    monkeypatch.setattr(HashCache, "RACY_NS", 0)  # builds follow each other within ms
    cli = Cli(example)
    out = tmp_path / "site"
    build(cli, "--out", str(out))
    folder = example / ".llm-wiki" / "site-state"
    (base,) = [p for p in folder.iterdir() if p.is_file()]
    stamp = base.stat().st_mtime_ns, base.read_bytes()
    log = base.with_name(base.name + ".log")
    cli.json(*write_args("Appended decision", domain="ledger", tag=["database"]))
    result = build(cli, "--out", str(out))
    assert len(result["written"]) < 30  # followed, not built again
    assert (base.stat().st_mtime_ns, base.read_bytes()) == stamp
    assert 0 < 4 * log.stat().st_size < len(stamp[1])  # the next build would append again
    log.write_bytes(log.read_bytes()[:-7])
    cli.json(*write_args("After the cut", domain="ledger"))
    build(cli, "--out", str(out))
    assert not log.exists() and base.read_bytes() != stamp[1]  # written whole again
    build(cli, "--out", str(tmp_path / "fresh"), "--full")
    assert tree(out) == tree(tmp_path / "fresh")


def test_a_state_file_emptied_or_cut_short_means_a_full_build(example, tmp_path):
    """The state file is mapped, not read: one emptied (nothing to map) or cut short is no
    state, and the build is a full one that gives the folder a build from scratch gives."""
    from conftest import Cli

    cli = Cli(example)
    out = tmp_path / "site"
    build(cli, "--out", str(out))
    folder = example / ".llm-wiki" / "site-state"
    (base,) = [p for p in folder.iterdir() if p.is_file()]
    for k, cut in enumerate((lambda b: b"", lambda b: b[: len(b) // 2])):
        base.write_bytes(cut(base.read_bytes()))
        cli.json(*write_args(f"After the state was cut {k}", domain="ledger"))
        whole = base.read_bytes()
        build(cli, "--out", str(out))
        assert base.read_bytes() != whole  # written whole again: the build was a full one
        build(cli, "--out", str(tmp_path / f"fresh-{k}"), "--full")
        assert tree(out) == tree(tmp_path / f"fresh-{k}")


def test_a_page_no_longer_planned_is_removed_and_other_files_are_refused(example, tmp_path):
    from conftest import Cli

    cli = Cli(example)
    out = tmp_path / "site"
    build(cli, "--out", str(out))
    (example / "access.yaml").write_text("readers:\n  ann:\n    scopes: [elsewhere]\n")
    result = build(cli, "--as", "ann", "--out", str(out))  # ann sees nothing: pages go
    assert f"entries/{OLD}.html" in result["removed"] and result["entries"] == 0
    assert not (out / "entries").exists() and not (out / "domains" / "ledger.html").exists()
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    for target, words in (
        (busy, "is not empty and holds no llm-wiki site"),
        (example, "holds the wiki itself"),
        (example / "entries" / "x", "inside the wiki's entries/"),
        (busy / "notes.txt", "is a file"),
    ):
        got = cli("site", "--as", "ann", "--out", str(target), code=2)
        assert words in got.stderr and got.stderr.startswith("Error: ")
    assert (busy / "notes.txt").read_text() == "mine"


WALLS = """readers:
  root:
    admin: true
  alice:
    scopes: [matter-acme]
  bob:
    scopes: [matter-beta]
"""


def test_under_walls_a_site_is_for_one_reader_and_holds_only_their_scopes(cli, wiki_path):
    acme = cli.json(*write_args("Acme ledger decision qzacme", scope="matter-acme"))["id"]
    beta = cli.json(*write_args("Beta ledger decision qzbeta", scope="matter-beta"))["id"]
    cli(*write_args("Acme follow-up", scope="matter-acme", supersedes=acme, tag=["acme-only"]))
    (wiki_path / "access.yaml").write_text(WALLS)
    assert "say who is reading with --as READER" in cli("site", code=1).stderr
    for reader, mine, theirs in (("alice", acme, beta), ("bob", beta, acme)):
        result = build(cli, "--as", reader)
        out = Path(result["out"])
        assert out == wiki_path / ".llm-wiki" / "site" / reader
        blob = b"".join(tree(out).values()) + "".join(tree(out)).encode()
        assert mine.encode() in blob and theirs.encode() not in blob
        assert b"matter-" + (b"beta" if reader == "alice" else b"acme") not in blob
        assert (b"acme-only" in blob) == (reader == "alice")
        assert f"Built by llm-wiki for reader <b>{reader}</b>".encode() in blob
    assert build(cli, "--as", "root")["entries"] == 3
    notes = sorted(p.relative_to(wiki_path).as_posix() for p in (wiki_path / "graph").rglob("*.md"))
    assert notes and all(n.startswith("graph/matter-acme/") for n in notes)


def test_the_inspector_lists_the_latest_lint_findings_a_reader_may_see(cli, wiki_path):
    """Each lint finding with the entries it names, only for a reader who may read the whole
    view of the run that found it: what a finding says can rest on entries it does not name
    ("tag 'x' is used once" counts every scope's entries)."""
    cli(*write_args("Acme ledger decision qzacme", scope="matter-acme", tag=["acmeonly"]))
    cli(*write_args("Beta ledger decision qzbeta", scope="matter-beta", tag=["betaonly"]))
    (wiki_path / "access.yaml").write_text(WALLS)

    def inspector(reader: str) -> str:
        out = Path(build(cli, "--as", reader)["out"])
        return (out / "inspector" / "index.html").read_text()

    cli("--as", "root", "lint")
    root = inspector("root")
    assert "tag &#39;acmeonly&#39; is used once." in root
    assert "tag &#39;betaonly&#39; is used once." in root
    alice = inspector("alice")
    assert "acmeonly" not in alice and "betaonly" not in alice  # root's run saw every scope
    cli("--as", "alice", "lint")  # her own run: her view, hers to see
    alice = inspector("alice")
    assert "tag &#39;acmeonly&#39; is used once." in alice and "betaonly" not in alice
    root = inspector("root")
    assert root.count("tag &#39;acmeonly&#39; is used once.") == 1  # both runs found it: once
    assert "tag &#39;betaonly&#39; is used once." in root  # root's run still stands


def test_a_lint_run_is_shown_only_to_a_reader_of_its_whole_view(cli, wiki_path):
    """A run's counts rest on every entry it read: root's run, over both matters, once logged
    a "scope=matter-acme" line whose info count told alice whether a tag she wrote was used in
    matter-beta. A run logs one line, scoped to its reader's view."""
    cli(*write_args("Acme ledger decision qzacme", scope="matter-acme", tag=["zephyr"]))
    cli(*write_args("Beta ledger decision qzbeta", scope="matter-beta", tag=["zephyr"]))
    (wiki_path / "access.yaml").write_text(WALLS)
    cli("--as", "root", "lint")
    last = (wiki_path / "log.md").read_text().splitlines()[-1]
    assert " lint scope=matter-acme,matter-beta errors=0 warnings=0 info=0 checked=2" in last

    def runs(reader: str) -> list[str]:
        out = Path(build(cli, "--as", reader)["out"])
        html = (out / "inspector" / "index.html").read_text()
        table = html.split('<h2 id="lint">', 1)[1].split("<h3>Findings</h3>", 1)[0]
        return re.findall(r"<tr><td class=\"time\">[^<]*</td><td>([^<]*)</td>", table)

    assert runs("root") == ["matter-acme,matter-beta"]
    assert runs("alice") == []  # root's counts rest on matter-beta's entries too
    cli("--as", "alice", "lint")  # her run: "tag 'zephyr' is used once", in her view
    assert runs("alice") == ["matter-acme"]
    assert runs("bob") == []


def test_a_build_killed_half_way_leaves_nothing_for_the_next_reader(
    cli, wiki_path, tmp_path, monkeypatch
):
    """A build killed after writing its pages, before the manifest that lists them (the first
    build into a folder claims it with an empty one): the next build for another reader, or
    after the walls narrowed, must still remove them."""
    from llm_wiki.site import build as site_build

    acme = cli.json(*write_args("Acme ledger decision qzacme", scope="matter-acme"))["id"]
    cli(*write_args("Beta ledger decision qzbeta", scope="matter-beta"))
    (wiki_path / "access.yaml").write_text(WALLS)
    out = tmp_path / "shared-site"
    real = site_build._Builder._write_manifest

    def killed(self, pages):
        if pages:
            raise KeyboardInterrupt  # killed after the pages, before the manifest naming them
        real(self, pages)

    monkeypatch.setattr(site_build._Builder, "_write_manifest", killed)
    said = cli("site", "--as", "alice", "--out", str(out), code=130).stderr
    assert said == "Error: interrupted; run the command again to finish its work.\n"
    assert acme.encode() in b"".join(tree(out).values())
    monkeypatch.setattr(site_build._Builder, "_write_manifest", real)
    build(cli, "--as", "bob", "--out", str(out))
    got = tree(out)
    blob = b"".join(got.values()) + "".join(got).encode()
    assert acme.encode() not in blob and b"qzacme" not in blob and b"matter-acme" not in blob
    assert got == tree(Path(build(cli, "--as", "bob", "--out", str(tmp_path / "fresh"))["out"]))
    # bob's walls widened, a build killed after its pages (the manifest still bob's narrow
    # one), the walls narrowed again: the pages of the wider walls go
    wide = WALLS.replace("scopes: [matter-beta]", "scopes: [matter-beta, matter-acme]")
    (wiki_path / "access.yaml").write_text(wide)
    monkeypatch.setattr(site_build._Builder, "_write_manifest", killed)
    cli("site", "--as", "bob", "--out", str(out), code=130)
    assert acme.encode() in b"".join(tree(out).values())
    monkeypatch.setattr(site_build._Builder, "_write_manifest", real)
    (wiki_path / "access.yaml").write_text(WALLS)
    build(cli, "--as", "bob", "--out", str(out))
    assert tree(out) == got


def test_obsidian_notes_link_supersession_and_leave_the_index_alone(example):
    from conftest import Cli

    cli = Cli(example)
    cli("index")
    before = index_files(example)
    entries = tree(example / "entries")
    result = build(cli, "--out", str(example.parent / "site"))
    assert result["graph_notes"] == 1
    note = example / "graph" / f"{NEW}.supersedes.md"
    assert f"[[{NEW}]] supersedes [[{OLD}]]" in note.read_text()
    assert tree(example / "entries") == entries  # no entry changed
    assert index_files(example) == before
    assert cli("index", "--check").stdout.startswith("Index is up to date")
    remove_derived(example)
    cli("index")
    assert index_files(example) == before


def test_a_synthesis_made_without_an_llm_is_not_said_to_be_written_by_one(example, tmp_path):
    """The offline backend's synthesis is each active entry's own summary: the domain page still
    labels it generated orientation, but does not say an LLM wrote it."""
    from conftest import Cli

    cli = Cli(example)
    cli("consolidate", "--backend", "offline")
    build(cli, "--out", str(tmp_path / "s"))
    page = (tmp_path / "s" / "domains" / "platform.html").read_text()
    box = page[page.index('id="synthesis"') :]
    assert "generated orientation" in box and "it is not evidence" in box
    assert "Written by an LLM" not in box
    assert "without an LLM" in box[: box.index('<div class="body">')]
    synthesis = next((tmp_path / "s" / "entries").glob("*-the-platform-domain*.html")).read_text()
    banner = synthesis[synthesis.index("<b>Generated.</b>") :][:400]
    assert "Written by an LLM" not in banner and "without an LLM" in banner


INCIDENT = "2026-03-18-refund-events-stuck-for-3-hours-the-dead-letter-queue-filled-6266"


def test_an_incident_page_says_what_resolved_it_and_the_resolver_says_what_it_closed(
    example, tmp_path
):
    """``resolves`` is what closes an incident (the domain page lists it as closed): both pages
    say so, each linking the other, and the incident's card reads closed, after a rebuild too."""
    from conftest import Cli

    cli = Cli(example)
    site = tmp_path / "s"
    build(cli, "--out", str(site))  # the resolver comes after: a rebuild must show it
    before = (site / "entries" / f"{INCIDENT}.html").read_text()
    assert "<dt>status</dt><dd><b>active</b></dd>" in before
    fix = cli.json(*write_args("Replay refunds from the DLQ", resolves=INCIDENT))["id"]
    build(cli, "--out", str(site))
    resolver = (site / "entries" / f"{fix}.html").read_text()
    assert "It resolves:" in resolver and f'href="../entries/{INCIDENT}.html"' in resolver
    incident = (site / "entries" / f"{INCIDENT}.html").read_text()
    assert "Resolved by:" in incident and f'href="../entries/{fix}.html"' in incident
    assert "<dt>status</dt><dd><b>closed</b> (written as active; resolved" in incident
    domain = (site / "domains" / "platform.html").read_text()
    closed = domain[
        domain.index("<h3>Closed</h3>") : domain.index('id="synthesis"')
        if 'id="synthesis"' in domain
        else None
    ]
    assert INCIDENT in closed and "resolved by a later entry" in closed


def test_site_json_has_a_stable_shape(example, tmp_path):
    from conftest import Cli

    got = build(Cli(example), "--out", str(tmp_path / "s"))
    assert set(got) == {"out", "reader", "pages", "written", "removed", "entries", "graph_notes"}


def test_serve_binds_loopback_and_rebuilds_when_the_wiki_changes(example, tmp_path):
    env = subprocess_env(LLM_WIKI_DIR=str(example))
    out = tmp_path / "served"
    proc = subprocess.Popen(
        [sys.executable, "-m", "llm_wiki", "site", "--out", str(out), "--serve", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        while not any("Serving" in line for line in lines):
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            lines.append(line)
        url = re.search(r"at (http://\S+/) ", lines[-1]).group(1)
        assert url.startswith("http://127.0.0.1:")
        home = urllib.request.urlopen(url + "index.html", timeout=10).read().decode()
        assert "Use Amazon SQS for the payment events queue" in home
        write = subprocess.run(
            [sys.executable, "-m", "llm_wiki", *write_args("Served while it was running")[:]],
            env=env,
            capture_output=True,
            text=True,
        )
        assert write.returncode == 0, write.stderr
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            home = urllib.request.urlopen(url + "index.html", timeout=10).read().decode()
            if "Served while it was running" in home:
                break
            time.sleep(0.3)
        assert "Served while it was running" in home
        try:  # a folder is no page: not a listing of its files
            urllib.request.urlopen(url + "entries/", timeout=10)
            raise AssertionError("a folder was listed")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert json.loads((out / ".site-manifest.json").read_text())["pages"]


def test_serve_on_a_port_in_use_says_so_before_building(example, tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = tmp_path / "never"
        got = subprocess.run(
            [sys.executable, "-m", "llm_wiki", "site", "--out", str(out), "--serve", str(port)],
            env=subprocess_env(LLM_WIKI_DIR=str(example)),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert got.returncode != 0 and f"cannot serve on 127.0.0.1:{port}" in got.stderr
    assert len(got.stderr.strip().splitlines()) == 1
    assert not out.exists()  # nothing built


@given(value=st.one_of(st.text(), st.integers()))
def test_the_list_helpers_escape_as_markupsafe_does(value):
    """site/html.py escapes plain strings itself (no Markup per value): the same bytes."""
    from markupsafe import Markup
    from markupsafe import escape as markup_escape

    from llm_wiki.site.html import escape

    assert escape(value) == str(markup_escape(value))
    assert escape(Markup("<b>kept</b>")) == "<b>kept</b>"


BODIES = [
    "## Context\n\nSee [2024-01-01-shown] and [2024-01-01-hidden], not `[2024-01-01-shown]`.",
    "[the ADR](../adr/0001-use-postgres.md#why) and [another](0002-gone.md), [web](https://e.com/?a=1&b='2')"
    ", [here](#top), [mail](mailto:a@b.c), [*cited [2024-01-01-shown]*](https://e.com)",
    "- one\n- two [2024-01-01-shown]\n\n1. three\n\n> quoted\n\n    code [2024-01-01-shown]\n\n***\n",
    '```python\nx = "[2024-01-01-shown]"\n```\n\nline one  \nline two\\\nthree *em* **strong** "q"',
]


@pytest.mark.parametrize("body", BODIES)
def test_the_fast_renderer_writes_the_bytes_markdown_it_does(body):
    """Bodies with no raw HTML, image, entity, reference definition or refused link go through
    cmark (C); the rest through markdown-it-py: the same HTML either way, links and citations
    rewritten alike."""
    from llm_wiki.site.text import _cmark_renders, _render_cmark, _render_markdown_it

    def entry_href(i: str) -> str | None:
        return f"../entries/{i}.html" if i.endswith("shown") else None

    def file_href(name: str) -> str | None:
        return "../entries/2024-01-01-adr.html" if name == "0001-use-postgres.md" else None

    assert _cmark_renders(body)
    assert _render_cmark(body, entry_href, file_href) == _render_markdown_it(
        body, entry_href, file_href
    )


def test_the_fast_renderer_agrees_with_markdown_it_on_the_imported_corpora():
    """Every markdown file of the shared corpora cmark takes renders byte for byte as
    markdown-it renders it."""
    from llm_wiki.site.text import _cmark_renders, _render_cmark, _render_markdown_it

    taken = 0
    for path in sorted((REPO / "tests" / "data" / "corpora").rglob("*.md")):
        body = path.read_text(encoding="utf-8", errors="replace")
        if not _cmark_renders(body):
            continue
        taken += 1
        got = _render_cmark(body, lambda i: None, lambda n: None)
        assert got == _render_markdown_it(body, lambda i: None, lambda n: None), path
    assert taken > 100


@given(text=st.text(alphabet=st.characters(max_codepoint=127)) | st.text())
def test_search_words_are_the_regex_words(text):
    """site/text.py splits ASCII text by a byte translation: the same words as ``\\w+``."""
    from llm_wiki.site.text import words

    assert words(text) == list(dict.fromkeys(re.findall(r"\w+", text.lower())))


def test_a_page_fingerprint_is_of_its_data_not_of_which_objects_it_shares():
    """Two contexts that are equal give one fingerprint, whether a ref is one shared dict or two
    copies (a rebuild's context is made of other objects than the last build's)."""
    from llm_wiki.site.build import _fingerprint

    ref = {"id": "2024-01-01-a", "summary": "x" * 40, "tags": ["t"], "n": 1, "ok": True}
    shared = {"replaced": [ref, ref], "entry": ref, "none": None, "pair": ("a", 2)}
    copies = {
        "replaced": [dict(ref), json.loads(json.dumps(ref))],
        "entry": dict(ref),
        "none": None,
        "pair": ("a", 2),
    }
    assert _fingerprint("c", "entry.html", {}, shared) == _fingerprint(
        "c", "entry.html", {}, copies
    )
    assert _fingerprint("c", "entry.html", {}, shared) != _fingerprint(
        "c", "entry.html", {}, {**copies, "pair": ["a", 2]}
    )


def test_entry_pages_filled_into_one_frame_are_the_pages_rendered_whole(
    example, tmp_path, monkeypatch
):
    """An entry page is entry.html's frame (rendered once) around its title and main part: the
    same bytes as rendering the template for each page."""
    import llm_wiki.session as session
    from llm_wiki.site.build import _Builder

    session.open(example).site(out=tmp_path / "framed")
    monkeypatch.setattr(_Builder, "frame", lambda self, page: None)
    session.open(example).site(out=tmp_path / "whole")
    framed, whole = tree(tmp_path / "framed"), tree(tmp_path / "whole")
    assert [p for p in framed if p.startswith("entries/")]
    assert {p: b for p, b in framed.items() if p != ".site-manifest.json"} == {
        p: b for p, b in whole.items() if p != ".site-manifest.json"
    }


@given(
    text=st.text(st.characters(codec="utf-8"), max_size=60) | st.text("Wi .-(", max_size=60),
    room=st.floats(0, 400),
    size=st.sampled_from([7, 9, 11.5]),
    bold=st.booleans(),
    after=st.sampled_from(["", " (superseded)"]),
)
def test_a_picture_label_keeps_the_longest_start_that_fits(text, room, size, bold, after):
    """A label is cut to the longest start of its words that fits its room with the ellipsis
    (and what must follow it), measured as the pictures measure; the two-line form fills its
    first line with whole words that fit, in order."""
    from llm_wiki.site.pictures import _fit, _two_lines, _width

    def fit_by_trying(text: str) -> str:  # shorten one character at a time until it fits
        text = " ".join(text.split())
        if _width(text + after, size, bold) <= room:
            return text + after
        while text and _width(text + "…" + after, size, bold) > room:
            text = text[:-1]
        return text.rstrip() + "…" + after

    assert _fit(text, room, size, bold, after) == fit_by_trying(text)
    lines = _two_lines(text, room, size)
    words = " ".join(text.split()).split(" ")
    first = lines[0].split(" ")
    if len(lines) == 2 or lines[0] == " ".join(words):
        assert first == words[: len(first)]
        assert _width(lines[0], size) <= room
        if len(first) < len(words):
            assert _width(" ".join(words[: len(first) + 1]), size) > room
