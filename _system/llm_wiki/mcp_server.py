"""The MCP server (``llm-wiki mcp``): the wiki as tools an agent can call over stdio.

Built on the official MCP SDK (``mcp`` 2.x, ``MCPServer``), imported only here and only by the
``mcp`` command. The wiki and the reader are fixed when the server starts (``--wiki``, ``--as``);
every tool reads and writes as that reader, with the scopes access.yaml grants it at the time of
the call, so an entry the reader may not see behaves exactly like one that does not exist.

Tools: ``wiki_write``, ``wiki_query``, ``wiki_show``, ``wiki_list`` (paged by a limit and an
opaque cursor, so a large wiki cannot flood a conversation) and ``wiki_brief``. A mistake reaches
the client as a tool error whose message says how to fix it (``ToolError``); the CLI's wording
(flags) is translated into the tools' parameter names.
"""

import base64
import binascii
import functools
import hashlib
import json
import re
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from llm_wiki.access import Viewer
from llm_wiki.errors import InvalidInput, WikiError, storage_failure
from llm_wiki.session import Session
from llm_wiki.version import __version__
from llm_wiki.wiki import Wiki

LIST_DEFAULT = 20
LIST_MAX = 100
SHOW_MAX_CHARS = 20_000

INSTRUCTIONS = """\
llm-wiki is the team's append-only archive of decisions (with the alternatives they rejected),
incidents, reflections and syntheses. Before deciding or answering "why do we ...?", call
wiki_query and cite the entry ids it returns; open an entry with wiki_show before relying on it
and follow superseded_by to what holds now. Call wiki_write after a real decision was made (with
every rejected alternative and why), when something broke or surprised (incident), or when a
pattern shows across events (reflection); not for tool output, plans or chatter. Entries are never
edited: to change one, write a new entry that supersedes it. wiki_list browses (paged);
wiki_brief says what changed in the last days."""

# The library's messages name CLI flags; an agent calling tools needs the parameter names.
_FLAG_WORDS = (
    ("--alt 'ID: why it was rejected' (repeatable)", "alternatives: [{id, rejected_because}]"),
    ("--alt", "alternatives"),
    ("--supersedes", "supersedes"),
    ("--source", "sources"),
    ("--scope", "scope"),
    ("--type", "type"),
    ("--domain", "domain"),
    ("--summary", "summary"),
    ("--status", "status"),
    ("--tag", "tags"),
    ("--date", "date"),
    ("--since", "since"),
    ("--backend offline", "backend: offline in settings.yaml"),
    ("`llm-wiki list`", "wiki_list"),
    ("`llm-wiki query`", "wiki_query"),
    ("`llm-wiki stats`", "wiki_list"),
)

F = TypeVar("F", bound=Callable[..., Any])


def tool_message(message: str) -> str:
    """A library error message in the tools' terms."""
    for flag, name in _FLAG_WORDS:
        message = re.sub(re.escape(flag) + r"(?![\w-])", name, message)
    return message


