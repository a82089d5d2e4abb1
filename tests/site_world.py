"""The site's walls property: a random walled wiki, a site built for every reader, every file read.

Shared by ``tests/test_site_walls.py`` (a quick run in the default suite) and
``tests/bench/test_site_walls_bench.py`` (many more cases). One case (a :class:`World`):

- 2-4 scopes, 1-3 walled readers (each writing some scopes, maybe reading one more, never all) and
  an admin, ``root``;
- 3-9 entries, each in one scope, some superseding or citing an earlier entry of their scope, some
  citing a raw source of their own; domains, tags and actors drawn from names shared across
  scopes and from names of one entry only;
- now and then the machinery runs as root: consolidate (offline, or a mock LLM whose syntheses
  fail their checks), lint, an LLM query over every scope, the monthly archive;
- then a site is built for every reader, each in a folder of its own and all in one shared folder,
  one after the other (a site rebuilt for another reader must keep nothing of the last).

Every entry carries marker words (``qz<field><n>x``) in its summary, body, alias, question,
rejected alternative, tag, raw source and (sometimes) its domain and actor. A reader's site — every
file's path and bytes (HTML, JS, JSON, SVG, CSS) — may hold no marker or id of an entry the reader
cannot read, no name of a scope it cannot read, no domain, tag, actor, raw source or archive that
only such entries use; its counts are those of the visible entries; each graph/<scope>/ note links
only entries of that scope. Each broken rule is one *leak*.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

import walls_world
from conftest import Cli
from llm_wiki.backends import MockBackend
from llm_wiki.create import init_wiki

SCOPE_POOL = ("matter-kestrel", "matter-osprey", "hr-plover", "deal-egret")
READER_POOL = ("alice", "bob", "carol")
SHARED_DOMAINS = ("ledger", "hiring")
SHARED_TAGS = ("postgres", "audit", "queue")
SHARED_ACTORS = ("ann", "ben")
TYPES = ("decision", "incident", "reflection")
MARKER_RE = re.compile(rb"qz[a-z]\d\dx")


@dataclass(frozen=True)
class Spec:
    scope: str
    type: str
    domain: int  # < len(SHARED_DOMAINS): a shared name; else the entry's own marker domain
    tag: str
    actor: int  # likewise
    supersedes: int | None
    source: int | None
    raw: bool
    day: int


@dataclass(frozen=True)
class World(walls_world.Readers):
    scopes: tuple[str, ...]
    readers: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
    specs: tuple[Spec, ...]
    consolidate: str | None  # None | "offline" | "mock-failing"
    lint: bool
    query: bool
    archive: bool


@st.composite
def worlds(draw: st.DrawFn) -> World:
    scopes = tuple(draw(st.lists(st.sampled_from(SCOPE_POOL), min_size=2, max_size=4, unique=True)))
    names = draw(st.lists(st.sampled_from(READER_POOL), min_size=1, max_size=3, unique=True))
    readers = []
    for name in names:
        mine = draw(
            st.lists(st.sampled_from(scopes), min_size=0, max_size=len(scopes) - 1, unique=True)
        )
        rest = [s for s in scopes if s not in mine]
        read_only = draw(st.lists(st.sampled_from(rest), max_size=len(rest) - 1, unique=True))
        readers.append((name, tuple(mine), tuple(read_only)))
    pick = st.none() | st.integers(0, 8)
    spec = st.builds(
        Spec,
        scope=st.sampled_from(scopes),
        type=st.sampled_from(TYPES),
        domain=st.integers(0, len(SHARED_DOMAINS)),
        tag=st.sampled_from(SHARED_TAGS),
        actor=st.integers(0, len(SHARED_ACTORS)),
        supersedes=pick,
        source=pick,
        raw=st.booleans(),
        day=st.integers(1, 28),
    )
    return World(
        scopes=scopes,
        readers=tuple(readers),
        specs=tuple(draw(st.lists(spec, min_size=3, max_size=9))),
        consolidate=draw(st.sampled_from([None, None, "offline", "mock-failing"])),
        lint=draw(st.booleans()),
        query=draw(st.booleans()),
        archive=draw(st.sampled_from([False, False, True])),
    )


@dataclass
class Written:
    id: str
    scope: str
    names: tuple[str, ...]  # its marker words and marker names (domain, tag, actor, raw)
    domain: str


@dataclass
class Case:
    world: World
    root: Path
    written: list[Written] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    files: int = 0
    sites: int = 0
    covered: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        init_wiki(self.root)
        self.cli = Cli(self.root)

    def run(self, *args: str, env: dict[str, str] | None = None):
        return self.cli(*args, code=None, env=env)

    def write_all(self) -> None:
        for n, spec in enumerate(self.world.specs):
            same = [w for w in self.written if w.scope == spec.scope]
            domain = (
                SHARED_DOMAINS[spec.domain] if spec.domain < len(SHARED_DOMAINS) else f"qzd{n:02d}x"
            )
            actor = SHARED_ACTORS[spec.actor] if spec.actor < len(SHARED_ACTORS) else f"qzc{n:02d}x"
            words = [f"qz{f}{n:02d}x" for f in "sbaqt"]
            args = [
                "--as", "root", "write", "--type", spec.type, "--domain", domain,
                "--scope", spec.scope, "--summary", f"{words[0]} {spec.tag} decision",
                "--body", f"Body {words[1]}: we chose {spec.tag}.", "--alias", words[2],
                "--question", f"What about {words[3]}?", "--tag", spec.tag, "--tag", words[4],
                "--actor", actor, "--date", f"2026-04-{spec.day:02d}", "--json",
            ]  # fmt: skip
            names = [*words, *(x for x in (domain, actor) if x.startswith("qz"))]
            if spec.type == "decision":
                args += ["--alt", f"other: qzr{n:02d}x was worse"]
                names.append(f"qzr{n:02d}x")
            for flag, pick in (("--supersedes", spec.supersedes), ("--source", spec.source)):
                if pick is not None and same:
                    args += [flag, same[pick % len(same)].id]
            if spec.raw:
                text = f"line one qzw{n:02d}x\nline two of {spec.scope}\n".encode()
                name = f"raw/{hashlib.sha256(text).hexdigest()}.txt"
                (self.root / "raw").mkdir(exist_ok=True)
                (self.root / name).write_bytes(text)
                args += ["--source", f"{name}#L1-L1"]
                names += [f"qzw{n:02d}x", name[4:68]]
            got = self.run(*args)
            if got.exit_code != 0:
                self.leaks.append(f"write #{n} failed: {got.output}")
                continue
            self.written.append(
                Written(
                    json.loads(got.stdout)["id"], spec.scope, tuple(x for x in names if x), domain
                )
            )

    def machinery(self) -> None:
        """What root's jobs leave behind: syntheses, failures, lint lines, LLM calls, archives."""
        world = self.world
        root = ["--as", "root"]
        if world.consolidate == "offline":
            self.run(*root, "consolidate", "--backend", "offline")
            self.covered["consolidate (offline)"] += 1
        elif world.consolidate == "mock-failing":
            MockBackend.enqueue(*[walls_world.failing] * 100)
            self.run(*root, "consolidate", "--backend", "mock")
            MockBackend.queue.clear()
            self.covered["failed syntheses"] += 1
        if world.lint:
            self.run(*root, "lint")
            self.covered["lint lines"] += 1
        if world.query:
            MockBackend.enqueue(*[walls_world.respond] * 4)
            self.run(*root, "query", "qzs00x decision", "--backend", "mock")
            MockBackend.queue.clear()
            self.covered["LLM calls over several scopes"] += 1
        if world.archive:
            got = self.run(
                *root, "archive", "--older-than", "1d", env={"LLM_WIKI_NOW": "2027-01-01"}
            )
            if "Archived 0" not in got.output and got.exit_code == 0:
                self.covered["archives"] += 1

    def archives(self) -> dict[str, set[str]]:
        """archive name -> the scopes of the entries it holds (from the files, not the site)."""
        import tarfile

        import zstandard

        out: dict[str, set[str]] = {}
        scope_of = {w.id: w.scope for w in self.written}
        for path in sorted((self.root / "archive").glob("*.tar.zst")):
            with (
                open(path, "rb") as fh,
                zstandard.ZstdDecompressor().stream_reader(fh) as raw,
                tarfile.open(fileobj=raw, mode="r|") as tar,
            ):
                for member in tar:
                    entry_id = Path(member.name).stem
                    out.setdefault(path.name, set()).add(scope_of.get(entry_id, "?"))
        return out

    def secrets(self, reader: str) -> list[str]:
        world = self.world
        visible = [w for w in self.written if world.can_read(reader, w.scope)]
        hidden = [w for w in self.written if not world.can_read(reader, w.scope)]
        shown_names = {n for w in visible for n in w.names}
        out = [w.id for w in hidden]
        out += sorted({n for w in hidden for n in w.names} - shown_names)
        out += [s for s in world.scopes if not world.can_read(reader, s)]
        for name, scopes in self.archives().items():
            if not any(world.can_read(reader, s) for s in scopes):
                out.append(name)
        return out

    def check_site(self, reader: str, out: Path, result: dict) -> None:
        self.sites += 1
        secrets = self.secrets(reader)
        visible = [w for w in self.written if self.world.can_read(reader, w.scope)]
        for path in sorted(out.rglob("*")):
            if not path.is_file():
                continue
            self.files += 1
            rel = path.relative_to(out).as_posix()
            data = path.read_bytes()
            for secret in secrets:
                if secret in rel or secret.encode() in data:
                    self.leaks.append(f"{reader}'s site: {rel} shows {secret!r}")
        if result["entries"] != len({w.id for w in visible} | self.generated(reader)):
            self.leaks.append(f"{reader}'s site counts {result['entries']} entries")
        home = (out / "index.html").read_text(encoding="utf-8")
        total = result["entries"]
        if f'<p class="lead">{total} {"entry" if total == 1 else "entries"}' not in home:
            self.leaks.append(f"{reader}'s home page does not count {total} entries")
        for domain in sorted({w.domain for w in visible}):
            n = sum(1 for w in visible if w.domain == domain) + self.generated(reader, domain)
            page = (out / "domains" / f"{domain}.html").read_text(encoding="utf-8")
            if f'<p class="lead">{n} {"entry" if n == 1 else "entries"}' not in page:
                self.leaks.append(f"{reader}'s {domain} page does not count {n} entries")

    def generated(self, reader: str, domain: str | None = None) -> Any:
        """Syntheses root's consolidate wrote (entries the world did not write itself)."""
        known = {w.id for w in self.written}
        found = set()
        for path in (self.root / "entries").rglob("*.md"):
            if path.stem in known:
                continue
            text = path.read_text(encoding="utf-8")
            scope = re.search(r"^scope: (\S+)$", text, re.M).group(1)
            got_domain = re.search(r"^domain: (\S+)$", text, re.M).group(1)
            if self.world.can_read(reader, scope) and domain in (None, got_domain):
                found.add(path.stem)
        return found if domain is None else len(found)

    def check_graph(self) -> None:
        scope_of = {w.id: w.scope for w in self.written}
        base = self.root / "graph"
        if not base.is_dir():
            return
        for path in sorted(base.rglob("*.md")):
            rel = path.relative_to(base)
            if len(rel.parts) != 2:
                self.leaks.append(f"graph/{rel}: a note outside a scope's folder under walls")
                continue
            for linked in re.findall(r"\[\[([^\]]+)\]\]", path.read_text(encoding="utf-8")):
                if scope_of.get(linked, rel.parts[0]) != rel.parts[0]:
                    self.leaks.append(f"graph/{rel} links {linked} of another scope")
        self.covered["graph notes"] += 1


