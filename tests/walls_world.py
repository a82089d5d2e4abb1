"""The walls property: a random walled wiki, and every way a reader can look at it or write to it.

Shared by ``tests/test_walls.py`` (a few hundred cases in the default run) and
``tests/bench/test_walls_bench.py`` (5,000 cases). One case (a :class:`World`):

- 2-4 scopes, 1-3 walled readers (each with some scopes it writes and some it only reads, maybe
  none) and an admin, ``root``;
- 1-9 entries written through the CLI by random writers, some into scopes the writer may not
  write, some superseding or citing entries of another scope: those writes must be refused and
  leave no trace;
- one reader (the subject) then lists, shows, queries (offline and on the mock LLM, maybe filing
  the answer back), evaluates, lints, verifies, consolidates and reads stats, and tries writes
  that must be refused; every other reader then lists, queries and reads stats.

Every entry carries distinctive marker words (``qz<field><n>x``) in its summary, body, alias,
question and rejected alternative. A hidden entry's markers, its id, and the name of a scope the
reader may not read must appear in no output and no prompt; a hidden id must read exactly like one
that never existed; every LLM prompt may hold only entries of the scopes its call-log line names;
every stored artefact that belongs to a scope (its index files, its failures file, its chunk notes,
its syntheses) holds only that scope's entries. Each broken rule is one *leak*.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

import mock_llm
from conftest import Cli
from llm_wiki.backends import MockBackend, read_calls
from llm_wiki.create import init_wiki
from llm_wiki.entries import parse_entry

SCOPE_POOL = ("matter-kestrel", "matter-osprey", "hr-plover", "deal-egret", "ops-heron")
NEVER_SCOPE = "matter-nowhere"  # a scope no entry and no reader has
READER_POOL = ("alice", "bob", "carol")
ACTORS = ("ann", "ben", "cyd")
DOMAINS = ("ledger", "hiring", "deals")
TYPES = ("decision", "incident", "reflection")
VOCAB = (
    "postgres",
    "ledger",
    "queue",
    "refund",
    "salary",
    "merger",
    "backup",
    "deploy",
    "contract",
    "audit",
)
FIELDS = "sbaqr"  # summary, body, alias, question, rejected alternative
MARKER_RE = re.compile(r"qz([sbaqrp])(\d\d)x")


def markers(n: int) -> list[str]:
    return [f"qz{f}{n:02d}x" for f in FIELDS]


# --------------------------------------------------------------------------- the world


@dataclass(frozen=True)
class Spec:
    """One entry some writer tries to write."""

    scope: str
    domain: str
    type: str
    words: tuple[str, ...]
    actor: str
    writer: str
    supersedes: int | None  # an earlier written entry (index, modulo how many there are)
    source: int | None
    day: int


class Readers:
    """access.yaml and the oracle from a world's ``readers``: (name, scopes, read_only)."""

    readers: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]

    def access_yaml(self) -> str:
        lines = ["readers:", "  root:", "    admin: true"]
        for name, scopes, read_only in self.readers:
            lines += [f"  {name}:", f"    scopes: [{', '.join(scopes)}]"]
            if read_only:
                lines.append(f"    read_only: [{', '.join(read_only)}]")
        return "\n".join(lines) + "\n"

    def can_read(self, reader: str, scope: str) -> bool:
        """The oracle, straight from the world (not from the code under test)."""
        if reader == "root":
            return True
        for name, scopes, read_only in self.readers:
            if name == reader:
                return scope in scopes or scope in read_only
        return False


def run_property(world_module: Any, examples: int, monkeypatch: Any, prefix: str) -> Any:
    """Play ``examples`` random worlds of ``world_module`` (its ``worlds()``, ``play()`` and
    ``Tally``), each in a fresh folder; fails on the first world with a leak."""
    import shutil
    import tempfile

    from hypothesis import HealthCheck, given, settings

    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02T10:00:00Z")
    tally = world_module.Tally()

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(world_module.worlds())
    def check(world: Any) -> None:
        base = Path(tempfile.mkdtemp(prefix=prefix))
        try:
            case = world_module.play(world, base / "wiki")
        finally:
            shutil.rmtree(base, ignore_errors=True)
        tally.add(case)
        assert not case.leaks, "\n".join(case.leaks)

    check()
    return tally


