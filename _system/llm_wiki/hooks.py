"""The Claude Code hooks of the llm-wiki plugin (``llm-wiki agents install``): what runs when an
agent's session starts, before its context is compacted, and when it ends.

Claude Code runs ``python -m llm_wiki.hooks EVENT [--wiki PATH] [--as READER]`` with the hook's
JSON on stdin (``session_id``, ``transcript_path``, ``cwd``, ``source``, …; every field is treated
as optional). The events:

- ``session-start``: prints, as plain text (which Claude Code adds to the agent's context), the
  current decisions of the domains the working directory maps to and their open incidents,
  within ``agents.context_tokens`` (default 500): a few hundred tokens, never the index. After a
  compaction (``source: compact``) one more line says that decisions in the summary may not be
  recorded yet. This is the one moment a hook can ask the agent anything (PreCompact and
  SessionEnd output never reaches it).
- ``pre-compact``: copies the transcript into the inbox, then prints what the summary should
  keep (the decisions not yet recorded). Claude Code merges a PreCompact hook's stdout into the
  summarizer's instructions; that is undocumented, and harmless where it is ignored.
- ``session-end``: copies the transcript into the inbox and prints nothing (nothing printed at
  SessionEnd reaches anyone; all SessionEnd hooks share about 1.5 s).

**Which domains.** ``agents.folders`` in settings.yaml maps folders to domains, the longest
matching folder winning::

    agents:
      folders:
        ~/src/billing-service: [billing, payments]
        ~/src/acme: {domains: [contracts], scope: matter-acme}

A folder not listed shows the domain named like it (or like its git work tree), if there is one.

**Fast, and failing open.** No click, no CLI, no LLM, no PyYAML once settings.yaml is cached; the
catalog is read as it stands when another process holds its lock (:func:`peek_catalog`). Any
failure (no wiki, a broken one, a reader the walls refuse, stdin that is not a JSON object) means
exit 0 and nothing on stdout, with one line on stderr (Claude Code's debug log): the agent's session
never waits on, or is blocked by, the wiki. The exit code is always 0; never 2, which would
block compaction.

**Walls.** The reader is ``--as`` (fixed at install) or ``LLM_WIKI_READER``; the context holds
only what that reader may read, and under walls without a reader the hooks do nothing. A
transcript is filed in ``<inbox>/<scope>/`` when the folder's mapping names a scope (the reader
must be allowed to write it), else in ``<inbox>/`` (the ingest job's ``--scope``); under walls a
transcript is copied only where the mapping names a scope, so a conversation about one matter
never lands in a shared scope by default.

**The inbox copy.** ``<inbox>/claude-code-<session id>.txt`` (the inbox: ``LLM_WIKI_INBOX``, else
``<wiki>/inbox``, as the ``wiki-ingest`` job), mode 0600, replaced atomically. It is a condensed
rendering, one line per message (``[2026-08-24 09:12] user: …`` / ``claude: …``): the user's
and the assistant's text, not tool calls and their results, thinking, side chains, compaction
summaries or command echoes. The transcript only grows, so each copy extends the previous one:
``ingest --inbox`` reads only the new lines of a file that grew. Only the part of the transcript
added since the last copy is read (its offset is kept in ``.llm-wiki/agents/``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_wiki.access import ENV_READER, Viewer, resolve_viewer, walls_on
from llm_wiki.backends import estimate_tokens
from llm_wiki.catalog import Catalog, Row, peek_catalog
from llm_wiki.entries import NAME_RE
from llm_wiki.files import atomic_write
from llm_wiki.wiki import Wiki, resolve_wiki

EVENTS = ("session-start", "pre-compact", "session-end")
CONTEXT_TOKENS = 500  # agents.context_tokens: what session-start adds, at most
SUMMARY_CHARS = 140  # of one entry's summary in the context
INCIDENT_SHARE = 3  # open incidents take at most a third of the budget
STDIN_LIMIT = 1 << 20  # the hook JSON is small; never read more than this
MESSAGE_CHARS = 8000  # of one message in the inbox copy
INBOX_ENV = "LLM_WIKI_INBOX"
STATE = "agents"  # under .llm-wiki/: how far each transcript was copied

FOOTER = (
    "Decisions made in this session are recorded in llm-wiki with the wiki-write skill "
    "(`llm-wiki write`): the decision, the alternatives rejected and why; a changed decision is "
    "a new entry that supersedes the old one. The wiki-query skill answers from the archive; "
    "`llm-wiki show ID` reads one entry."
)
AFTER_COMPACT = (
    "This conversation was just compacted: decisions listed in its summary may not be in "
    "llm-wiki yet; the wiki-write skill records them."
)
SUMMARIZER = """\
Decisions not yet recorded in llm-wiki: keep, under a heading "Decisions not yet recorded in \
llm-wiki", each decision made in this session, with the alternatives rejected and why, and any \
incident (what broke, the cause, the fix), in the user's own words where they gave them."""