def play(world: World, root: Path) -> Case:
    MockBackend.reset()
    case = Case(world, root)
    case.write_all()
    (root / "access.yaml").write_text(world.access_yaml())
    case.machinery()
    shared = root.parent / "site-shared"
    for reader in [*(name for name, _, _ in world.readers), "root"]:
        for out in (root.parent / f"site-{reader}", shared):
            got = case.run("--as", reader, "site", "--out", str(out), "--json")
            if got.exit_code != 0:
                case.leaks.append(f"site --as {reader} failed: {got.output}")
                continue
            case.check_site(reader, out, json.loads(got.stdout))
    case.check_graph()
    MockBackend.reset()
    return case


@dataclass
class Tally:
    cases: int = 0
    sites: int = 0
    files: int = 0
    entries: int = 0
    leaks: list[str] = field(default_factory=list)
    covered: Counter[str] = field(default_factory=Counter)

    def add(self, case: Case) -> None:
        self.cases += 1
        self.sites += case.sites
        self.files += case.files
        self.entries += len(case.written)
        self.leaks += case.leaks
        self.covered.update({k: 1 for k in case.covered})

    def line(self) -> str:
        return (
            f"{self.cases} cases, {self.entries} entries, {self.sites} sites built, {self.files} "
            f"generated files scanned; leaks found: {len(self.leaks)}\n  cases that exercised: "
            + ", ".join(f"{what} {n}" for what, n in sorted(self.covered.items()))
        )