@dataclass(frozen=True)
class World(Readers):
    scopes: tuple[str, ...]
    readers: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]  # name, scopes, read_only
    specs: tuple[Spec, ...]
    subject: str
    questions: tuple[tuple[str, ...], ...]
    mock_query: bool
    file_back: bool
    consolidate: str | None  # None | "offline" | "mock" | "mock-failing" (cites a made-up id)
    walls_from: int = 0  # access.yaml is written before this entry (0: from the start)
    source: tuple[tuple[str, ...], ...] = ()  # lines of a chat to ingest (words, lure words)
    ingest_scope: str = ""  # where the subject ingests it ("": no ingest)
    root_ingest_scope: str = ""  # where root ingested the same bytes first, as .md
    probe: str = "--supersedes"  # how the subject names a hidden entry in a refused write

    def source_text(self) -> str:
        return "".join(
            f"{ACTORS[n % len(ACTORS)]}: we settled {' '.join(words)} for the ledger\n"
            for n, words in enumerate(self.source)
        )

    def can_write(self, reader: str, scope: str) -> bool:
        if reader == "root":
            return True
        return any(name == reader and scope in scopes for name, scopes, _ in self.readers)


@st.composite
def worlds(draw: st.DrawFn) -> World:
    """Mostly the interesting shape: every walled reader sees some scopes and not others, most
    entries are written, the subject is a walled reader; now and then a reader who sees nothing,
    one who reads every scope without being admin, or the admin as the subject."""
    scopes = tuple(draw(st.lists(st.sampled_from(SCOPE_POOL), min_size=2, max_size=4, unique=True)))
    names = draw(st.lists(st.sampled_from(READER_POOL), min_size=1, max_size=3, unique=True))
    readers = []
    for name in names:
        shape = draw(st.integers(0, 9))
        if shape == 0:  # sees nothing
            mine, read_only = [], []
        elif shape == 1:  # reads every scope, writes one, is no admin
            mine = [draw(st.sampled_from(scopes))]
            read_only = [s for s in scopes if s not in mine]
        else:  # writes some, maybe reads one more, never sees them all
            mine = draw(
                st.lists(st.sampled_from(scopes), min_size=1, max_size=len(scopes) - 1, unique=True)
            )
            rest = [s for s in scopes if s not in mine]
            read_only = draw(st.lists(st.sampled_from(rest), max_size=len(rest) - 1, unique=True))
        readers.append((name, tuple(mine), tuple(read_only)))
    writers = [*names, "root", "root", "root"]
    index = st.none() | st.integers(0, 8)
    spec = st.builds(
        Spec,
        scope=st.sampled_from(scopes),
        domain=st.sampled_from(DOMAINS),
        type=st.sampled_from(TYPES),
        words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3).map(tuple),
        actor=st.sampled_from(ACTORS),
        writer=st.sampled_from(writers),
        supersedes=index,
        source=index,
        day=st.integers(1, 28),
    )
    specs = tuple(draw(st.lists(spec, min_size=3, max_size=9)))
    question = st.lists(
        st.sampled_from(VOCAB) | st.integers(0, 8).map(lambda n: f"lure{n:02d}"),
        min_size=1,
        max_size=4,
    ).map(tuple)
    return World(
        scopes=scopes,
        readers=tuple(readers),
        specs=specs,
        subject=draw(st.sampled_from([*names, *names, *names, "root"])),
        questions=tuple(draw(st.lists(question, min_size=1, max_size=2))),
        mock_query=draw(st.sampled_from([True, True, False])),
        file_back=draw(st.booleans()),
        consolidate=draw(st.sampled_from([None, "offline", "mock", "mock-failing"])),
        walls_from=draw(st.sampled_from([0, 0, 0, 1, 2, 3])),
        source=tuple(draw(st.lists(question, min_size=3, max_size=5))),
        ingest_scope=draw(st.sampled_from(["", *scopes, *scopes, NEVER_SCOPE])),
        root_ingest_scope=draw(st.sampled_from(["", *scopes])),
        probe=draw(st.sampled_from(["--supersedes", "--source", "--id"])),
    )


# --------------------------------------------------------------------------- one case


def failing(prompt: str, purpose: str) -> str:
    """A mock LLM whose syntheses cite an entry it was never shown: every one fails closed and
    is recorded in its scope's failures file."""
    if purpose.startswith("consolidate") and purpose != "consolidate-verify":
        statements = [{"text": "It holds.", "cites": ["2026-01-01-made-up-0000"]}]
        return json.dumps({"title": "T", "summary": "S.", "statements": statements})
    return respond(prompt, purpose)


