"""The maintenance pass: what rots in an archive, found before it misleads anyone.

Deterministic checks, each finding at a level:

- error: an entry that no longer satisfies schema.md (or cannot be read); a ``supersedes`` naming
  no entry of its scope; a supersession cycle; an entry edited, removed or added behind the
  tool's back (``verify``);
- warning: near-duplicate summaries within a domain; an authored decision without alternatives;
  a synthesis resting on an entry since superseded (its domain is out of date); a raw source no
  entry cites and no ingest read; a tag or domain used once that looks like a typo of a used one;
- info: an imported or ingested decision without alternatives (nothing is invented from a
  source); per domain, the alternatives an importer gave the placeholder reason because the
  record says none; an active entry past the schema's review window; a raw source an ingest read and found
  nothing in; any other tag or domain used once.

With ``--with-llm``, entries of one domain that share a tag are shown to the LLM, which names
contradictions; each must quote both entries verbatim or it is dropped. Calls stop at
``--max-calls``. Every finding is about entries the viewer may read; the rest are never named.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import llm_wiki.backends as backends
import llm_wiki.clock as clock
import llm_wiki.progress as progress
import llm_wiki.store as store
from llm_wiki.access import Viewer
from llm_wiki.catalog import Row, read_catalog
from llm_wiki.citations import find_quote
from llm_wiki.entries import PLACEHOLDER_REASON, Entry
from llm_wiki.errors import WikiError
from llm_wiki.prompts import json_object, render_prompt
from llm_wiki.reads import read_entry
from llm_wiki.schema import check_entry
from llm_wiki.verify import verify
from llm_wiki.wiki import LINT_FINDINGS, Wiki

LEVELS = ("error", "warning", "info")
DUPLICATE_JACCARD = 0.8  # share of distinct summary words two entries have in common
TYPO_DISTANCE = 2  # a name used once this close to a used name is likely a typo
_STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or our that the this to "
    "use using we will with".split()
)


@dataclass(frozen=True)
class Finding:
    level: str  # error | warning | info
    check: str
    ids: tuple[str, ...]
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "check": self.check,
            "ids": list(self.ids),
            "message": self.message,
        }


@dataclass(frozen=True)
class LintResult:
    checked: int
    findings: tuple[Finding, ...]
    calls: int = 0
    backend: str | None = None  # with --with-llm: the backend asked
    backend_source: str | None = None  # where its name came from (set by the Session)
    llm_ok: int = 0  # LLM calls whose reply could be read
    llm_failed: int = 0  # LLM calls that failed or whose reply could not be read

    @property
    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(LEVELS, 0)
        for f in self.findings:
            out[f.level] += 1
        return out

    @property
    def ok(self) -> bool:
        return self.counts["error"] == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "counts": self.counts,
            "llm_calls": self.calls,
            "llm_outcome": {"ok": self.llm_ok, "failed": self.llm_failed},
            "backend": self.backend,
            "backend_source": self.backend_source,
            "findings": [f.to_dict() for f in self.findings],
        }


def lint(
    wiki: Wiki,
    viewer: Viewer,
    *,
    with_llm: bool = False,
    max_calls: int | None = None,
    backend: backends.Backend | None = None,
) -> LintResult:
    """Run every check over the entries ``viewer`` may read; log a summary line to log.md."""
    llm = None
    if with_llm:
        llm = backend or backends.get_backend(wiki)
        if not llm.is_llm:
            raise WikiError(
                f"--with-llm needs an LLM backend, not {llm.name}; pass --backend anthropic, "
                "claude-cli or openai (or set backend in settings.yaml)."
            )
        llm.check()
    with read_catalog(wiki) as catalog:
        rows = catalog.rows(viewer)
        problems = catalog.problems() if viewer.sees_all else []
    by_id = {r.id: r for r in rows}
    findings: list[Finding] = []
    findings += [Finding("error", "unreadable", (), message) for _, message in problems]
    entries = _load_entries(wiki, rows)
    findings += _schema(wiki, rows, entries)
    findings += _supersedes(rows, by_id)
    with read_catalog(wiki) as catalog:
        findings += [
            Finding("error", "forked", (f.old.id, *(h.id for h in f.heads)), f.message())
            for f in catalog.forks(viewer)
        ]
    findings += _tamper(wiki, viewer)
    findings += _duplicates(rows)
    findings += _alternatives(rows)
    findings += _placeholder_reasons(rows)
    findings += _review(wiki, rows)
    findings += _stale_syntheses(rows, by_id)
    if viewer.sees_all:  # raw files carry no scope: only a reader of every scope may judge them
        findings += _uncited_raw(wiki, rows)
    findings += _rare_names(rows)
    calls = failed = 0
    if llm is not None:
        limit = max_calls if max_calls is not None else int(wiki.settings.get("lint.max_calls", 10))
        found, calls = _contradictions(wiki, llm, rows, entries, limit)
        failed = sum(1 for f in found if f.check == UNUSABLE)
        findings += found
    order = {level: i for i, level in enumerate(LEVELS)}
    findings.sort(key=lambda f: (order[f.level], f.check, f.ids, f.message))
    result = LintResult(
        checked=len(rows),
        findings=tuple(findings),
        calls=calls,
        backend=llm.name if llm is not None else None,
        llm_ok=calls - failed,
        llm_failed=failed,
    )
    _save_findings(wiki, viewer, rows, result.findings)  # before its log line: a site that
    _log_summary(wiki, viewer, rows, result.findings)  # follows the log finds the findings there
    return result


def _save_findings(
    wiki: Wiki, viewer: Viewer, rows: Sequence[Row], findings: Sequence[Finding]
) -> None:
    """Keep the findings for the site (`.llm-wiki/lint-findings.json`), by the view of the run
    that found them: the scopes its reader may read (null: every scope). A run replaces the
    findings of its own view and keeps the others'. What a finding says can rest on every
    entry of its run's view, not only the ones it names ("tag 'x' is used once" counts them
    all; a rare name is "like" another entry's), so the site shows a run's findings only to a
    reader who may read all of that view (see site/view.py)."""
    import json  # deferred: only lint keeps findings

    from llm_wiki.files import atomic_write  # deferred: start-up

    path = wiki.state_path(LINT_FINDINGS)
    try:
        runs = json.loads(path.read_text(encoding="utf-8"))["runs"]
    except (OSError, ValueError, KeyError, TypeError):
        runs = {}
    if not isinstance(runs, dict):
        runs = {}
    scopes = None if viewer.read is None else sorted(viewer.read)
    key = "*" if scopes is None else ",".join(scopes)
    runs[key] = {"scopes": scopes, "findings": [f.to_dict() for f in findings]}
    with store.locked(wiki):
        atomic_write(path, json.dumps({"runs": runs}, sort_keys=True) + "\n")


def _log_summary(
    wiki: Wiki, viewer: Viewer, rows: Sequence[Row], findings: Sequence[Finding]
) -> None:
    """One ``lint`` line in log.md for the run, scoped to its view: the scopes its reader may
    read (every scope it checked, for a reader of all), so only a reader of that whole view is
    shown it. Counts rest on every entry of the view, not only on the scope of the entries a
    finding names: an admin's "scope=shared" line once told a shared reader whether a tag
    they wrote was used in a scope hidden from them (the "rare" finding went away). Findings
    about no entry (unreadable files, raw sources: shown only to an admin) get a line of their
    own, without a scope."""
    view = sorted(viewer.read) if viewer.read is not None else sorted({r.scope for r in rows})

    def line(group: Sequence[Finding], **scope: object) -> str:
        counts = Counter(f.level for f in group)
        return store.format_log_line(
            "lint", "", **scope, errors=counts["error"], warnings=counts["warning"],
            info=counts["info"], checked=len(rows) if scope else 0,
        )  # fmt: skip

    named = [f for f in findings if f.ids]
    loose = [f for f in findings if not f.ids]
    lines = [line(named, scope=",".join(view))] if view and (rows or named) else []
    if loose:
        lines.append(line(loose))
    if not lines:  # nothing to check: still say that lint ran
        lines.append(store.format_log_line("lint", errors=0, warnings=0, info=0, checked=0))
    with store.locked(wiki):
        store.append_log(wiki, *lines)


def _load_entries(wiki: Wiki, rows: Sequence[Row]) -> dict[str, Entry]:
    """The loose entries, parsed (archived ones were valid when archived and are not re-read)."""
    out = {}
    for row in rows:
        if row.archive:
            continue
        try:
            out[row.id] = read_entry(wiki, row)[0]
        except WikiError:
            continue  # gone since the catalog looked: verify reports it
    return out


def _schema(wiki: Wiki, rows: Sequence[Row], entries: dict[str, Entry]) -> list[Finding]:
    out = []
    for row in rows:
        entry = entries.get(row.id)
        if entry is None:
            continue
        for problem in check_entry(entry, wiki.schema):
            if problem.field == "alternatives_considered" and entry.type == "decision":
                continue  # reported, with its level, by _alternatives
            out.append(
                Finding(
                    "error",
                    "schema",
                    (row.id,),
                    f"{row.id} no longer satisfies schema.md: {problem.message}",
                )
            )
    return out


def _supersedes(rows: Sequence[Row], by_id: dict[str, Row]) -> list[Finding]:
    out = []
    graph: dict[str, list[str]] = {}
    for row in rows:
        for old in row.supersedes:
            target = by_id.get(old)
            if target is None or target.scope != row.scope:
                out.append(
                    Finding(
                        "error",
                        "broken-supersedes",
                        (row.id,),
                        f"{row.id} supersedes {old}, which is no entry of scope {row.scope}; "
                        "write a corrected entry that supersedes this one.",
                    )
                )
            else:
                graph.setdefault(row.id, []).append(old)
    for cycle in _cycles(graph):
        out.append(
            Finding(
                "error",
                "supersedes-cycle",
                tuple(cycle),
                "supersession cycle: "
                + " -> ".join([*cycle, cycle[0]])
                + "; nothing in it is current.",
            )
        )
    return out


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Each cycle once, as the list of its ids starting from the smallest."""
    found: set[tuple[str, ...]] = set()
    state: dict[str, int] = {}  # 1: on the path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path: list[str] = []
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(graph.get(start, ())))]
        state[start] = 1
        path.append(start)
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                state[node] = 2
            elif state.get(child) == 1:
                cycle = path[path.index(child) :]
                low = cycle.index(min(cycle))
                found.add(tuple(cycle[low:] + cycle[:low]))
            elif not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append((child, iter(graph.get(child, ()))))
    return [list(c) for c in sorted(found)]


