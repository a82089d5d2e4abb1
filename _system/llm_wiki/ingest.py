"""Ingest: a raw source goes in once; the entries worth keeping come out, each citing it.

The flow (:func:`ingest`):

1. **Backend.** Reading a source takes an LLM. Without a usable one (offline, no key, no
   ``claude``) the run stops before anything is stored, naming the backends that can do it.
2. **Seen before?** A source is named by its sha256, and log.md holds one ``ingest`` line per
   ingest (``sha256``, ``bytes``, ``kind``, ``scope``, the lines read, the entries written). The
   same bytes ingested into the same scope again: nothing happens, not even an LLM call. A
   conversation that starts with exactly the bytes of one ingested before (the sha256 of its
   first ``bytes`` bytes is a logged one) has grown: only the lines after that prefix are read.
   log.md is the only record; nothing else is kept.
3. **Parts.** The lines to read are cut into parts of ``ingest.chunk_tokens``; each part is one
   LLM call (a second one only when its reply is not readable JSON). With each part go the
   schema's "when to write" rule and types, the domains in use, and the existing index lines
   most related to the part — the retrieval ranker over the part's most frequent words, within
   ``ingest.index_tokens`` — of the target scope only. Both shrink to fit the model's context
   window after its reply (:func:`llm_wiki.backends.limits`). A source needing more parts than
   ``--max-calls`` is refused before any call.
4. **Checks**, per proposal, failing closed (a failed proposal is reported and nothing is written
   for it): it cites lines shown in its part, each with a verbatim quote found in those lines
   (:func:`citations.check_quote`); the numbers, dates and quoted words of its summary, body,
   alternatives and date occur in the part (:func:`citations.check_facts`); it supersedes only
   current entries listed in its prompt; a summary nearly the same as a listed entry (or an
   earlier proposal) of its domain that it does not supersede is a duplicate; and it satisfies
   schema.md. Alternatives are kept as the source gives them, never invented.
5. **Store.** All calls are made before anything is stored. Then the raw file
   ``raw/<sha256>.<ext>`` (mode 0444, created no-clobber), each entry through
   :func:`write.write_entry` (``origin: ingested``, ``sources`` = its cited lines, the quotes in
   its body), and last the ``ingest`` line. A later proposal that supersedes an entry an earlier
   one of the same run already replaced supersedes that newer entry instead.

Walls: entries go to one scope the reader may write (``--scope``, default settings.yaml); the
prompt shows only index lines of that scope, so nothing of another audience reaches an entry.

``--inbox DIR`` (:func:`ingest_inbox`) ingests every file of DIR left unchanged for
``--quiet-minutes`` by the one clock: a conversation is ingested once it has been quiet that
long, and again, for its new part only, after it grows.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llm_wiki.backends as backends
import llm_wiki.clock as clock
import llm_wiki.progress as progress
import llm_wiki.store as store
from llm_wiki.access import Viewer, require_write, walls_on
from llm_wiki.catalog import Catalog, Row, read_catalog
from llm_wiki.citations import CitationProblem, Evidence, check_facts, check_quote, fold
from llm_wiki.entries import NAME_RE, Entry, decode_text, entry_from_mapping
from llm_wiki.errors import BackendFailed, BackendUnavailable, InvalidInput, WikiError
from llm_wiki.files import create_no_clobber, sync_folders
from llm_wiki.lint import DUPLICATE_JACCARD, summary_overlap
from llm_wiki.prompts import json_object, render_prompt
from llm_wiki.ranking import MIN_LINE_TOKENS, Question, Ranker, parse_question, shortlist_lines
from llm_wiki.schema import check_entry
from llm_wiki.slugs import slugify
from llm_wiki.stats import entry_stats
from llm_wiki.wiki import Wiki
from llm_wiki.write import write_entry

KINDS = ("conversation", "document")
OP = "ingest"
PURPOSE = "ingest"
DEFAULTS = {"chunk_tokens": 6000, "index_tokens": 2000, "max_calls": 20, "quiet_minutes": 10}
OUT_TOKENS = 4096  # the reply to one part
TEMPLATE_TOKENS = 700  # the part prompt's own words (ingest_source.j2), around lines and index
MIN_QUOTE_CHARS = 12  # a shorter quote would be found almost anywhere
MAX_TERMS = 40  # the part's most frequent words the ranker searches for
FIELDS = (  # what a proposal may set; scope, origin and sources are the ingest's own
    "type",
    "domain",
    "summary",
    "date",
    "status",
    "actors",
    "tags",
    "alternatives_considered",
    "aliases",
    "questions",
    "supersedes",
    "body",
)

_SHA_RE = re.compile(r"^[0-9a-f]{64}$")
_LINES_RE = re.compile(r"^#?L?(\d+)(?:\s*[-–]\s*L?(\d+))?$", re.I)
_NO_OFFLINE_RE = re.compile(r",? or (?:use|choose another) --backend [^.]*?\boffline\b[^.]*\.?$")
_WORD_RE = re.compile(r"[^\W_]+")
# "maria: ...", "[2026-04-14 09:02] maria: ...", "10:02 <dev> ...", "**Lucas**: ...", "User: ..."
_SPEAKER_RE = re.compile(
    r"^\s*(?:\[[^\]\n]{1,40}\]\s*|\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d)?\S*\s+|\d{1,2}:\d\d(?::\d\d)?\s+)?"
    r"(?:<[^>\n]{1,40}>\s|(?:\*\*)?[^\W\d][\w .@'-]{0,38}(?:\*\*)?:\s)"
)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Written:
    """One entry an ingest wrote (or, in a dry run, would write)."""

    id: str
    path: str
    type: str
    summary: str
    supersedes: tuple[str, ...]
    sources: tuple[str, ...]
    created: bool  # False: identical content was already recorded under this id

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "type": self.type,
            "summary": self.summary,
            "supersedes": list(self.supersedes),
            "sources": list(self.sources),
            "created": self.created,
        }


@dataclass(frozen=True)
class Rejected:
    """A proposal that failed its checks; nothing was written for it."""

    summary: str
    part: int
    problems: tuple[CitationProblem, ...]

    @property
    def failed(self) -> bool:
        """Refused for a fault of the reply (not only as a near-duplicate of a recorded entry)."""
        return any(p.kind != "near-duplicate" for p in self.problems)

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "part": self.part,
            "problems": [{"kind": p.kind, "detail": p.detail} for p in self.problems],
        }


class UnreadableReply(BackendFailed):
    """The model's reply could not be read, even after a repair; ``result`` says what was
    spent (nothing was stored)."""

    def __init__(self, message: str, result: IngestResult | None = None) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class IngestResult:
    source: str  # the path given, or "-"
    status: str  # ingested | unchanged | dry-run
    raw: str  # raw/<sha256>.<ext>
    sha256: str
    bytes: int
    kind: str
    scope: str
    first_line: int = 0  # the lines read (0: none)
    last_line: int = 0
    previous: str | None = None  # the earlier ingest this one grew from
    ingested_at: str | None = None  # unchanged: when it was ingested
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    parts: int = 0
    quotes_checked: int = 0  # cited quotes found in their lines, over all proposals
    written: tuple[Written, ...] = ()
    rejected: tuple[Rejected, ...] = ()
    backend: str = ""  # the backend that read the source
    backend_source: str = ""  # where its name came from (set by the Session)
    llm_ok: int = 0  # LLM calls whose reply could be read
    llm_failed: int = 0  # LLM calls whose reply could not be read
    limits: dict[str, Any] = dataclasses.field(default_factory=dict)  # the model's, parts' sizes

    @property
    def llm_all_failed(self) -> bool:
        """The LLM proposed entries and every one failed the checks (the command exits 1); a
        proposal refused only as a near-duplicate of a recorded entry is no failure."""
        return any(r.failed for r in self.rejected) and not self.written

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "status": self.status,
            "raw": self.raw,
            "sha256": self.sha256,
            "bytes": self.bytes,
            "kind": self.kind,
            "scope": self.scope,
            "lines": [self.first_line, self.last_line] if self.first_line else None,
            "previous": self.previous,
            "ingested_at": self.ingested_at,
            "calls": self.calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "parts": self.parts,
            "quotes_checked": self.quotes_checked,
            "written": [w.to_dict() for w in self.written],
            "rejected": [r.to_dict() for r in self.rejected],
            "backend": self.backend,
            "backend_source": self.backend_source or None,
            "llm_outcome": {"ok": self.llm_ok, "failed": self.llm_failed},
            "limits": self.limits,
        }


@dataclass(frozen=True)
class InboxItem:
    name: str
    status: str  # waiting | unchanged | ingested | dry-run | failed
    detail: str = ""
    result: IngestResult | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "status": self.status, "detail": self.detail}
        if self.result is not None:
            data["result"] = self.result.to_dict()
        return data


@dataclass(frozen=True)
class InboxResult:
    folder: str
    quiet_minutes: float
    items: tuple[InboxItem, ...]
    backend: str = ""
    backend_source: str = ""  # where the backend's name came from (set by the Session)

    @property
    def failed(self) -> list[InboxItem]:
        return [i for i in self.items if i.status == "failed"]

    def to_dict(self) -> dict[str, Any]:
        results = [i.result for i in self.items if i.result is not None]
        return {
            "folder": self.folder,
            "quiet_minutes": self.quiet_minutes,
            "ok": not self.failed,
            "backend": self.backend,
            "backend_source": self.backend_source or None,
            "llm_outcome": {
                "ok": sum(r.llm_ok for r in results),
                "failed": sum(r.llm_failed for r in results),
            },
            "items": [i.to_dict() for i in self.items],
        }


# --------------------------------------------------------------------------- the backend


def llm_backend(wiki: Wiki, backend: backends.Backend | None = None) -> backends.Backend:
    """The backend that will read the source (the wiki's own when None); BackendUnavailable,
    naming the ones that can, when it is offline or cannot run here."""
    chosen = backend or backends.get_backend(wiki)
    able = " or ".join(backends.backend_names(llm_only=True))
    if not chosen.is_llm:
        raise BackendUnavailable(
            f"ingest needs an LLM backend to read a source ({able}); {chosen.name} cannot. "
            "Pass --backend, or set backend in settings.yaml."
        )
    try:
        chosen.check()
    except BackendUnavailable as exc:
        reason = _NO_OFFLINE_RE.sub("", exc.message).rstrip(" .")
        raise BackendUnavailable(f"ingest needs a usable LLM backend ({able}): {reason}.") from None
    return chosen


# --------------------------------------------------------------------------- what was ingested


@dataclass(frozen=True)
class Ingested:
    """One ``ingest`` line of log.md."""

    raw: str
    sha256: str
    bytes: int
    scope: str
    kind: str
    time: str


def ingested(wiki: Wiki, scope: str | None = None) -> list[Ingested]:
    """Every ingest recorded in log.md (of ``scope``, when given), oldest first."""
    try:
        data = wiki.log_path.read_bytes()
    except FileNotFoundError:
        return []
    out = []
    marker = f"Z {OP} raw/".encode()
    for raw_line in data.splitlines():
        if marker not in raw_line:
            continue
        line = store.parse_log_line(raw_line.decode("utf-8", "replace"))
        if line is None or line.op != OP:
            continue
        fields = line.fields
        sha = fields.get("sha256", "")
        size = fields.get("bytes", "")
        if not _SHA_RE.match(sha) or not size.isdigit():
            continue
        if scope is not None and fields.get("scope") != scope:
            continue
        out.append(
            Ingested(
                line.subject,
                sha,
                int(size),
                fields.get("scope", ""),
                fields.get("kind", ""),
                line.time,
            )
        )
    return out


def earlier_version(
    data: bytes, sha: str, kind: str, earlier: Sequence[Ingested]
) -> tuple[Ingested | None, bool]:
    """(the ingest this source repeats or grew from, whether it is the very same bytes).

    Only a conversation grows: one whose first bytes are exactly an ingested source's bytes
    (compared by the sha256 logged for them; the longest such prefix wins).
    """
    for item in earlier:
        if item.sha256 == sha:
            return item, True
    if kind != "conversation":
        return None, False
    digests: dict[int, str] = {}
    for item in sorted(earlier, key=lambda i: -i.bytes):
        if not 0 < item.bytes < len(data):
            continue
        if item.bytes not in digests:
            digests[item.bytes] = store.sha256_bytes(data[: item.bytes])
        if digests[item.bytes] == item.sha256:
            return item, False
    return None, False


def first_new_line(prefix: bytes) -> int:
    """The number of the first line not wholly inside ``prefix`` (a line the prefix cut in two
    is read again, whole)."""
    before = prefix.decode("utf-8", "replace").splitlines(keepends=True)
    if not before:
        return 1
    last = before[-1]
    return len(before) + 1 if last.splitlines()[0] != last else len(before)


def detect_kind(text: str) -> str:
    """conversation when most lines look like messages ("name: ...", "[time] name: ...", JSON
    lines with a role), else document."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "document"
    said = sum(
        1
        for ln in lines
        if _SPEAKER_RE.match(ln) or (ln.lstrip().startswith("{") and '"role"' in ln)
    )
    return "conversation" if said >= 3 and said >= 0.4 * len(lines) else "document"


# --------------------------------------------------------------------------- parts and prompts


@dataclass
class _Part:
    number: int
    lines: list[tuple[int, str]]
    rows: tuple[Row, ...] = ()  # the index lines shown with it
    prefiltered: bool = False
    total: int = 0

    @property
    def first(self) -> int:
        return self.lines[0][0]

    @property
    def last(self) -> int:
        return self.lines[-1][0]

    @property
    def text(self) -> str:
        return "\n".join(t for _, t in self.lines)


def make_parts(lines: Sequence[str], first: int, limit: int) -> list[_Part]:
    """Lines ``first``.. cut into parts of at most ``limit`` tokens (a single longer line is
    shown cut, in a part of its own). Parts holding only blank lines are left out."""
    parts: list[_Part] = []
    current: list[tuple[int, str]] = []
    used = 0
    room = max(200, limit * 3 - 60)  # bytes of one line
    for number in range(first, len(lines) + 1):
        text = lines[number - 1]
        if len(text.encode()) > room:
            text = text.encode()[:room].decode("utf-8", "ignore") + " [… line cut]"
        cost = backends.estimate_tokens(f"L{number}: {text}\n")
        if current and used + cost > limit:
            parts.append(_Part(len(parts) + 1, current))
            current, used = [], 0
        current.append((number, text))
        used += cost
    if current:
        parts.append(_Part(len(parts) + 1, current))
    kept = [p for p in parts if any(t.strip() for _, t in p.lines)]
    for n, part in enumerate(kept, 1):
        part.number = n
    return kept


def scope_viewer(viewer: Viewer, scope: str, catalog: Catalog) -> Viewer:
    """The reader narrowed to one scope: what an entry of that scope may be drawn from."""
    if viewer.sees_all and catalog.scopes() in ([], [scope]):
        return viewer  # nothing to narrow; keeps BM25 in the ranking
    return Viewer(
        name=viewer.name, read=frozenset({scope}), write=frozenset({scope}), walls=viewer.walls
    )


def related_rows(
    catalog: Catalog, viewer: Viewer, text: str, allowance: int
) -> tuple[tuple[Row, ...], bool, int]:
    """The viewer's index lines most related to ``text`` that fit ``allowance`` tokens (all of
    them when they fit), whether they were narrowed, and how many the viewer has.

    The ranker searches for the text's key terms (the query's stop words left out, speaker names
    and timestamps of messages too) that the viewer's entries hold, the :data:`MAX_TERMS` with
    the highest frequency in the text times inverse document frequency in the archive.
    """
    ranker = Ranker(catalog, viewer, semantic=False)  # key terms, not a question to embed
    total = ranker.visible()
    said = "\n".join(_message(line) for line in text.splitlines())
    counts = Counter(w.lower() for w in _WORD_RE.findall(said))
    candidates = sorted(
        (t for t in parse_question(said).terms if not t.isdigit() and len(t) > 2),
        key=lambda t: -counts[t],
    )[: MAX_TERMS * 3]
    idf = ranker.idf(candidates) if total else {}
    held = [t for t in candidates if idf.get(t, (0.0, 0))[1]]
    terms = sorted(held, key=lambda t: -counts[t] * idf[t][0])[:MAX_TERMS]
    question = Question(" ".join(terms), tuple(terms))
    ranking = ranker.rank(question, limit=min(2000, max(20, allowance // MIN_LINE_TOKENS)))
    rows, prefiltered = shortlist_lines(catalog, viewer, ranking, allowance, total)
    return rows, prefiltered, total


def _message(line: str) -> str:
    """A line without its speaker and timestamp, when it looks like a message."""
    match = _SPEAKER_RE.match(line)
    return line[match.end() :] if match else line


def _prompt(
    wiki: Wiki,
    part: _Part,
    parts: int,
    *,
    kind: str,
    scope: str,
    earlier: int,
    domains: Sequence[str],
) -> str:
    return render_prompt(
        "ingest_source.j2",
        kind=kind,
        scope=scope,
        types=[(t.name, t.description) for t in wiki.schema.types.values()],
        domains=list(domains),
        lines=[r.index_line("") for r in part.rows],
        prefiltered=part.prefiltered,
        total=part.total,
        earlier=earlier,
        part=part.number,
        parts=parts,
        first=part.first,
        last=part.last,
        source=part.lines,
    )


def parse_proposals(text: str) -> list[dict[str, Any]]:
    """The proposals of a reply: ``{"entries": [{...}, ...]}``. ValueError says what is wrong."""
    data = json_object(text)
    items = data.get("entries")
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ValueError('the reply needs "entries": a list of objects (empty when nothing)')
    return items


# --------------------------------------------------------------------------- judging proposals


@dataclass(frozen=True)
class _Accepted:
    entry: Entry
    part: int
    quotes: int


def _judge(
    wiki: Wiki,
    item: dict[str, Any],
    part: _Part,
    *,
    raw: str,
    text: str,
    scope: str,
    accepted: Sequence[_Accepted],
) -> tuple[_Accepted | None, list[CitationProblem], str]:
    """A proposal as an entry ready to write, or the problems that keep it out."""

    summary = " ".join(str(item.get("summary") or "").split())
    problems: list[CitationProblem] = []

    def bad(kind: str, detail: str, statement: str = "") -> None:
        problems.append(CitationProblem(kind, statement or summary, detail))

    fields = {k: item[k] for k in FIELDS if item.get(k) not in (None, "")}
    domain = fields.get("domain")
    if isinstance(domain, str) and not NAME_RE.match(domain):
        fields["domain"] = slugify(domain, 63)
    try:
        entry = entry_from_mapping(fields, what="proposal")
    except InvalidInput as exc:
        bad("malformed", exc.message)
        return None, problems, summary
    stated_date = entry.date
    entry = dataclasses.replace(
        entry,
        scope=scope,
        origin="ingested",
        date=entry.date or clock.today().isoformat(),
        sources=(),
    )

    # Citations: lines of this part, a verbatim quote found in them.
    cites = item.get("cites")
    refs: list[str] = []
    quotes: list[tuple[str, str]] = []
    if not isinstance(cites, list) or not cites:
        bad("uncited", "the proposal cites no lines of the source")
    for cite in cites if isinstance(cites, list) else ():
        lines = str(cite.get("lines", "")) if isinstance(cite, dict) else ""
        quote = " ".join(str(cite.get("quote") or "").split()) if isinstance(cite, dict) else ""
        match = _LINES_RE.match(lines.strip())
        if match is None:
            bad("bad-lines", f"cite {lines!r} is not a line range like L10-L24")
            continue
        start = int(match.group(1))
        end = int(match.group(2) or start)
        if not part.first <= start <= end <= part.last:
            bad(
                "bad-lines",
                f"cites lines {start}-{end}, outside the lines {part.first}-{part.last} it was shown",
            )
            continue
        if len(fold(quote)) < MIN_QUOTE_CHARS:
            bad(
                "short-quote", f"the quote for lines {start}-{end} is missing or too short to check"
            )
            continue
        ref = f"{raw}#L{start}-L{end}"
        problem = check_quote(quote, ref, text)
        if problem is not None:
            bad(problem.kind, problem.detail, quote)
            continue
        refs.append(ref)
        quotes.append((ref, quote))

    # Facts: numbers, dates and quoted words occur in the part that was read.
    shown_ids = {r.id for r in part.rows}
    evidence = [Evidence(raw, scope, "ingested", part.text)]
    checked = [entry.summary, entry.body, stated_date]
    checked += [f"{a.id}: {a.rejected_because}" for a in entry.alternatives_considered]
    for piece in checked:
        if piece:
            problems.extend(check_facts(piece, evidence, strip=shown_ids | set(entry.supersedes)))

    # Supersedes: current entries listed in the prompt.
    rows = {r.id: r for r in part.rows}
    for old in entry.supersedes:
        row = rows.get(old)
        if row is None or row.superseded_by or row.is_generated:
            bad(
                "supersedes",
                f"supersedes {old!r}, which is not a current entry listed in the prompt",
            )

    # Near-duplicates of a listed entry, or of an earlier proposal, that it does not replace.
    for row in part.rows:
        if (
            row.domain == entry.domain
            and row.id not in entry.supersedes
            and not row.superseded_by
            and not row.is_generated
            and summary_overlap(row.summary, entry.summary) >= DUPLICATE_JACCARD
        ):
            bad("near-duplicate", f"says nearly what {row.id} says; supersede it or leave it")
    for earlier in accepted:
        if earlier.entry.domain == entry.domain and (
            summary_overlap(earlier.entry.summary, entry.summary) >= DUPLICATE_JACCARD
        ):
            bad("near-duplicate", "says nearly what an earlier proposal of this source says")

    body = entry.body.strip()
    for ref, quote in quotes:
        block = "\n".join("> " + ln for ln in quote.splitlines())
        body += f"\n\nFrom {ref}:\n\n{block}"
    entry = dataclasses.replace(entry, body=body.strip(), sources=tuple(dict.fromkeys(refs)))
    for broken in check_entry(entry, wiki.schema):
        bad("schema", broken.message)
    if problems:
        return None, problems, summary
    return _Accepted(entry, part.number, len(quotes)), [], summary


# --------------------------------------------------------------------------- ingest


def ingest(
    wiki: Wiki,
    viewer: Viewer,
    data: bytes,
    *,
    name: str = "-",
    kind: str | None = None,
    scope: str | None = None,
    dry_run: bool = False,
    backend: backends.Backend | None = None,
    max_calls: int | None = None,
) -> IngestResult:
    """Compile one source (its bytes; ``name`` is where they came from) into entries."""
    llm = llm_backend(wiki, backend)
    scope = scope or wiki.settings.default_scope
    if not NAME_RE.match(scope):
        raise InvalidInput(f"scope {scope!r} must be lowercase letters, digits and hyphens.")
    require_write(viewer, scope)
    if kind is not None and kind not in KINDS:
        raise InvalidInput(f"--kind {kind!r} is not one of {', '.join(KINDS)}.")
    settings = {k: int(wiki.settings.get(f"ingest.{k}", v)) for k, v in DEFAULTS.items()}
    limit = settings["max_calls"] if max_calls is None else max_calls
    if limit < 1:
        raise InvalidInput("--max-calls must be 1 or more.")
    what = "the source" if name == "-" else name
    if not data.strip():
        raise InvalidInput(f"{what} is empty; there is nothing to ingest.")
    text = decode_text(data, what)
    kind = kind or detect_kind(text)
    if dry_run:
        return _ingest(wiki, viewer, llm, data, text, name, kind, scope, settings, limit, True)
    with store.locked(wiki, "ingest"):  # a second ingest of the same bytes waits, then finds it
        return _ingest(wiki, viewer, llm, data, text, name, kind, scope, settings, limit, False)


def ingest_file(
    wiki: Wiki,
    viewer: Viewer,
    path: str | Path,
    *,
    kind: str | None = None,
    scope: str | None = None,
    dry_run: bool = False,
    backend: backends.Backend | None = None,
    max_calls: int | None = None,
) -> IngestResult:
    """:func:`ingest` of one file."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}; check the path.") from None
    return ingest(
        wiki,
        viewer,
        data,
        name=str(path),
        kind=kind,
        scope=scope,
        dry_run=dry_run,
        backend=backend,
        max_calls=max_calls,
    )


def _raw_name(wiki: Wiki, sha: str, name: str) -> str:
    """``raw/<sha256>.<ext>``: an existing file of these bytes, else the source's own extension.

    Under walls, always the source's own extension: the name an entry cites must not depend on
    what another scope ingested (``raw/<sha>.md`` where the reader gave a ``.txt`` would say that
    someone stored these very bytes). Two scopes ingesting the same bytes under different
    extensions then keep two files; the same extension shares one."""
    if not walls_on(wiki) and wiki.raw_dir.is_dir():
        for path in sorted(wiki.raw_dir.glob(f"{sha}*")):
            if path.name == sha or path.name.startswith(sha + "."):
                return f"raw/{path.name}"
    ext = Path(name).suffix.lstrip(".").lower() if name != "-" else ""
    return f"raw/{sha}.{ext if re.fullmatch(r'[a-z0-9]{1,10}', ext) else 'txt'}"


def _ingest(
    wiki: Wiki,
    viewer: Viewer,
    llm: backends.Backend,
    data: bytes,
    text: str,
    name: str,
    kind: str,
    scope: str,
    settings: dict[str, int],
    limit: int,
    dry_run: bool,
) -> IngestResult:
    sha = store.sha256_bytes(data)
    raw = _raw_name(wiki, sha, name)
    base = IngestResult(
        source=name, status="dry-run" if dry_run else "ingested", raw=raw, sha256=sha,
        bytes=len(data), kind=kind, scope=scope, backend=llm.name,
    )  # fmt: skip
    earlier, same = earlier_version(data, sha, kind, ingested(wiki, scope))
    if same and earlier is not None:
        return dataclasses.replace(
            base, status="unchanged", raw=earlier.raw, ingested_at=earlier.time
        )
    # Every call first: a failing backend leaves nothing stored.
    system = render_prompt(
        "ingest_system.j2",
        when_to_write=wiki.schema.when_to_write
        or "a decision, an incident, a finding, a reflection.",
        when_not_to_write=wiki.schema.when_not_to_write
        or "chatter, raw traces, plans in progress.",
    )
    settings, fitted = _fit(wiki, llm, system, settings)
    base = dataclasses.replace(base, limits=fitted)
    lines = text.splitlines()
    first = first_new_line(data[: earlier.bytes]) if earlier is not None else 1
    parts = make_parts(lines, first, settings["chunk_tokens"])
    previous = earlier.raw if earlier is not None else None
    if not parts:  # it grew by blank lines only
        return dataclasses.replace(
            base,
            status="unchanged",
            previous=previous,
            ingested_at=earlier.time if earlier else None,
        )
    if len(parts) > limit:
        fitted_note = " fitted to the model's context window" if fitted.get("shrunk") else ""
        raise InvalidInput(
            f"{name if name != '-' else 'the source'} needs {len(parts)} LLM calls "
            f"(ingest.chunk_tokens {settings['chunk_tokens']}{fitted_note}), over --max-calls "
            f"{limit}; raise --max-calls (or ingest.max_calls), or split the source."
        )

    calls = tokens_in = tokens_out = failed = 0
    proposals: list[tuple[_Part, dict[str, Any]]] = []

    with read_catalog(wiki) as catalog:
        narrowed = scope_viewer(viewer, scope, catalog)
        domains = sorted(entry_stats(wiki, catalog, narrowed).by_domain)
        for part in parts:
            part.rows, part.prefiltered, part.total = related_rows(
                catalog, narrowed, part.text, settings["index_tokens"]
            )
    for part in parts:
        progress.current().detail(f"part {part.number}/{len(parts)}")
        prompt = _prompt(
            wiki, part, len(parts), kind=kind, scope=scope, earlier=first - 1, domains=domains
        )
        try:
            items, used = _ask(wiki, llm, system, prompt, scope)
        except UnreadableReply as exc:  # what was spent goes with the error, for --json
            raise UnreadableReply(
                exc.message,
                dataclasses.replace(
                    base,
                    calls=calls + 2,
                    parts=len(parts),
                    llm_ok=calls - failed,
                    llm_failed=failed + 2,
                ),
            ) from None
        failed += used[0] - 1  # a repair call means the first reply could not be read
        calls += used[0]
        tokens_in += used[1]
        tokens_out += used[2]
        proposals.extend((part, item) for item in items)

    accepted: list[_Accepted] = []
    rejected: list[Rejected] = []
    for part, item in proposals:
        ok, problems, summary = _judge(
            wiki, item, part, raw=raw, text=text, scope=scope, accepted=accepted
        )
        if ok is None:
            rejected.append(Rejected(summary, part.number, tuple(problems)))
        else:
            accepted.append(ok)
    # a part whose reply proposed entries and had every one rejected: that call's work failed
    refused = len({r.part for r in rejected if r.failed} - {a.part for a in accepted})

    if not dry_run:
        _store_raw(wiki, data, sha, raw)
    written: list[Written] = []
    replaced: dict[str, str] = {}  # old id -> the entry of this run that replaced it
    for ok in accepted:
        entry = ok.entry
        chained = tuple(dict.fromkeys(_newest(replaced, old) for old in entry.supersedes))
        try:
            if dry_run:  # the chained ids do not exist yet; check the entry as proposed
                result = write_entry(wiki, entry, viewer=viewer, dry_run=True)
            else:
                entry = dataclasses.replace(entry, supersedes=chained)
                result = write_entry(wiki, entry, viewer=viewer)
        except WikiError as exc:
            problem = CitationProblem("write", entry.summary, exc.message)
            rejected.append(Rejected(entry.summary, ok.part, (problem,)))
            continue
        for old in entry.supersedes:
            replaced[old] = result.id
        written.append(
            Written(
                result.id, result.path, entry.type, entry.summary, chained, entry.sources,
                result.created,
            )
        )  # fmt: skip
    last = parts[-1].last
    if not dry_run:
        fields: dict[str, object] = {
            "sha256": sha,
            "bytes": len(data),
            "kind": kind,
            "scope": scope,
            "lines": f"{first}-{last}",
        }
        if previous:
            fields["previous"] = previous
        fields.update(
            entries=",".join(w.id for w in written),
            rejected=len(rejected),
            calls=calls,
            name=Path(name).name,
        )
        store.log_op(wiki, OP, raw, **fields)
    return dataclasses.replace(
        base,
        first_line=first,
        last_line=last,
        previous=previous,
        calls=calls,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        parts=len(parts),
        quotes_checked=sum(i.quotes for i in accepted),
        written=tuple(written),
        rejected=tuple(rejected),
        llm_ok=calls - failed - refused,
        llm_failed=failed + refused,
    )


def _fit(
    wiki: Wiki, llm: backends.Backend, system: str, settings: dict[str, int]
) -> tuple[dict[str, int], dict[str, Any]]:
    """The settings with the part and index-line budgets shrunk so that a part's prompt leaves
    room for its reply in the model's context window (three quarters for the part's lines),
    and what was used."""
    fit = backends.limits(wiki, llm)
    room = fit.prompt_room(OUT_TOKENS) - backends.estimate_tokens(system) - TEMPLATE_TOKENS
    chunk, index = settings["chunk_tokens"], settings["index_tokens"]
    shrunk = chunk + index > room
    if shrunk:
        chunk = max(200, min(chunk, room * 3 // 4))
        index = max(MIN_LINE_TOKENS * 4, min(index, room - chunk))
    used = {
        **fit.to_dict(),
        "chunk_tokens": chunk,
        "index_tokens": index,
        "reply_tokens": fit.reply_tokens(OUT_TOKENS),
        "shrunk": shrunk,
    }
    return {**settings, "chunk_tokens": chunk, "index_tokens": index}, used


def _newest(replaced: dict[str, str], old: str) -> str:
    seen = {old}
    while old in replaced and replaced[old] not in seen:
        old = replaced[old]
        seen.add(old)
    return old


def _ask(
    wiki: Wiki, llm: backends.Backend, system: str, prompt: str, scope: str
) -> tuple[list[dict[str, Any]], tuple[int, int, int]]:
    """One part's proposals: one call, and one repair call when the reply cannot be read."""
    done = backends.call(
        wiki, llm, prompt, purpose=PURPOSE, scope=scope, system=system, max_tokens=OUT_TOKENS
    )
    try:
        return parse_proposals(done.text), (1, done.tokens_in, done.tokens_out)
    except ValueError as exc:
        repair = render_prompt(
            "ingest_repair.j2", prompt=prompt, reply=done.text.strip(), error=str(exc)
        )
    again = backends.call(
        wiki, llm, repair, purpose=f"{PURPOSE}-repair", scope=scope, system=system,
        max_tokens=OUT_TOKENS,
    )  # fmt: skip
    used = (2, done.tokens_in + again.tokens_in, done.tokens_out + again.tokens_out)
    try:
        return parse_proposals(again.text), used
    except ValueError as exc:
        raise UnreadableReply(
            f"the model's reply could not be read, twice ({exc}); nothing was stored. Try "
            "again, or another --model."
        ) from None


def _store_raw(wiki: Wiki, data: bytes, sha: str, raw: str) -> None:
    """``raw/<sha256>.<ext>``, immutable (mode 0444), created no-clobber; an existing file must
    hold exactly these bytes."""
    path = wiki.root / raw
    if path.exists():
        if store.sha256_bytes(path.read_bytes()) != sha:
            raise WikiError(
                f"{raw} exists but its bytes do not match its name; restore it (git checkout) "
                "or remove it, then ingest again."
            )
        sync_folders(path, 2)  # (an ingest killed after linking it may not have synced them)
        return
    try:
        # raw/ and the wiki's root: never the folder the wiki lies in (not the wiki's to open)
        created = create_no_clobber(path, data, wiki.state_dir / "tmp", levels=2)
    except OSError as exc:
        raise WikiError(
            f"cannot store {raw}: {exc.strerror}; check the wiki's permissions."
        ) from None
    if not created and store.sha256_bytes(path.read_bytes()) != sha:  # pragma: no cover - a race
        raise WikiError(f"{raw} appeared with other bytes; remove it, then ingest again.")


# --------------------------------------------------------------------------- the inbox


def ingest_inbox(
    wiki: Wiki,
    viewer: Viewer,
    folder: str | Path,
    *,
    quiet_minutes: float | None = None,
    kind: str | None = None,
    scope: str | None = None,
    dry_run: bool = False,
    backend: backends.Backend | None = None,
    max_calls: int | None = None,
) -> InboxResult:
    """Ingest each file of ``folder`` unchanged for ``quiet_minutes`` (by the one clock).

    Files stay where they are: one already ingested is recognised by its bytes (no LLM call), one
    that grew is ingested for its new part. Hidden and temporary files (``.*``, ``*~``,
    ``*.tmp``, ``*.part``, ``*.swp``) are left alone. A file that fails is reported and the
    others go on; an unusable backend stops the run before any file is read.

    A sub-folder named like a scope (``<inbox>/matter-acme/``) holds files for that scope: they
    are ingested into it, whatever ``scope`` says, when the reader may write it, and reported as
    failed otherwise (the agent hooks file a transcript there when its folder names a scope).
    """
    llm = llm_backend(wiki, backend)
    quiet = float(
        quiet_minutes
        if quiet_minutes is not None
        else wiki.settings.get("ingest.quiet_minutes", DEFAULTS["quiet_minutes"])
    )
    if quiet < 0:
        raise InvalidInput("--quiet-minutes must be 0 or more.")
    root = Path(folder)
    if not root.is_dir():
        raise InvalidInput(f"--inbox {folder} is not a folder; create it or pass another.")
    now = clock.now().timestamp()
    items: list[InboxItem] = []
    files = _inbox_files(root)
    shown = progress.current()
    shown.task("ingest --inbox", total=len(files))
    for path, folder_scope in shown.each(files, _inbox_name):
        name = _inbox_name((path, folder_scope))
        try:
            age = now - path.stat().st_mtime
        except OSError:
            continue  # removed since the listing
        if age < quiet * 60:
            items.append(InboxItem(name, "waiting", f"changed {max(0.0, age) / 60:.0f} min ago"))
            continue
        try:
            result = ingest_file(
                wiki,
                viewer,
                path,
                kind=kind,
                scope=folder_scope or scope,
                dry_run=dry_run,
                backend=llm,
                max_calls=max_calls,
            )
        except BackendUnavailable:
            raise
        except WikiError as exc:
            spent = exc.result if isinstance(exc, UnreadableReply) else None
            items.append(InboxItem(name, "failed", exc.message, spent))
            continue
        if result.llm_all_failed:  # stored and logged, but nothing the LLM proposed passed
            failed = "every entry the LLM proposed failed the checks"
            items.append(InboxItem(name, "failed", failed, result))
            continue
        items.append(InboxItem(name, result.status, "", result))
    return InboxResult(str(root), quiet, tuple(items), backend=llm.name)


def _inbox_name(found: tuple[Path, str | None]) -> str:
    path, scope = found
    return f"{scope}/{path.name}" if scope else path.name


def _inbox_files(root: Path) -> list[tuple[Path, str | None]]:
    """The inbox's files, then those of each sub-folder named like a scope, with that scope."""
    found: list[tuple[Path, str | None]] = []
    folders = []
    for path in sorted(root.iterdir()):
        if _inbox_file(path):
            found.append((path, None))
        elif path.is_dir() and NAME_RE.match(path.name):
            folders.append(path)
    for folder in folders:
        found += [(p, folder.name) for p in sorted(folder.iterdir()) if _inbox_file(p)]
    return found


def _inbox_file(path: Path) -> bool:
    name = path.name
    if name.startswith(".") or name.endswith(("~", ".tmp", ".part", ".swp")):
        return False
    return path.is_file()