def respond(prompt: str, purpose: str) -> str:
    """A mock LLM that uses only what it was shown: it picks ids from the lines, answers citing
    the opened entries, consolidates like a careful model (tests/mock_llm.py), finds no
    contradictions."""
    if purpose == "query.pick":
        return json.dumps({"ids": re.findall(r"\[(\d{4}-\d\d-\d\d-[a-z0-9-]+)\]\(", prompt)[:3]})
    if purpose == "query.answer":
        opened = re.findall(r"^=== entry (\S+)", prompt, re.M)
        return " ".join(f"It is recorded [{i}]." for i in opened) or "NOTHING FOUND"
    if purpose == "lint":
        return json.dumps({"contradictions": []})
    if purpose == "brief":
        shown = mock_llm.shown_entries(prompt)[:3]
        return json.dumps(
            {"statements": [{"text": e["summary"], "cites": [e["id"]]} for e in shown]}
        )
    if purpose.startswith("ingest"):
        current = [
            m.group(1)
            for m in re.finditer(r"^- \d{4}-\d\d-\d\d .*?\[([a-z0-9-]+)\]\(.*$", prompt, re.M)
            if "superseded by" not in m.group(0)
        ]
        proposals = [
            {
                "type": "reflection",
                "domain": "ledger",
                "summary": said[0].upper() + said[1:] + ".",
                "supersedes": current[:1],
                "cites": [{"lines": f"L{number}", "quote": said}],
            }
            for number, said in re.findall(r"^L(\d+): \w+: (.{12,})$", prompt, re.M)[:2]
        ]
        return json.dumps({"entries": proposals})
    return mock_llm.respond(prompt, purpose)


@dataclass
class Written:
    id: str
    scope: str
    markers: tuple[str, ...] = ()
    domain: str = ""