# --------------------------------------------------------------------------- the folder map


@dataclass(frozen=True)
class Folder:
    """What the working directory maps to."""

    path: str  # the folder as settings.yaml names it ("" when found by the folder's name)
    domains: tuple[str, ...]
    scope: str | None = None


def folder_for(wiki: Wiki, cwd: str) -> Folder | None:
    """The ``agents.folders`` entry holding ``cwd`` (the longest match), or None."""
    folders = wiki.settings.get("agents.folders", {})
    if not isinstance(folders, dict) or not cwd:
        return None
    here = os.path.realpath(os.path.expanduser(cwd))
    best: tuple[int, Folder] | None = None
    for key, value in folders.items():
        root = os.path.expanduser(str(key))
        if not os.path.isabs(root):
            continue
        root = os.path.realpath(root)
        if here != root and not here.startswith(root.rstrip(os.sep) + os.sep):
            continue
        folder = _folder(str(key), value)
        if folder is not None and (best is None or len(root) > best[0]):
            best = (len(root), folder)
    return best[1] if best else None


def _folder(key: str, value: Any) -> Folder | None:
    scope = None
    if isinstance(value, dict):
        scope = value.get("scope")
        value = value.get("domains", ())
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return None
    domains = tuple(d for d in value if isinstance(d, str) and NAME_RE.match(d))
    if not isinstance(scope, str) or not NAME_RE.match(scope):
        scope = None
    return Folder(key, domains, scope)


def _named_like(cwd: str, known: dict[str, int]) -> tuple[str, ...]:
    """The domain named like the folder, or like the git work tree holding it."""
    if not cwd:
        return ()
    here = Path(os.path.realpath(os.path.expanduser(cwd)))
    names = [here.name]
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            names.append(folder.name)
            break
    for name in names:
        slug = name.lower().replace("_", "-").replace(" ", "-")
        if slug in known:
            return (slug,)
    return ()


# --------------------------------------------------------------------------- session start


@dataclass(frozen=True)
class Context:
    """What ``session-start`` adds to the agent's context, and what it was made of."""

    wiki: str
    reader: str
    cwd: str
    domains: tuple[str, ...]
    mapped: str  # "settings" (agents.folders), "name" (a domain named like the folder) or ""
    decisions: int  # current decisions in those domains
    decisions_shown: int
    incidents: int  # open incidents (in those domains; everywhere when there are none)
    incidents_shown: int
    text: str

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "wiki": self.wiki,
            "reader": self.reader,
            "cwd": self.cwd,
            "domains": list(self.domains),
            "mapped": self.mapped,
            "decisions": self.decisions,
            "decisions_shown": self.decisions_shown,
            "incidents": self.incidents,
            "incidents_shown": self.incidents_shown,
            "tokens": self.tokens,
            "text": self.text,
        }