def _tamper(wiki: Wiki, viewer: Viewer) -> list[Finding]:

    return [
        Finding(
            "error",
            f"tamper-{f.kind}",
            (f.id,) if f.id else (),
            f"{f.id or f.path}: {f.detail} ({f.path}).",
        )
        for f in verify(wiki, viewer).findings
    ]


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOPWORDS)


def summary_overlap(a: str, b: str) -> float:
    """Share of distinct summary words two summaries have in common: the near-duplicate measure
    (a writer that must not add a near-duplicate uses it too)."""
    return _jaccard(_words(a), _words(b))


def _jaccard(wa: frozenset[str], wb: frozenset[str]) -> float:
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def _duplicates(rows: Sequence[Row]) -> list[Finding]:
    """Active evidence entries of one (scope, domain) whose summaries share most of their words.

    A pair where one supersedes the other is a revision, not a duplicate. Candidates come from an
    inverted index over each summary's three rarest words, so this stays near-linear.
    """
    out = []
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if row.effective_status == "active" and not row.is_generated:
            groups[(row.scope, row.domain)].append(row)
    for group in groups.values():
        words = {r.id: _words(r.summary) for r in group}
        df = Counter(w for ws in words.values() for w in ws)
        postings: dict[str, list[str]] = defaultdict(list)
        for entry_id, ws in words.items():
            for w in sorted(ws, key=lambda w: (df[w], w))[:3]:
                postings[w].append(entry_id)
        related = {(r.id, old) for r in group for old in (*r.supersedes, *r.superseded_by)}
        seen: set[tuple[str, str]] = set()
        for ids in postings.values():
            for i, a in enumerate(ids):
                for b in ids[i + 1 :]:
                    pair = (min(a, b), max(a, b))
                    if pair in seen or (a, b) in related or (b, a) in related:
                        continue
                    seen.add(pair)
                    score = _jaccard(words[a], words[b])
                    if score >= DUPLICATE_JACCARD:
                        out.append(
                            Finding(
                                "warning",
                                "near-duplicate",
                                pair,
                                f"{pair[0]} and {pair[1]} say nearly the same ({score:.0%} of "
                                "their summary words); if one replaces the other, write an entry "
                                "that supersedes it.",
                            )
                        )
    return out