@dataclass
class Case:
    """One world, played out; ``leaks`` lists every broken rule."""

    world: World
    root: Path
    cli: Cli = field(init=False)
    written: list[Written] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    refused_markers: list[str] = field(default_factory=list)
    outputs: int = 0
    prompts: int = 0
    probes: int = 0
    root_raw: str = ""
    _parsed: dict[Path, tuple[str, str, str]] = field(default_factory=dict)
    covered: Counter[str] = field(default_factory=Counter)  # what this case exercised

    def __post_init__(self) -> None:
        init_wiki(self.root)
        self.cli = Cli(self.root)
        self.walls = False

    def walls_on(self) -> None:
        if not self.walls:
            (self.root / "access.yaml").write_text(self.world.access_yaml())
            self.walls = True
            self.run("--as", "root", "stats")  # the catalog re-plans the index files

    # -- helpers
    def leak(self, what: str) -> None:
        self.leaks.append(what)

    def run(self, *args: str, env: dict[str, str] | None = None):
        return self.cli(*args, code=None, env=env)

    def on_disk(self) -> list[Written]:
        """Every entry on disk with its scope (the oracle reads the files, not the catalog)."""
        by_id = {w.id: w for w in self.written}
        out = []
        for path in sorted((self.root / "entries").rglob("*.md")):
            if path not in self._parsed:  # entries never change: parse each file once
                entry = parse_entry(path.read_text(encoding="utf-8"))
                self._parsed[path] = (entry.id, entry.scope, entry.domain)
            entry_id, scope, domain = self._parsed[path]
            known = by_id.get(entry_id)
            out.append(Written(entry_id, scope, known.markers if known else (), domain))
        return out

    def secrets(self, reader: str) -> list[str]:
        """What must never reach this reader: hidden entries' ids and markers, hidden scopes."""
        world = self.world
        hidden = [w for w in self.on_disk() if not world.can_read(reader, w.scope)]
        out = [w.id for w in hidden] + [m for w in hidden for m in w.markers]
        out += [s for s in world.scopes if not world.can_read(reader, s)]
        if self.root_raw and not world.can_read(reader, world.root_ingest_scope):
            out.append(self.root_raw)  # another scope ingested these very bytes
        return out

    def check(self, what: str, text: str, secrets: Iterable[str]) -> None:
        self.outputs += 1
        for secret in secrets:
            if secret in text:
                self.leak(f"{what}: shows {secret!r}")

    def snapshot(self) -> tuple[dict[str, tuple[int, int, int]], int]:
        """Every file (but the catalog cache) as (inode, size, mtime), and the catalog's rows.
        Files are only ever replaced (a new inode) or appended to (a new size and mtime)."""
        files = {}
        for path in sorted(self.root.rglob("*")):
            rel = path.relative_to(self.root).as_posix()
            if path.is_file() and not rel.startswith(".llm-wiki/catalog.sqlite3"):
                st = path.stat()
                files[rel] = (st.st_ino, st.st_size, st.st_mtime_ns)
        db = sqlite3.connect(str(self.root / ".llm-wiki" / "catalog.sqlite3"))
        try:
            rows = db.execute("SELECT count(*) FROM entries").fetchone()[0]
        finally:
            db.close()
        return files, rows

    def refused(self, what: str, args: list[str], marker: str) -> str:
        """Run a write that must be refused (exit 2) and leave no trace; its message."""
        self.probes += 1
        before = self.snapshot()
        result = self.run(*args)
        after = self.snapshot()
        if result.exit_code != 2:
            self.leak(f"{what}: exit {result.exit_code}, wanted a refusal (2): {result.output}")
        if before != after:
            changed = sorted(
                set(before[0]) ^ set(after[0])
                | {k for k in before[0] if k in after[0] and before[0][k] != after[0][k]}
            )
            self.leak(
                f"{what}: a refused write left a trace: {changed} rows {before[1]}->{after[1]}"
            )
        if marker:
            self.refused_markers.append(marker)
        return result.stderr

    # -- the writes
    def write_all(self) -> None:
        world = self.world
        for n, spec in enumerate(world.specs):
            if n >= world.walls_from:
                self.walls_on()
            s, b, a, q, r = markers(n)
            args = [
                "--as", spec.writer, "write", "--type", spec.type, "--domain", spec.domain,
                "--scope", spec.scope, "--summary", f"{s} {' '.join(spec.words)} lure{n:02d}",
                "--body", f"Body {b}: {' '.join(reversed(spec.words))}.", "--alias", a,
                "--question", f"What about {q}?", "--actor", spec.actor, "--tag", spec.words[0],
                "--date", f"2026-04-{spec.day:02d}",
            ]  # fmt: skip
            if spec.type == "decision":
                args += ["--alt", f"other: {r} was worse"]
            targets = []
            for flag, pick in (("--supersedes", spec.supersedes), ("--source", spec.source)):
                if pick is not None and self.written:
                    target = self.written[pick % len(self.written)]
                    args += [flag, target.id]
                    targets.append(target)
            allowed = (not self.walls or world.can_write(spec.writer, spec.scope)) and all(
                t.scope == spec.scope for t in targets
            )
            if not allowed:
                message = self.refused(f"write #{n} by {spec.writer}", args, s)
                self.refused_markers += [b, a, q, r]
                if self.walls and not world.can_write(spec.writer, spec.scope):
                    if "may not write to scope" not in message:
                        self.leak(f"write #{n}: unexpected refusal: {message}")
                elif "no such entry in scope" not in message:
                    self.leak(f"write #{n}: unexpected refusal: {message}")
                continue
            result = self.run(*args, "--json")
            if result.exit_code != 0:
                self.leak(f"write #{n} by {spec.writer} failed: {result.output}")
                continue
            written = json.loads(result.stdout)["id"]
            self.written.append(
                Written(
                    written,
                    spec.scope,
                    tuple(markers(n)[:4] + ([r] if spec.type == "decision" else [])),
                )
            )

    def source(self, suffix: str) -> Path:
        path = self.root.parent / f"chat{suffix}"
        path.write_text(self.world.source_text())
        return path

    def root_ingest(self) -> None:
        """root ingests the chat first, into its scope, as a .md file."""
        scope = self.world.root_ingest_scope
        if not scope:
            return
        MockBackend.enqueue(*[respond] * 4)
        got = self.run("--as", "root", "ingest", str(self.source(".md")), "--backend", "mock",
                       "--scope", scope, "--json")  # fmt: skip
        MockBackend.queue.clear()
        if got.exit_code != 0:
            self.leak(f"root ingest into {scope} failed: {got.output}")
            return
        self.root_raw = json.loads(got.stdout)["raw"]

    def import_adr(self, reader: str, secrets: list[str]) -> None:
        """Two architecture decision records imported into the ingest's scope."""
        scope = self.world.ingest_scope
        if not scope:
            return
        folder = self.root.parent / "adr"
        folder.mkdir(exist_ok=True)
        for n, words in enumerate(self.world.source[:2], 1):
            said = " ".join(words)
            (folder / f"{n:04d}-record.md").write_text(
                f"# {n}. Use {said} for the ledger\n\nDate: 2026-04-1{n}\n\n## Status\n\n"
                f"Accepted\n\n## Context\n\nWe needed {said}.\n\n## Decision\n\n"
                f"We will use {said}.\n"
            )
        args = ["--as", reader, "import-adr", str(folder), "--domain", "adr", "--scope", scope,
                "--json"]  # fmt: skip
        if not self.world.can_write(reader, scope):
            message = self.refused(f"{reader} import-adr --scope {scope}", args, "")
            if "may not write to scope" not in message:
                self.leak(f"{reader} import-adr --scope {scope}: unexpected refusal: {message}")
            return
        got = self.run(*args)
        self.check(f"{reader} import-adr", got.output, secrets)
        if got.exit_code != 0:
            self.leak(f"{reader} import-adr into {scope} failed: {got.output}")
        self.covered["import-adr"] += 1

    def ingest(self, reader: str, secrets: list[str]) -> None:
        scope = self.world.ingest_scope
        if not scope:
            return
        args = ["--as", reader, "ingest", str(self.source(".txt")), "--backend", "mock",
                "--scope", scope, "--json"]  # fmt: skip
        if not self.world.can_write(reader, scope):
            message = self.refused(f"{reader} ingest --scope {scope}", args, "")
            if "may not write to scope" not in message:
                self.leak(f"{reader} ingest --scope {scope}: unexpected refusal: {message}")
            return
        MockBackend.enqueue(*[respond] * 4)
        got = self.run(*args)
        MockBackend.queue.clear()
        self.covered["ingest"] += 1
        if self.root_raw and self.root_raw in secrets:
            self.covered["ingest after a hidden scope ingested the same bytes"] += 1
        self.check(f"{reader} ingest", got.output, secrets)
        if got.exit_code != 0:
            self.leak(f"{reader} ingest into {scope} failed: {got.output}")

    # -- one reader, every read path
    def read_all(self, reader: str, full: bool) -> None:
        world = self.world
        secrets = self.secrets(reader)
        entries = self.on_disk()
        visible = {w.id for w in entries if world.can_read(reader, w.scope)}
        hidden = [w for w in entries if w.id not in visible]
        if hidden:
            self.covered["a reader with hidden entries"] += 1
        me = ["--as", reader]
        history_from = len(MockBackend.history)

        listed = self.run(*me, "list", "--json", "--limit", "200")
        self.check(f"{reader} list --json", listed.output, secrets)
        page = json.loads(listed.stdout)
        if {e["id"] for e in page["entries"]} != visible or page["total"] != len(visible):
            self.leak(f"{reader} list: shows {page['total']} entries, sees {len(visible)}")
        stats = self.run(*me, "stats", "--json")
        self.check(f"{reader} stats --json", stats.output, secrets)
        counted = json.loads(stats.stdout)
        if counted["entries"] != len(visible) or sum(counted["by_scope"].values()) != len(visible):
            self.leak(f"{reader} stats: counts {counted['entries']} entries, sees {len(visible)}")
        for scope in counted["llm"]["by_scope"]:
            if not all(world.can_read(reader, s) for s in scope.split(",")):
                self.leak(f"{reader} stats: LLM calls of scope {scope}")
        for question in world.questions:
            text = " ".join(question)
            self.check(
                f"{reader} query {text!r}", self.run(*me, "query", text, "--json").output, secrets
            )
        briefing = self.run(*me, "brief", "--json")
        self.check(f"{reader} brief --json", briefing.output, secrets)
        if json.loads(briefing.stdout)["counts"]["entries"] != len(visible):
            self.leak(f"{reader} brief: counts entries it does not see")
        if hidden:
            self.same_as_absent(reader, hidden[0].id)
        if not full:
            return
        self.mcp(reader, secrets, hidden, visible)

        self.check(f"{reader} list", self.run(*me, "list").output, secrets)
        for actor in ACTORS[: 1 + len(entries) % 2]:
            got = json.loads(self.run(*me, "list", "--actor", actor, "--json").stdout)
            mine = {w.id for w in entries if w.id in visible and self._actor(w) == actor}
            if {e["id"] for e in got["entries"]} != mine:
                self.leak(f"{reader} list --actor {actor}: not the visible entries of {actor}")
            self.check(f"{reader} list --actor", json.dumps(got), secrets)
        empty = self.run(*me, "list", "--scope", NEVER_SCOPE, "--json").output
        for scope in [s for s in world.scopes if not world.can_read(reader, s)][:1]:
            got = self.run(*me, "list", "--scope", scope, "--json").output
            if got != empty:
                self.leak(f"{reader} list --scope {scope}: differs from an unknown scope")
        for w in [w for w in entries if w.id in visible][:2]:
            if w.id in visible:
                shown = self.run(*me, "show", w.id)
                if shown.exit_code != 0 or w.id not in shown.stdout:
                    self.leak(f"{reader} show {w.id}: a visible entry is not shown")
                self.check(f"{reader} show {w.id}", shown.output, secrets)
        self.check(f"{reader} stats", self.run(*me, "stats").output, secrets)
        self.check(f"{reader} verify", self.run(*me, "verify", "--json").output, secrets)
        self.check(f"{reader} lint", self.run(*me, "lint", "--json").output, secrets)
        for question in world.questions:
            text = " ".join(question)
            self.check(f"{reader} query {text!r}", self.run(*me, "query", text).output, secrets)
        questions = self.root.parent / "questions.jsonl"
        questions.write_text(
            "\n".join(
                json.dumps(
                    {"qid": str(n), "question": " ".join(q), "relevant": sorted(visible)[:2]}
                )
                for n, q in enumerate(world.questions)
            )
            + "\n"
        )
        self.check(
            f"{reader} eval", self.run(*me, "eval", str(questions), "--json").output, secrets
        )

        self.ingest(reader, secrets)
        self.import_adr(reader, secrets)
        if world.mock_query:
            MockBackend.enqueue(*[respond] * 50)
            for question in world.questions:
                args = [*me, "query", " ".join(question), "--backend", "mock", "--json"]
                if world.file_back:
                    args.append("--file-back")
                self.check(f"{reader} query (mock)", self.run(*args).output, secrets)
            lint = self.run(*me, "lint", "--with-llm", "--backend", "mock", "--json")
            self.check(f"{reader} lint --with-llm", lint.output, secrets)
            narrated = self.run(*me, "brief", "--backend", "mock", "--json")
            self.check(f"{reader} brief (mock)", narrated.output, secrets)
            saved = self.run(*me, "brief", "--save", "--backend", "mock", "--json")
            self.check(f"{reader} brief --save (mock)", saved.output, secrets)
            MockBackend.queue.clear()
        else:
            self.check(f"{reader} brief", self.run(*me, "brief").output, secrets)
            saved = self.run(*me, "brief", "--save", "--json")
            self.check(f"{reader} brief --save", saved.output, secrets)
        if world.consolidate:
            env = {"LLM_WIKI_BACKEND": world.consolidate.removesuffix("-failing")}
            responder = failing if world.consolidate.endswith("-failing") else respond
            MockBackend.enqueue(*[responder] * 100)
            self.check(
                f"{reader} consolidate",
                self.run(*me, "consolidate", "--json", env=env).output,
                secrets,
            )
            MockBackend.queue.clear()
            domain = "never-used"
            on_disk = self.on_disk()
            hidden_domains = {w.domain for w in on_disk} - {
                w.domain for w in on_disk if world.can_write(reader, w.scope)
            }
            if hidden_domains:
                one = sorted(hidden_domains)[0]
                a = self.run(*me, "consolidate", "--domain", one, "--dry-run", env=env)
                b = self.run(*me, "consolidate", "--domain", domain, "--dry-run", env=env)
                if (a.exit_code, a.stderr.replace(one, "D")) != (
                    b.exit_code,
                    b.stderr.replace(domain, "D"),
                ):
                    self.leak(
                        f"{reader} consolidate --domain {one}: differs from an unknown domain"
                    )
        for command in (["index", "--json"], ["archive", "--dry-run"]):
            got = self.run(*me, *command)
            self.check(f"{reader} {' '.join(command)}", got.output, secrets)
            if reader != "root" and (
                got.exit_code != 1 or "does not run as reader" not in got.output
            ):
                self.leak(f"{reader} {command[0]}: a disk command ran for a walled reader")
        if hidden and MockBackend.history[history_from:]:
            self.covered["prompts of a reader with hidden entries"] += 1
        if world.consolidate and hidden:
            self.covered[f"consolidate ({world.consolidate}) with hidden entries"] += 1
        if world.walls_from:
            self.covered["walls put up after some writes"] += 1
        for _purpose, prompt in MockBackend.history[history_from:]:
            self.prompts += 1
            self.check(f"{reader} prompt", prompt, secrets)
        self.refused_writes(reader, hidden, visible)

    def mcp(
        self, reader: str, secrets: list[str], hidden: list[Written], visible: set[str]
    ) -> None:
        """The MCP server fixed to this reader, through the SDK's in-process client: every tool
        result is checked like CLI output; a hidden id reads like an absent one; a refused
        wiki_write leaves no trace and reads the same for a hidden id as for an absent one."""
        import anyio
        from mcp import Client

        from llm_wiki.access import resolve_viewer
        from llm_wiki.mcp_server import build_server

        wiki = self._wiki()
        server = build_server(wiki, resolve_viewer(wiki, reader))
        world = self.world

        async def call(
            client: Client, name: str, allow: Iterable[str] = (), **arguments: object
        ) -> tuple[bool, str, dict]:
            """One tool call; its result may show nothing hidden but what it was given."""
            result = await client.call_tool(name, arguments)
            text = "\n".join(getattr(c, "text", "") for c in result.content)
            data = result.structured_content or {}
            seen = text + json.dumps(data)
            for given in allow:  # echoing what the caller typed reveals nothing
                seen = seen.replace(given, "<given>")
            self.check(f"{reader} mcp {name}", seen, secrets)
            if not data and not result.is_error:
                data = json.loads(text)
            return result.is_error, text, data

        async def refused_write(client: Client, what: str, **extra: object) -> str:
            marker = f"qzp{len(self.refused_markers):02d}x"
            self.refused_markers.append(marker)
            self.probes += 1
            before = self.snapshot()
            given = [str(extra.get("scope")), *extra.get("supersedes", [])]  # type: ignore[misc]
            failed, text, _ = await call(
                client, "wiki_write", allow=given, type="reflection", domain="ledger",
                summary=f"Probe {marker}", **extra,
            )  # fmt: skip
            if not failed or self.snapshot() != before:
                self.leak(f"{reader} mcp wiki_write ({what}): not refused, or left a trace")
            return text

        async def steps(client: Client) -> None:
            listed: set[str] = set()
            cursor = None
            while True:
                args: dict[str, object] = {"limit": 4}
                if cursor:
                    args["cursor"] = cursor
                _, _, page = await call(client, "wiki_list", **args)
                listed |= {e["id"] for e in page["entries"]}
                if page["total"] != len(visible):
                    self.leak(f"{reader} mcp wiki_list: total {page['total']}, sees {len(visible)}")
                cursor = page["next_cursor"]
                if not cursor:
                    break
            if listed != visible:
                self.leak(f"{reader} mcp wiki_list: lists other entries than it sees")
            if hidden:
                target = hidden[0].id
                absent = target[:-4] + "ffff"
                a = await call(client, "wiki_show", allow=[target], id=target)
                b = await call(client, "wiki_show", allow=[absent], id=absent)
                if (a[0], a[1].replace(target, "ID")) != (b[0], b[1].replace(absent, "ID")):
                    self.leak(f"{reader} mcp wiki_show {target}: differs from an absent id")
            self.covered["mcp session"] += 1
            for entry_id in sorted(visible)[:2]:
                failed, text, _ = await call(client, "wiki_show", id=entry_id)
                if failed:
                    self.leak(f"{reader} mcp wiki_show {entry_id}: {text}")
            for question in world.questions:
                await call(client, "wiki_query", question=" ".join(question))
            _, _, briefing = await call(client, "wiki_brief", days=7)
            if briefing["counts"]["entries"] != len(visible):
                self.leak(f"{reader} mcp wiki_brief: counts entries it does not see")
            barred = [s for s in [*world.scopes, NEVER_SCOPE] if not world.can_write(reader, s)]
            if barred:
                await refused_write(client, "scope", scope=barred[0])
            own = next((s for s in world.scopes if world.can_write(reader, s)), None)
            if own and hidden:  # the same words for a hidden id as for one that never was
                target = hidden[0].id
                absent = target[:-4] + "ffff"
                a_text = await refused_write(client, "hidden", scope=own, supersedes=[target])
                b_text = await refused_write(client, "absent", scope=own, supersedes=[absent])
                if a_text.replace(target, "ID") != b_text.replace(absent, "ID"):
                    self.leak(f"{reader} mcp wiki_write: a hidden id reads unlike an absent one")

        async def main() -> None:
            async with Client(server) as client:
                await steps(client)

        anyio.run(main)

    def _actor(self, w: Written) -> str | None:
        for n, spec in enumerate(self.world.specs):
            if w.markers and w.markers[0] == markers(n)[0]:
                return spec.actor
        return None

    def same_as_absent(self, reader: str, hidden_id: str) -> None:
        """``show`` of a hidden id reads exactly like ``show`` of an id that never existed."""
        absent = (
            hidden_id[:-4] + "ffff" if not hidden_id.endswith("ffff") else hidden_id[:-4] + "eeee"
        )
        a = self.run("--as", reader, "show", hidden_id)
        b = self.run("--as", reader, "show", absent)
        if (a.exit_code, a.output.replace(hidden_id, "ID")) != (
            b.exit_code,
            b.output.replace(absent, "ID"),
        ):
            self.leak(f"{reader} show {hidden_id}: differs from an absent id: {a.output!r}")

    def refused_writes(self, reader: str, hidden: list[Written], visible: set[str]) -> None:
        """Writes this reader may not make: each refused, traceless, and worded the same whichever
        scope (or none) holds what it names."""
        world = self.world
        me = ["--as", reader]

        def write(scope: str, *extra: str) -> tuple[list[str], str]:
            marker = f"qzp{len(self.refused_markers):02d}x"
            args = [*me, "write", "--type", "reflection", "--domain", "ledger", "--scope", scope,
                    "--summary", f"Probe {marker}", *extra]  # fmt: skip
            return args, marker

        readable = [s for s in world.scopes if world.can_read(reader, s)]
        barred = [  # one scope read only, one hidden, one that no one has
            *[s for s in readable if not world.can_write(reader, s)][:1],
            *[s for s in world.scopes if s not in readable][:1],
            *([NEVER_SCOPE] if reader != "root" else []),
        ]
        messages = set()
        for scope in barred:
            args, marker = write(scope)
            message = self.refused(f"{reader} write --scope {scope}", args, marker)
            messages.add(message.replace(scope, "S"))
        if len(messages) > 1:
            self.leak(f"{reader}: refusals differ by scope: {sorted(messages)}")
        own = next((s for s in world.scopes if world.can_write(reader, s)), None)
        if own is None or not hidden:
            return
        target, absent = hidden[0].id, hidden[0].id[:-4] + "ffff"
        for flag in [world.probe]:
            said = []
            others = [target, absent] + ([*sorted(visible)[:1]] if flag == "--id" else [])
            for other in others:
                args, marker = write(own, flag, other)
                message = self.refused(f"{reader} write {flag} {other}", args, marker)
                said.append(message.replace(other, "ID"))
            if len(set(said)) > 1:
                self.leak(f"{reader} write {flag}: a hidden id reads unlike another: {said}")

    # -- what is stored
    def check_stored(self) -> None:
        """Index files, failures files, chunk notes and syntheses of a scope hold only that
        scope's entries; the call log names a scope on every line and each prompt holds only
        entries of the scopes its line names; a refused write's words are nowhere on disk."""
        entries = self.on_disk()
        scope_of_marker = {m: w.scope for w in entries for m in w.markers}
        scope_of_id = {w.id: w.scope for w in entries}

        def foreign(text: str, allowed: set[str]) -> list[str]:
            found = [m for m, s in scope_of_marker.items() if s not in allowed and m in text]
            found += [i for i, s in scope_of_id.items() if s not in allowed and i in text]
            return found

        if (self.root / "synthesis-failures").is_dir():
            self.covered["synthesis failures recorded per scope"] += 1
        if (self.root / "briefings").is_dir():
            self.covered["briefings saved per scope"] += 1
        if (self.root / "INDEX.md").exists() or (self.root / "index").exists():
            self.leak("a whole-wiki INDEX.md or index/ exists under walls")
        for base in ("indexes", "synthesis-failures", ".llm-wiki/consolidate", "briefings"):
            folder = self.root / base
            if not folder.is_dir():
                continue
            for path in folder.rglob("*"):
                if not path.is_file():
                    continue
                rel = path.relative_to(folder).as_posix()
                scope = rel.split("/")[0].removesuffix(".md")
                self.outputs += 1
                if bad := foreign(path.read_text(encoding="utf-8"), {scope}):
                    self.leak(f"{base}/{rel} holds entries of another scope: {bad}")
        for w in entries:
            if not w.markers:  # generated: a synthesis or a filed-back answer
                path = next((self.root / "entries").rglob(f"{w.id}.md"))
                if bad := foreign(path.read_text(encoding="utf-8"), {w.scope}):
                    self.leak(f"generated {w.id} ({w.scope}) holds entries of another scope: {bad}")
        calls = read_calls(self._wiki())
        history = MockBackend.history
        if len(calls) != len(history):
            self.leak(f"{len(history)} prompts but {len(calls)} lines in the call log")
        for call, (_purpose, prompt) in zip(calls, history, strict=False):
            scopes = {s for s in str(call.get("scope") or "").split(",") if s}
            if not scopes:
                self.leak(f"a call-log line without a scope: {call}")
            if bad := foreign(prompt, scopes):
                self.leak(f"a {call['purpose']} prompt logged for {sorted(scopes)} holds {bad}")
        blob = b"".join(p.read_bytes() for p in self.root.rglob("*") if p.is_file())
        for marker in self.refused_markers:
            if marker.encode() in blob:
                self.leak(f"refused write marker {marker} is on disk")

    def _wiki(self):
        from llm_wiki.wiki import Wiki

        return Wiki(self.root)