def session_context(
    wiki: Wiki, viewer: Viewer, cwd: str, *, compact: bool = False, catalog: Catalog | None = None
) -> Context | None:
    """The session-start context for an agent working in ``cwd`` (None: no catalog yet)."""
    own = catalog is None
    catalog = catalog or peek_catalog(wiki)
    if catalog is None:
        return None
    try:
        return _context(wiki, viewer, cwd, compact, catalog)
    finally:
        if own:
            catalog.close()


def _context(wiki: Wiki, viewer: Viewer, cwd: str, compact: bool, catalog: Catalog) -> Context:
    budget = int(wiki.settings.get("agents.context_tokens", CONTEXT_TOKENS))
    known = catalog.tally(viewer, "domain")
    folder = folder_for(wiki, cwd)
    if folder is not None:
        domains, mapped = tuple(d for d in folder.domains if d in known), "settings"
    else:
        domains = _named_like(cwd, known)
        mapped = "name" if domains else ""
    where = f" for {cwd}" if cwd else ""
    who = f", read as {viewer.name}" if viewer.name else ""
    head = [f"llm-wiki, the decision archive at {wiki.root}{who}{where}:"]
    if not known:
        head.append("It holds no entries yet.")
    elif not domains:
        total = sum(known.values())
        top = sorted(known, key=lambda d: (-known[d], d))[:8]
        listed = f"{', '.join(top)}{', …' if len(known) > len(top) else ''}"
        head.append(
            f"{total} entries in {len(known)} domains ({listed}); none is mapped to this folder "
            "(agents.folders in the wiki's settings.yaml)."
        )
    tail = [FOOTER] + ([AFTER_COMPACT] if compact else [])
    room = budget - estimate_tokens("\n".join(head + tail)) - 2

    many = len(domains) != 1
    incidents, n_incidents = _open_incidents(catalog, viewer, domains)
    inc_lines = _fit(
        [_line(r, many or not domains) for r in incidents], max(0, room // INCIDENT_SHARE)
    )
    # each list's heading is costed as its longest spelling ("N of M"), so the total never
    # runs over the budget whatever the wiki's path and the domains' names add to it
    of = f" in {', '.join(domains)}" if domains else ""
    inc_head = f"Open incidents{of} ({n_incidents} of {n_incidents}):"
    room -= estimate_tokens("\n".join(inc_lines)) + (
        estimate_tokens(inc_head + "\n") + 1 if inc_lines else 0
    )

    dec_lines: list[str] = []
    n_decisions = 0
    if domains:
        n_decisions = sum(
            catalog.count_rows(viewer, type="decision", domain=d, status="active") for d in domains
        )
        want = max(1, room // 25)  # a line costs at least ~25 tokens: never fetch more
        rows = [
            r
            for d in domains
            for r in catalog.rows(viewer, type="decision", domain=d, status="active", limit=want)
        ]
        rows.sort(key=lambda r: (r.date, r.id), reverse=True)
        names = ", ".join(domains)
        dec_head = f"Current decisions in {names} ({n_decisions} of {n_decisions}, newest first):"
        dec_lines = _fit(
            [_line(r, many) for r in rows], room - estimate_tokens(dec_head + "\n") - 1
        )

    body: list[str] = []
    if domains:
        names = ", ".join(domains)
        if dec_lines:
            shown = f"{len(dec_lines)} of {n_decisions}, " if len(dec_lines) < n_decisions else ""
            body.append(f"Current decisions in {names} ({shown}newest first):")
            body += dec_lines
        else:
            body.append(f"No current decisions in {names} yet.")
    if inc_lines:
        shown = f"{len(inc_lines)} of {n_incidents}" if len(inc_lines) < n_incidents else "all"
        body.append(f"Open incidents{of} ({shown}):")
        body += inc_lines
    text = "\n".join(head + body + tail) + "\n"
    return Context(
        wiki=str(wiki.root),
        reader=viewer.name,
        cwd=cwd,
        domains=domains,
        mapped=mapped,
        decisions=n_decisions,
        decisions_shown=len(dec_lines),
        incidents=n_incidents,
        incidents_shown=len(inc_lines),
        text=text,
    )


def _open_incidents(
    catalog: Catalog, viewer: Viewer, domains: tuple[str, ...]
) -> tuple[list[Row], int]:
    """Incidents not superseded and not listed in a later authored entry's sources (as the
    briefing counts them), newest first: in ``domains``, or everywhere when there are none."""
    if domains:
        rows = [
            r
            for d in domains
            for r in catalog.rows(viewer, type="incident", domain=d, status="active")
        ]
    else:
        rows = catalog.rows(viewer, type="incident", status="active")
    if not rows:
        return [], 0
    resolved = catalog.resolved(viewer)  # the briefing's rule: citing one does not close it
    rows = [r for r in rows if r.id not in resolved]
    rows.sort(key=lambda r: (r.date, r.id), reverse=True)
    return rows, len(rows)


def _line(row: Row, with_domain: bool) -> str:
    summary = " ".join(row.summary.split())
    if len(summary) > SUMMARY_CHARS:
        summary = summary[: SUMMARY_CHARS - 1].rsplit(" ", 1)[0] + "…"
    where = f" ({row.domain})" if with_domain else ""
    return f"- [{row.id}] {summary}{where}"


def _fit(lines: list[str], budget: int) -> list[str]:
    out: list[str] = []
    used = 0
    for line in lines:
        cost = estimate_tokens(line + "\n")
        if used + cost > budget:
            break
        out.append(line)
        used += cost
    return out


# --------------------------------------------------------------------------- the inbox copy


@dataclass(frozen=True)
class Copied:
    path: Path
    lines: int  # lines in the copy
    added: int  # lines added by this run


def copy_transcript(
    wiki: Wiki, viewer: Viewer, payload: dict[str, Any], *, environ: Mapping[str, str] | None = None
) -> Copied | None:
    """Copy (the new part of) the session's transcript into the inbox; None: nothing to copy,
    or no place it may go (see the module's docstring on walls)."""
    env = os.environ if environ is None else environ
    source = payload.get("transcript_path")
    session = payload.get("session_id")
    if not isinstance(source, str) or not source or not isinstance(session, str) or not session:
        return None
    folder = folder_for(wiki, str(payload.get("cwd") or ""))
    scope = folder.scope if folder else None
    if scope is not None and not viewer.can_write(scope):
        return None
    if scope is None and walls_on(wiki):
        return None
    inbox = Path(env.get(INBOX_ENV) or wiki.root / "inbox").expanduser()
    if scope is not None:
        inbox = inbox / scope
    name = re.sub(r"[^A-Za-z0-9_-]", "-", session)[:80]
    target = inbox / f"claude-code-{name}.txt"
    state_path = wiki.state_dir / STATE / f"{name}.json"

    transcript = Path(source).expanduser()
    size = transcript.stat().st_size
    state = _read_state(state_path)
    offset, kept = 0, b""
    if (
        state.get("transcript") == str(transcript)
        and state.get("target") == str(target)
        and isinstance(state.get("offset"), int)
        and 0 <= state["offset"] <= size
        and target.is_file()
        and target.stat().st_size == state.get("size")
    ):
        offset, kept = state["offset"], target.read_bytes()
    with open(transcript, "rb") as fh:
        fh.seek(offset)
        data = fh.read(size - offset)
    end = data.rfind(b"\n") + 1  # a last line still being written is copied next time
    lines = render_transcript(data[:end])
    if lines:
        text = kept + "".join(line + "\n" for line in lines).encode()
        atomic_write(target, text, mode=0o600)
    elif not kept:
        return None
    else:
        text = kept
    atomic_write(
        state_path,
        json.dumps(
            {
                "transcript": str(transcript),
                "target": str(target),
                "offset": offset + end,
                "size": len(text),
            }
        ),
    )
    return Copied(target, text.count(b"\n"), len(lines))


def _read_state(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


_COMMAND_RE = re.compile(r"^<(?:command-|local-command-|bash-|system-reminder|user-memory)")


def render_transcript(data: bytes) -> list[str]:
    """The messages of transcript JSON lines, one line each: ``[YYYY-MM-DD HH:MM] user: …`` and
    ``… claude: …`` (UTC). Lines that are not JSON, and every kind of record other than the
    user's and the assistant's own text, are skipped."""
    out = []
    for raw in data.splitlines():
        if b'"message"' not in raw:
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        text = _message_text(record)
        if not text:
            continue
        if len(text) > MESSAGE_CHARS:
            text = text[:MESSAGE_CHARS].rsplit(" ", 1)[0] + " [… cut]"
        speaker = "user" if record["type"] == "user" else "claude"
        stamp = record.get("timestamp")
        if isinstance(stamp, str) and re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d", stamp):
            out.append(f"[{stamp[:10]} {stamp[11:16]}] {speaker}: {text}")
        else:
            out.append(f"{speaker}: {text}")
    return out


def _message_text(record: Any) -> str:
    if not isinstance(record, dict) or record.get("type") not in ("user", "assistant"):
        return ""
    if record.get("isSidechain") or record.get("isMeta") or record.get("isCompactSummary"):
        return ""
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
    else:
        return ""
    text = " ".join(" ".join(parts).split())
    return "" if _COMMAND_RE.match(text) else text


# --------------------------------------------------------------------------- running a hook


def run(
    event: str,
    payload: dict[str, Any],
    *,
    wiki_path: str | None = None,
    reader: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """What hook ``event`` prints for ``payload`` (it may raise; :func:`main` fails open)."""
    if event not in EVENTS:
        raise ValueError(f"unknown hook event {event!r}; one of {', '.join(EVENTS)}")
    env = os.environ if environ is None else environ
    cwd = payload.get("cwd")
    cwd = cwd if isinstance(cwd, str) else ""
    wiki = resolve_wiki(wiki_path, cwd=Path(cwd) if cwd and os.path.isdir(cwd) else None)
    viewer = resolve_viewer(wiki, reader or env.get(ENV_READER))
    if event == "session-start":
        context = session_context(wiki, viewer, cwd, compact=payload.get("source") == "compact")
        return context.text if context else ""
    try:
        copy_transcript(wiki, viewer, payload, environ=env)
    except OSError as exc:  # no transcript (yet): what the summary should keep still holds
        _warn(event, f"transcript not copied: {exc}")
    return SUMMARIZER + "\n" if event == "pre-compact" else ""


def _warn(event: str, message: str) -> None:
    print(f"llm-wiki hook {event or '?'}: {message}", file=sys.stderr)


def _parse(argv: list[str]) -> tuple[str, str | None, str | None]:
    event, wiki_path, reader = "", None, None
    args = iter(argv)
    for arg in args:
        if arg == "--wiki":
            wiki_path = next(args, None)
        elif arg == "--as":
            reader = next(args, None)
        elif not event:
            event = arg
    return event, wiki_path, reader


def main(argv: list[str] | None = None) -> int:
    """``python -m llm_wiki.hooks EVENT [--wiki PATH] [--as READER]``: always exits 0."""
    event, wiki_path, reader = _parse(sys.argv[1:] if argv is None else argv)
    try:
        raw = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read(STDIN_LIMIT)
        payload = json.loads(raw)
    except (OSError, ValueError):
        payload = None
    if not isinstance(payload, dict):  # not what Claude Code sends: do nothing
        _warn(event, "stdin is not a hook's JSON object; nothing done")
        return 0
    try:
        text = run(event, payload, wiki_path=wiki_path, reader=reader)
    except Exception as exc:  # fail open: the agent's session never depends on the wiki
        _warn(event, getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")
        return 0
    if text:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