def _placeholder_reasons(rows: Sequence[Row]) -> list[Finding]:
    """One finding per domain: how many alternatives carry the importer's placeholder reason."""
    by_domain: dict[str, list[str]] = defaultdict(list)
    total: Counter[str] = Counter()
    for row in rows:
        n = sum(1 for a in row.alternatives if a.rejected_because == PLACEHOLDER_REASON)
        if n:
            by_domain[row.domain].append(row.id)
            total[row.domain] += n
    return [
        Finding(
            "info",
            "placeholder-reasons",
            tuple(ids),
            f"{total[domain]} alternatives in {len(ids)} decisions of domain {domain} have no "
            "reason in their record (rejected_because is the placeholder); add the reason by "
            "superseding the entry, or in the record and import again.",
        )
        for domain, ids in sorted(by_domain.items())
    ]


def _alternatives(rows: Sequence[Row]) -> list[Finding]:
    out = []
    for row in rows:
        if row.type != "decision" or row.alternatives or row.is_generated:
            continue
        if row.origin == "imported":
            out.append(
                Finding(
                    "info",
                    "no-alternatives",
                    (row.id,),
                    f"{row.id}: the imported record names no alternatives.",
                )
            )
        else:
            out.append(
                Finding(
                    "warning",
                    "no-alternatives",
                    (row.id,),
                    f"{row.id}: a {row.origin} decision without alternatives_considered; supersede "
                    "it with one that says what was rejected and why.",
                )
            )
    return out