def play(world: World, root: Path) -> Case:
    """Write the world, read it as every reader, check what is stored."""
    MockBackend.reset()
    case = Case(world, root)
    case.write_all()
    case.walls_on()
    case.root_ingest()
    case.read_all(world.subject, full=True)
    for name, _, _ in world.readers:
        if name != world.subject:
            case.read_all(name, full=False)
    case.check_stored()
    MockBackend.reset()
    return case


@dataclass
class Tally:
    """What a run covered, for the report."""

    cases: int = 0
    outputs: int = 0
    prompts: int = 0
    probes: int = 0
    entries: int = 0
    leaks: list[str] = field(default_factory=list)
    covered: Counter[str] = field(default_factory=Counter)

    def add(self, case: Case) -> None:
        self.cases += 1
        self.covered.update({k: 1 for k in case.covered})
        self.outputs += case.outputs
        self.prompts += case.prompts
        self.probes += case.probes
        self.entries += len(case.written)
        self.leaks += case.leaks

    def line(self) -> str:
        return (
            f"{self.cases} cases, {self.entries} entries written, {self.outputs} outputs and "
            f"stored files checked, {self.prompts} prompts checked, {self.probes} refused writes "
            f"checked; leaks found: {len(self.leaks)}\n  cases that exercised: "
            + ", ".join(f"{what} {n}" for what, n in sorted(self.covered.items()))
        )