def build_server(
    wiki: Wiki,
    viewer: Viewer | None = None,
    *,
    open_session: Callable[[Any], Session] | None = None,
) -> Any:
    """An MCPServer whose tools act on ``wiki`` as ``viewer``.

    The reader is fixed; what it may read and write is read from access.yaml at every call, so
    a scope withdrawn (or walls put up) while the server runs holds at once, not at restart.
    ``open_session(ctx)`` replaces that: each call's Session comes from the tool call's context
    (``llm-wiki serve`` finds the reader its HTTP request proved with a token).
    """

    reader = (viewer.name or None) if viewer is not None else None

    def session(ctx: Any) -> Session:
        if open_session is not None:
            return open_session(ctx)
        return Session(wiki, reader=reader)  # its viewer is resolved at this call

    try:
        from mcp.server.mcpserver import MCPServer  # deferred: the MCP SDK, only `llm-wiki mcp`
    except ImportError as exc:  # pragma: no cover - mcp is a dependency
        raise WikiError(f"the MCP SDK 2.x is missing ({exc}); pip install 'mcp>=2'.") from None
    from mcp.server.mcpserver import Context  # deferred: the MCP SDK
    from mcp.server.mcpserver.exceptions import ToolError  # deferred: the MCP SDK
    from mcp.types import ToolAnnotations  # deferred: the MCP SDK
    from pydantic import BaseModel, Field  # deferred: pydantic, with the MCP SDK

    types = list(wiki.schema.types)
    statuses = list(wiki.schema.statuses)

    def tool_errors(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except WikiError as exc:
                raise ToolError(tool_message(exc.message)) from None
            except Exception as exc:  # a full disk, a read-only folder: one line, not a bug
                failure = storage_failure(exc)
                if failure is None:
                    raise
                raise ToolError(tool_message(failure.message)) from None

        return wrapper  # type: ignore[return-value]  # same signature, for the SDK's schema

    server = MCPServer(
        name="llm-wiki",
        title="llm-wiki",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )

    class Alternative(BaseModel):
        id: str = Field(description="A short kebab-case name of the rejected option: dynamodb")
        rejected_because: str = Field(description="Why it was rejected, in one clause.")

    type_list = ", ".join(f"{t} ({wiki.schema.types[t].description.rstrip('.')})" for t in types)

    @server.tool(
        name="wiki_write",
        title="Record an entry",
        description=(
            "Record a new, immutable entry. Write when a real decision was made (list every "
            "alternative considered and why it was rejected), something broke or surprised "
            "(incident), a pattern was seen across events (reflection) or inputs were distilled "
            "into findings (synthesis). Not for tool output, in-progress plans or chatter. "
            "Entries are never edited: to change one, write a new entry with its id in "
            "supersedes. Writing identical content again returns the existing id "
            "(created: false), so retrying is safe. Returns the id and path."
        ),
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
    @tool_errors
    def wiki_write(
        type: Annotated[
            str, Field(description=f"One of: {type_list}.", json_schema_extra={"enum": types})
        ],
        domain: Annotated[
            str, Field(description="One area, lowercase with hyphens: payments, platform.")
        ],
        summary: Annotated[
            str, Field(description="One sentence: what was decided or happened, with numbers.")
        ],
        alternatives: Annotated[
            list[Alternative],
            Field(
                description="alternatives_considered: each rejected option and why. Required "
                "for a decision."
            ),
        ] = [],  # noqa: B006 - pydantic copies defaults; the SDK builds the schema from them
        body: Annotated[
            str, Field(description="Markdown: context, decision or what happened, consequences.")
        ] = "",
        tags: Annotated[list[str], Field(description="Topics.")] = [],  # noqa: B006
        actors: Annotated[list[str], Field(description="Who took part.")] = [],  # noqa: B006
        supersedes: Annotated[
            list[str], Field(description="Ids of the entries this one replaces.")
        ] = [],  # noqa: B006
        resolves: Annotated[
            list[str], Field(description="Ids of the incidents this entry resolves (closes).")
        ] = [],  # noqa: B006
        questions: Annotated[
            list[str], Field(description="Questions this entry answers, as someone would ask.")
        ] = [],  # noqa: B006
        aliases: Annotated[
            list[str], Field(description="Other names for it, other languages too.")
        ] = [],  # noqa: B006
        sources: Annotated[
            list[str],
            Field(description="What it rests on: entry ids, raw/<sha256>.<ext>#L1-L9, kind:name."),
        ] = [],  # noqa: B006
        status: Annotated[
            str | None,
            Field(
                description="active (default), or proposed for a decision not yet in force.",
                json_schema_extra={"enum": [*statuses, None]},
            ),
        ] = None,
        scope: Annotated[
            str | None, Field(description="Its audience under walls; default from settings.")
        ] = None,
        dry_run: Annotated[
            bool, Field(description="Validate and return the entry's text; write nothing.")
        ] = False,
        ctx: Context = None,  # type: ignore[assignment]  # the SDK passes it; never in the schema
    ) -> dict[str, Any]:

        result = session(ctx).write(
            type=type,
            domain=domain,
            summary=summary,
            alternatives=[a.model_dump() for a in alternatives],
            tags=tags,
            actors=actors,
            supersedes=supersedes,
            resolves=resolves,
            aliases=aliases,
            questions=questions,
            sources=sources,
            scope=scope,
            status=status,
            body=body,
            dry_run=dry_run,
        )
        return result.to_dict()

    @server.tool(
        name="wiki_query",
        title="Ask the archive",
        description=(
            "Answer a question from the archive, citing the entries it rests on. Returns answer "
            "(ids cited in [brackets]), cited (each with status and superseded_by), opened, and "
            "mode: llm, extractive (offline: the best entries' summaries quoted) or "
            "nothing-found (say so; do not guess). Open cited entries with wiki_show before "
            "relying on them."
        ),
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    @tool_errors
    def wiki_query(
        question: Annotated[str, Field(description="The question, in plain words.")],
        k: Annotated[
            int | None, Field(description="Entries to open (default 3).", ge=1, le=20)
        ] = None,
        ctx: Context = None,  # type: ignore[assignment]  # the SDK passes it; never in the schema
    ) -> dict[str, Any]:

        return session(ctx).query(question, k=k).to_dict()

    @server.tool(
        name="wiki_show",
        title="Read an entry",
        description=(
            "One entry by id: its frontmatter (type, date, status, superseded_by, "
            "alternatives_considered, sources, ...) and body. A superseded entry is history: "
            "follow superseded_by to what holds now."
        ),
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    @tool_errors
    def wiki_show(
        id: Annotated[str, Field(description="The entry id, e.g. 2026-05-02-use-postgres-3f2a.")],
        max_chars: Annotated[
            int, Field(description="Longest body returned; the rest is cut.", ge=100)
        ] = SHOW_MAX_CHARS,
        ctx: Context = None,  # type: ignore[assignment]  # the SDK passes it; never in the schema
    ) -> dict[str, Any]:

        shown = session(ctx).show(id.strip())
        data = shown.row.to_dict()
        body = shown.entry.body
        data["body"] = body[:max_chars]
        data["body_truncated"] = len(body) > max_chars
        return data

    @server.tool(
        name="wiki_list",
        title="Browse entries",
        description=(
            "Entries matching the filters, newest first, one page at a time: pass the "
            "next_cursor it returns to get the next page (null: no more). Each entry is a "
            "short line (id, date, type, domain, status, summary); open one with wiki_show."
        ),
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    @tool_errors
    def wiki_list(
        type: Annotated[
            str | None,
            Field(description="Only this type.", json_schema_extra={"enum": [*types, None]}),
        ] = None,
        domain: Annotated[str | None, Field(description="Only this domain.")] = None,
        tag: Annotated[str | None, Field(description="Only entries with this tag.")] = None,
        status: Annotated[
            str,
            Field(
                description="Effective status: all, active, superseded, proposed, ...",
                json_schema_extra={"enum": ["all", *statuses, "superseded"]},
            ),
        ] = "all",
        since: Annotated[str | None, Field(description="Dated on or after, YYYY-MM-DD.")] = None,
        limit: Annotated[
            int, Field(description=f"Entries per page (at most {LIST_MAX}).", ge=1, le=LIST_MAX)
        ] = LIST_DEFAULT,
        cursor: Annotated[
            str | None, Field(description="next_cursor from the previous page; omit at first.")
        ] = None,
        ctx: Context = None,  # type: ignore[assignment]  # the SDK passes it; never in the schema
    ) -> dict[str, Any]:

        filters = {"type": type, "domain": domain, "tag": tag, "status": status, "since": since}
        offset = _decode_cursor(cursor, filters) if cursor else 0
        page = session(ctx).list(
            type=type,
            domain=domain,
            tag=tag,
            status=status,
            since=since,
            limit=limit,
            offset=offset,
        )
        end = offset + len(page.rows)
        return {
            "total": page.total,
            "offset": offset,
            "entries": [_line(r) for r in page.rows],
            "next_cursor": _encode_cursor(end, filters) if end < page.total else None,
        }

    @server.tool(
        name="wiki_brief",
        title="What changed",
        description=(
            "The briefing for the last days: counts, new entries by domain and type, what was "
            "superseded and by what, open incidents, new decisions with their rejected "
            "alternatives, consolidator failures, LLM calls and tokens; markdown plus counts."
        ),
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    @tool_errors
    def wiki_brief(
        days: Annotated[int, Field(description="Days back, today included.", ge=1, le=366)] = 7,
        ctx: Context = None,  # type: ignore[assignment]  # the SDK passes it; never in the schema
    ) -> dict[str, Any]:

        result = session(ctx).brief(days=days)
        return {
            "date": result.date,
            "since": result.since,
            "until": result.until,
            "counts": result.counts,
            "narrative": result.narrative.status,
            "markdown": result.markdown(),
        }

    return server


def _line(row: Any) -> dict[str, Any]:
    data = {
        "id": row.id,
        "date": row.date,
        "type": row.type,
        "domain": row.domain,
        "status": row.effective_status,
        "summary": row.summary,
        "tags": list(row.tags),
    }
    if row.superseded_by:
        data["superseded_by"] = list(row.superseded_by)
    return data


def _filters_key(filters: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(filters, sort_keys=True).encode()).hexdigest()[:12]


def _encode_cursor(offset: int, filters: dict[str, Any]) -> str:
    raw = json.dumps({"o": offset, "f": _filters_key(filters)}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str, filters: dict[str, Any]) -> int:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        offset = int(data["o"])
        same = data["f"] == _filters_key(filters)
    except (binascii.Error, ValueError, KeyError, TypeError, OverflowError):
        raise InvalidInput(
            "cursor is not one wiki_list returned; call wiki_list without cursor to start over."
        ) from None
    if offset < 0 or offset > 2**62:
        raise InvalidInput(
            "cursor is not one wiki_list returned; call wiki_list without cursor to start over."
        )
    if not same:
        raise InvalidInput(
            "cursor belongs to a listing with other filters; pass the same filters as the call "
            "that returned it, or omit cursor to start over."
        )
    return offset


def serve(session: Session) -> None:
    """Run the server on stdin/stdout until the client disconnects, as the session's reader
    (checked now, so a reader access.yaml refuses never starts a server)."""
    build_server(session.wiki, session.viewer).run("stdio")
