"""A site brought up to date after each change is the site a build from scratch makes.

`llm-wiki site` follows log.md from where its last build stopped and plans again only the pages
the new lines and changed files touch (site/state.py). That is only right if the pages it leaves
alone are exactly the pages nothing changed: so, on random wikis (with and without walls), after
every random step — writes that supersede, cite or quote earlier entries (or an id not written
yet), bodies citing entries, lint, consolidation, the archive, a hand edit behind the tool's back,
a file deleted by hand (and put back), a file no write logged, a raw source appearing — the rebuilt folder of every reader must hold the same files, byte for
byte, as a new folder built from scratch, and the graph/ notes must be what a full build leaves.

LLM_WIKI_SITE_CASES sets the number of cases (default 12).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import Cli, fewer
from llm_wiki.create import init_wiki
from llm_wiki.verify import HashCache

CASES = int(os.environ.get("LLM_WIKI_SITE_CASES", "12"))
SCOPES = ("north", "south")
DOMAINS = ("ledger", "hiring", "infra")
TAGS = ("postgres", "audit", "queue", "cache")
ACTORS = ("ann", "ben", "cat")
TYPES = ("decision", "decision", "incident", "reflection")

write_step = st.tuples(
    st.just("write"),
    st.sampled_from(TYPES),
    st.integers(0, len(DOMAINS) - 1),
    st.integers(0, len(TAGS) - 1),
    st.integers(0, len(ACTORS) - 1),
    st.none() | st.integers(0, 20),  # supersedes an earlier entry
    st.none() | st.integers(0, 20),  # cites an earlier entry as a source
    st.none() | st.integers(-1, 20),  # the body cites an entry ([id]); -1: one not written yet
    st.booleans(),  # quotes a raw source
    st.integers(1, 4),  # month
    st.integers(0, len(SCOPES) - 1),
    st.none() | st.integers(0, 20),  # resolves an earlier incident
)
steps = st.lists(
    st.one_of(
        write_step,
        write_step,
        write_step,
        st.tuples(st.just("lint")),
        st.tuples(st.just("consolidate")),
        st.tuples(st.just("archive")),
        st.tuples(st.just("edit"), st.integers(0, 20)),
        st.tuples(st.just("remove"), st.integers(0, 20)),
        st.tuples(st.just("restore")),
        st.tuples(st.just("stray"), st.integers(0, 20)),
        st.tuples(
            st.just("raw"),
        ),
        st.tuples(st.just("nothing")),
    ),
    min_size=2,
    max_size=7,
)


def tree(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


class Case:
    def __init__(self, root: Path, walls: bool) -> None:
        self.root = root
        init_wiki(root)
        self.cli = Cli(root)
        self.ids: list[str] = []
        self.incidents: list[str] = []
        self.readers = [""]
        if walls:
            (root / "access.yaml").write_text(
                "readers:\n  root:\n    admin: true\n  alice:\n    scopes: [north]\n"
            )
            self.readers = ["root", "alice"]
        self.walls = walls
        self.n = 0
        self.removed: list[tuple[Path, bytes]] = []

    def run(self, *args: str, env: dict | None = None):
        who = ["--as", "root"] if self.walls else []
        return self.cli(*who, *args, code=None, env=env)

    def step(self, step: tuple) -> None:
        kind = step[0]
        self.n += 1
        n = self.n
        if kind == "write":
            _, type_, d, t, a, sup, src, cite, raw, month, scope, res = step
            args = [
                "write", "--type", type_, "--domain", DOMAINS[d], "--tag", TAGS[t],
                "--actor", ACTORS[a], "--summary", f"Step {n} {TAGS[t]} {type_}",
                "--date", f"2026-0{month}-{n % 27 + 1:02d}", "--json",
            ]  # fmt: skip
            if self.walls:
                args += ["--scope", SCOPES[scope]]
            if type_ == "decision":
                args += ["--alt", f"other {n}: worse"]
            body = f"Body of step {n}."
            if cite is not None:
                target = (
                    f"2026-09-0{n % 9 + 1}-future-{n}"
                    if cite < 0 or not self.ids
                    else self.ids[cite % len(self.ids)]
                )
                body += f" See [{target}] and [the ADR](0001-use-postgres.md)."
            args += ["--body", body]
            if sup is not None and self.ids:
                args += ["--supersedes", self.ids[sup % len(self.ids)]]
            if src is not None and self.ids:
                args += ["--source", self.ids[src % len(self.ids)]]
            if raw:
                name = self.raw(f"quoted by step {n}\nsecond line\n")
                args += ["--source", f"{name}#L1-L2"]
            if res is not None and self.incidents:
                args += ["--resolves", self.incidents[res % len(self.incidents)]]
            got = self.run(*args)
            if got.exit_code == 0:
                self.ids.append(json.loads(got.stdout)["id"])
                if type_ == "incident":
                    self.incidents.append(self.ids[-1])
        elif kind == "lint":
            self.run("lint")
        elif kind == "consolidate":
            self.run("consolidate", "--backend", "offline")
        elif kind == "archive":
            self.run("archive", "--older-than", "1d", env={"LLM_WIKI_NOW": "2027-01-01"})
        elif kind == "edit" and self.ids:
            entry_id = self.ids[step[1] % len(self.ids)]
            for path in (self.root / "entries").rglob(f"{entry_id}.md"):
                st_ = path.stat()
                os.chmod(path, 0o644)
                path.write_bytes(path.read_bytes().replace(b"Body", b"B0dy"))
                os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns))  # mtime put back
        elif kind == "remove" and self.ids:  # a file deleted behind the tool's back
            entry_id = self.ids[step[1] % len(self.ids)]
            for path in (self.root / "entries").rglob(f"{entry_id}.md"):
                self.removed.append((path, path.read_bytes()))
                path.unlink()
        elif kind == "restore" and self.removed:  # and put back, bytes and all
            path, data = self.removed.pop()
            path.write_bytes(data)
        elif kind == "stray" and self.ids:  # an entry file no write logged, of another's bytes
            entry_id = self.ids[step[1] % len(self.ids)]
            for path in (self.root / "entries").rglob(f"{entry_id}.md"):
                stray = path.with_name(f"{path.stem[:10]}-stray-{n}.md")
                stray.write_bytes(path.read_bytes())
        elif kind == "raw":
            self.raw(f"a raw source of step {n}\n")

    def raw(self, text: str) -> str:
        data = text.encode()
        name = f"raw/{hashlib.sha256(data).hexdigest()}.txt"
        (self.root / "raw").mkdir(exist_ok=True)
        (self.root / name).write_bytes(data)
        return name

    def build(self, reader: str, out: Path, *extra: str) -> dict:
        who = ["--as", reader] if reader else []
        got = self.cli(*who, "site", "--out", str(out), "--json", *extra)
        return json.loads(got.stdout)


@pytest.fixture
def trust_fresh_hashes(monkeypatch):
    """Builds here follow each other within milliseconds: with the 2 s racy window every entry
    file would be re-hashed (and its pages re-planned) on every build, and the test would not
    see a page left alone that should have been rebuilt. The window guards against edits in the
    same clock tick as the hashing, which these steps (made between builds) never are."""
    monkeypatch.setattr(HashCache, "RACY_NS", 0)


@pytest.fixture
def short_pages(monkeypatch):
    """Two entries a list page: the random wikis' subjects and domains then run to several
    pages, and an entry coming, going or changing status moves entries between them."""
    import llm_wiki.site.pages as site_pages

    monkeypatch.setattr(site_pages, "PAGE_ENTRIES", 2)


@settings(
    max_examples=fewer(CASES),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(walls=st.booleans(), plan=steps)
def test_a_rebuilt_site_is_the_site_built_from_scratch(
    trust_fresh_hashes, short_pages, walls, plan
):
    with tempfile.TemporaryDirectory() as tmp:
        case = Case(Path(tmp) / "wiki", walls)
        for i in range(3):  # something to start from
            case.step(
                ("write", "decision", i % 3, i, i % 3, None, None, None, False, 1, i % 2, None)
            )
        outs = {r: Path(tmp) / f"site-{r or 'all'}" for r in case.readers}
        for reader, out in outs.items():
            case.build(reader, out)
        for k, step in enumerate(plan):
            case.step(step)
            for reader, out in outs.items():
                case.build(reader, out)
                rebuilt = tree(out)
                notes = tree(case.root / "graph") if (case.root / "graph").is_dir() else {}
                fresh = Path(tmp) / f"fresh-{k}-{reader or 'all'}"
                case.build(reader, fresh, "--full")
                assert tree(fresh) == rebuilt, (step, reader)
                after = tree(case.root / "graph") if (case.root / "graph").is_dir() else {}
                assert after == notes, (step, reader)


def test_a_rebuild_follows_the_log_and_touches_only_what_a_write_touched(
    trust_fresh_hashes, tmp_path
):
    case = Case(tmp_path / "wiki", walls=False)
    for i in range(6):
        case.step(("write", "decision", i % 3, i % 4, i % 3, None, None, None, False, 1, 0, None))
    out = tmp_path / "site"
    case.build("", out)
    assert case.build("", out)["written"] == []
    case.step(("write", "decision", 0, 0, 0, 0, None, None, False, 2, 0, None))
    written = set(case.build("", out)["written"])
    new, old = case.ids[-1], case.ids[0]  # the new one supersedes the first
    assert {f"entries/{new}.html", f"entries/{old}.html", "index.html"} <= written
    assert not any(p.startswith("entries/") for p in written - {
        f"entries/{new}.html", f"entries/{old}.html"})  # fmt: skip
    assert case.build("", out)["written"] == []


def test_the_hash_cache_is_not_fooled_by_an_edit_that_puts_size_and_mtime_back(
    trust_fresh_hashes, tmp_path
):
    """verify holds on an entry's page only while its bytes hash to the logged sha256: an edit
    that keeps the size and sets the mtime back still changes the ctime, so it is hashed again."""
    case = Case(tmp_path / "wiki", walls=False)
    case.step(("write", "decision", 0, 0, 0, None, None, None, False, 1, 0, None))
    entry_id = case.ids[0]
    out = tmp_path / "site"
    case.build("", out)
    page = out / "entries" / f"{entry_id}.html"
    assert "verify holds" in page.read_text() or "holds" in page.read_text()
    before = page.read_bytes()
    case.step(("edit", 0))
    assert case.build("", out)["written"], "the edit was not seen"
    assert page.read_bytes() != before
    fresh = tmp_path / "fresh"
    case.build("", fresh, "--full")
    assert tree(fresh) == tree(out)


def test_a_hash_cache_entry_is_trusted_only_with_all_four_stat_values(tmp_path):
    path = tmp_path / "e.md"
    path.write_bytes(b"one")
    cache = HashCache()
    sha = cache.sha_of(str(path), "e.md", os.stat(path))
    cache.finish(now_ns=os.stat(path).st_ctime_ns + 10 * HashCache.RACY_NS + 1)
    assert cache.files["e.md"][5]  # trusted
    again = HashCache(cache.files)
    assert again.sha_of(str(path), "e.md", os.stat(path)) == sha and not again.changed
    st_ = os.stat(path)
    path.write_bytes(b"two")  # same size
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns))
    third = HashCache(cache.files)
    assert third.sha_of(str(path), "e.md", os.stat(path)) != sha and third.changed == {"e.md"}
    # a file changed within the racy window of the cache's writing is not kept
    young = HashCache()
    young.sha_of(str(path), "e.md", os.stat(path))
    young.finish(now_ns=os.stat(path).st_ctime_ns + 1)
    assert not young.files["e.md"][5]  # kept untrusted: hashed again next time
    fourth = HashCache(young.files)
    assert fourth.sha_of(str(path), "e.md", os.stat(path)) == third.files["e.md"][4]
    assert not fourth.changed  # hashed again, to the same bytes: not a change


def test_a_rebuild_after_a_write_that_resolves_an_incident_closes_it(trust_fresh_hashes, tmp_path):
    """The incident's domain lists it closed after a write in another domain resolves it, as a
    build from scratch does."""
    case = Case(tmp_path / "wiki", walls=False)
    case.step(("write", "incident", 2, 0, 0, None, None, None, False, 1, 0, None))
    case.step(("write", "decision", 0, 1, 1, None, None, None, False, 1, 0, None))
    incident = case.ids[0]
    out = tmp_path / "site"
    case.build("", out)
    case.step(("write", "decision", 1, 2, 2, None, None, None, False, 2, 0, 0))
    before = (out / "domains/infra.html").read_text()
    written = set(case.build("", out)["written"])
    assert "domains/infra.html" in written
    assert (out / "domains/infra.html").read_text() != before
    assert incident in (out / "domains/infra.html").read_text()
    fresh = tmp_path / "fresh"
    case.build("", fresh, "--full")
    assert tree(fresh) == tree(out)


def test_a_state_read_in_parts_gives_the_site_a_full_build_gives(
    trust_fresh_hashes, tmp_path, monkeypatch
):
    """The build state's big values are unmarshalled only when first asked for, the appended
    records applied to each then: a rebuild with nothing changed reads the file hashes alone, one
    after a write leaves the logged records unread, a hand edit (an id no new line names) reads
    them. Whichever parts a build read, the next one follows the same chain, and the folder is
    the one a full build makes."""
    import llm_wiki.site.state as site_state

    read: list[str] = []
    missing = site_state._State.__missing__

    def spy(self, key):
        read.append(key)
        return missing(self, key)

    monkeypatch.setattr(site_state._State, "__missing__", spy)
    case = Case(tmp_path / "wiki", walls=False)
    for i in range(4):
        case.step(("write", "decision", i % 3, i % 4, i % 3, None, None, None, False, 1, 0, None))
    out, fresh = tmp_path / "site", tmp_path / "fresh"
    case.build("", out)
    for step, parts in (
        (None, {"files"}),
        (("write", "decision", 0, 0, 0, 0, None, None, False, 2, 0, None), None),
        (None, {"files"}),
        (("edit", 1), None),
        (("write", "incident", 1, 1, 1, None, 0, None, False, 3, 0, None), None),
        (None, {"files"}),
    ):
        read.clear()
        if step is not None:
            case.step(step)
        result = case.build("", out)
        if parts is not None:  # nothing changed
            assert set(read) == parts and result["written"] == [], step
            continue
        assert ("logged" in read) == (step[0] == "edit"), (step, read)
        case.build("", fresh, "--full")
        assert tree(fresh) == tree(out), step
    folder = case.root / ".llm-wiki" / "site-state"
    assert [p for p in folder.iterdir() if p.name.endswith(".log")]  # records were appended


def test_a_rebuild_after_writes_into_new_and_big_domains_is_the_full_build(
    trust_fresh_hashes, short_pages, tmp_path
):
    """A write into a domain no entry had yet (its pages and its line in every list come, in
    their place among the others) and then into one with pages of history: each rebuild plans
    again only the entry pages the write touched, leaves the others as they were (their place
    in the manifest too) and makes the folder a full build makes."""
    case = Case(tmp_path / "wiki", walls=False)
    for i in range(9):
        case.step(("write", "decision", 0, i % 4, i % 3, None, None, None, False, 1, 0, None))
    out = tmp_path / "site"
    case.build("", out)
    for k, domain in enumerate(("aaa-new", "ledger", "zzz-new")):
        got = case.run(
            "write", "--type", "decision", "--domain", domain, "--summary", f"Into {domain}",
            "--alt", "other: worse", "--supersedes", case.ids[k], "--date", "2026-02-01",
            "--json",
        )  # fmt: skip
        assert got.exit_code == 0, got.output
        case.ids.append(json.loads(got.stdout)["id"])
        written = case.build("", out)["written"]
        entries = [p for p in written if p.startswith("entries/")]
        assert entries == [f"entries/{i}.html" for i in sorted((case.ids[-1], case.ids[k]))]
        assert f"domains/{domain}.html" in written
        fresh = tmp_path / f"fresh-{k}"
        case.build("", fresh, "--full")
        assert tree(fresh) == tree(out), domain


def test_rebuilds_within_the_racy_window_are_the_full_build(tmp_path):
    """Builds within 2 s of the writes before them (RACY_NS as it is): each leaves the files it
    hashed untrusted, the next hashes them again in place (verify_since) and keeps their pages
    when their bytes are the same. Every rebuild makes the folder a full build makes, its state
    replayed from the appended records; and an edit made just after a build is still found."""
    case = Case(tmp_path / "wiki", walls=False)
    for i in range(4):
        case.step(("write", "decision", i % 3, i % 4, i % 3, None, None, None, False, 1, 0, None))
    out = tmp_path / "site"
    case.build("", out)
    for k in range(3):
        case.step(("write", "decision", k % 3, k, k % 3, k, None, None, False, 2, 0, None))
        written = case.build("", out)["written"]
        assert f"entries/{case.ids[-1]}.html" in written
        if k == 0:  # (a wiki this small writes its state whole again soon after)
            folder = case.root / ".llm-wiki" / "site-state"
            assert [p for p in folder.iterdir() if p.name.endswith(".log")]  # appended
        fresh = tmp_path / f"fresh-{k}"
        case.build("", fresh, "--full")
        assert tree(fresh) == tree(out), k
    case.step(("edit", 0))  # behind the tool's back, just after the last build
    case.build("", out)
    fresh = tmp_path / "fresh-edit"
    case.build("", fresh, "--full")
    assert tree(fresh) == tree(out)