def _review(wiki: Wiki, rows: Sequence[Row]) -> list[Finding]:
    days = wiki.schema.review_after_days
    if days <= 0:
        return []
    cutoff = (clock.today() - dt.timedelta(days=days)).isoformat()
    return [
        Finding(
            "info",
            "review-due",
            (row.id,),
            f"{row.id} ({row.date}) is active and older than the review window of {days} days "
            "(schema.md review_after_days); confirm it still holds, or supersede it.",
        )
        for row in rows
        if row.effective_status == "active" and not row.is_generated and row.date < cutoff
    ]


def _stale_syntheses(rows: Sequence[Row], by_id: dict[str, Row]) -> list[Finding]:
    out = []
    for row in rows:
        if row.type != "synthesis" or row.effective_status != "active":
            continue
        gone = [s for s in row.sources if s in by_id and by_id[s].effective_status == "superseded"]
        if gone:
            out.append(
                Finding(
                    "warning",
                    "stale-synthesis",
                    (row.id, *gone),
                    f"{row.id} rests on {', '.join(gone)}, since superseded: domain {row.domain} "
                    f"(scope {row.scope}) is out of date; the next `llm-wiki consolidate` rewrites it.",
                )
            )
    return out


def _uncited_raw(wiki: Wiki, rows: Sequence[Row]) -> list[Finding]:
    """Raw sources no entry cites: a warning when no ingest ever read them (stored, never
    compiled), info when an ingest read them and found nothing worth keeping (chatter)."""
    if not wiki.raw_dir.is_dir():
        return []
    cited = {s.split("#", 1)[0] for r in rows for s in r.sources if s.startswith("raw/")}
    compiled = {line.subject for _, line in store.read_log(wiki) if line.op == "ingest"}
    out = []
    for path in sorted(wiki.raw_dir.iterdir()):
        rel = f"raw/{path.name}"
        if not path.is_file() or path.name.startswith(".") or rel in cited:
            continue
        if rel in compiled:
            out.append(
                Finding(
                    "info",
                    "raw-uncited",
                    (),
                    f"{rel} was ingested and gave no entries (nothing in it met the schema's rule for writing).",
                )
            )
        else:
            out.append(
                Finding(
                    "warning",
                    "raw-uncited",
                    (),
                    f"{rel} is cited by no entry and no ingest read it: stored but never compiled; "
                    "run `llm-wiki ingest` on it, or remove it from raw/.",
                )
            )
    return out


def _rare_names(rows: Sequence[Row]) -> list[Finding]:
    out = []
    for kind, counts in (
        ("domain", Counter(r.domain for r in rows)),
        ("tag", Counter(t for r in rows for t in r.tags)),
    ):
        used = [n for n, c in counts.items() if c > 1]
        for name, count in sorted(counts.items()):
            if count != 1:
                continue
            near = sorted(u for u in used if _distance(name, u) <= TYPO_DISTANCE)
            holders = tuple(
                r.id for r in rows if (r.domain == name if kind == "domain" else name in r.tags)
            )
            if near:
                out.append(
                    Finding(
                        "warning",
                        f"rare-{kind}",
                        holders,
                        f"{kind} {name!r} is used once and looks like a typo of {', '.join(map(repr, near))}.",
                    )
                )
            else:
                out.append(
                    Finding("info", f"rare-{kind}", holders, f"{kind} {name!r} is used once.")
                )
    return out


def _distance(a: str, b: str) -> int:
    """Levenshtein distance (small strings)."""
    if abs(len(a) - len(b)) > TYPO_DISTANCE:
        return TYPO_DISTANCE + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


# --------------------------------------------------------------------------- with an LLM

UNUSABLE = "llm-unusable"  # the check of a finding made from an unusable LLM reply
LINT_REPLY_TOKENS = 1500


def _contradictions(
    wiki: Wiki,
    llm: backends.Backend,
    rows: Sequence[Row],
    entries: dict[str, Entry],
    limit: int,
) -> tuple[list[Finding], int]:
    """Ask about groups of active entries of one domain that share a tag, within ``limit`` calls.

    A reply that cannot be read (the call failed, no JSON object, no ``contradictions`` list) is
    an error finding (:data:`UNUSABLE`): those entries were not checked, which is not the same
    as "no contradiction". Groups shrink to fit the model's context window."""

    system = render_prompt("lint_system.j2")
    fit = backends.limits(wiki, llm)
    room = fit.prompt_room(LINT_REPLY_TOKENS) - backends.estimate_tokens(system) - 200
    budget = max(200, min(int(wiki.settings.get("lint.group_tokens", 6000)), room))
    groups = _tag_groups(rows, entries, budget)
    out: list[Finding] = []
    calls = 0
    report = progress.current()
    report.task("lint --with-llm", total=min(len(groups), limit))
    for scope, domain, tag, members in groups:
        if calls >= limit:
            break
        report.item(f"{domain} #{tag}")
        prompt = render_prompt(
            "lint_contradictions.j2",
            domain=domain,
            tag=tag,
            entries=[_entry_text(entries[m]) for m in members],
        )
        calls += 1
        try:
            reply = backends.call(
                wiki,
                llm,
                prompt,
                purpose="lint",
                scope=scope,
                system=system,
                max_tokens=LINT_REPLY_TOKENS,
            )
            data = json_object(reply.text)
            said = data.get("contradictions")
            if not isinstance(said, list):
                raise ValueError('it has no "contradictions" list')
        except WikiError as exc:
            out.append(_unusable(domain, tag, members, exc.message))
            continue
        except ValueError as exc:
            out.append(_unusable(domain, tag, members, f"the reply could not be read: {exc}"))
            continue
        finally:
            report.done()
        shown = set(members)
        for item in said:
            if not isinstance(item, dict):
                continue
            a, b = str(item.get("a", "")), str(item.get("b", ""))
            a_says, b_says = str(item.get("a_says", "")), str(item.get("b_says", ""))
            if a == b or a not in shown or b not in shown:
                continue  # an id the model was not shown
            if not (
                find_quote(a_says, _entry_text(entries[a]))
                and find_quote(b_says, _entry_text(entries[b]))
            ):
                continue  # a statement the entries do not contain
            pair = (min(a, b), max(a, b))
            out.append(
                Finding(
                    "warning",
                    "contradiction",
                    pair,
                    f"{a} says {a_says!r} but {b} says {b_says!r}; supersede the one that no longer "
                    "holds.",
                )
            )
    return out, calls


def _unusable(domain: str, tag: str, members: Sequence[str], why: str) -> Finding:
    return Finding(
        "error",
        UNUSABLE,
        tuple(members),
        f"the LLM's reply about {len(members)} entries of {domain} tagged {tag!r} was not "
        f"usable ({why.rstrip('.')}); they were not checked for contradictions: run again, or "
        "use a larger model.",
    )


def _tag_groups(
    rows: Sequence[Row], entries: dict[str, Entry], budget: int
) -> list[tuple[str, str, str, list[str]]]:
    """(scope, domain, tag, entry ids) for active evidence entries sharing a tag, each group cut
    to fit ``budget`` tokens; groups of one entry are dropped."""
    by_key: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r.date, r.id)):
        if row.effective_status != "active" or row.is_generated or row.id not in entries:
            continue
        for tag in row.tags:
            by_key[(row.scope, row.domain, tag)].append(row.id)
    out = []
    for (scope, domain, tag), ids in sorted(by_key.items()):
        chunk: list[str] = []
        size = 0
        for entry_id in ids:
            tokens = backends.estimate_tokens(_entry_text(entries[entry_id]))
            if chunk and size + tokens > budget:
                if len(chunk) > 1:
                    out.append((scope, domain, tag, chunk))
                chunk, size = [], 0
            chunk.append(entry_id)
            size += tokens
        if len(chunk) > 1:
            out.append((scope, domain, tag, chunk))
    return out


def _entry_text(entry: Entry, body_chars: int = 1500) -> str:
    body = entry.body if len(entry.body) <= body_chars else entry.body[:body_chars] + " …"
    return f"[{entry.id}] ({entry.date}, {entry.type}) {entry.summary}\n{body}".strip()
