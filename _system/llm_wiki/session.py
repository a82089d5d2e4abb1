"""The front door: one wiki, one reader, one method per verb.

``llm_wiki.open(path, reader=None)`` (or ``llm_wiki.init(path)``) gives a :class:`Session`. The
CLI, the MCP server and Python programs all go through it, so the decisions every verb shares
are made here, once:

- **which wiki**: ``path`` > ``LLM_WIKI_DIR`` > the nearest wiki upward > ``~/llm-wiki``
  (:func:`llm_wiki.wiki.resolve_wiki`);
- **which viewer**: the reader given > ``LLM_WIKI_READER``, checked against access.yaml when a
  verb first reads (:func:`llm_wiki.access.resolve_viewer`), and kept for the session;
- **the disk commands** (``index``, ``archive``, ``sync``) act on every scope, so under walls they
  run without a reader or as an admin (:func:`llm_wiki.access.disk_viewer`);
- **which backend**: the name given > ``LLM_WIKI_BACKEND`` > settings.yaml > ``offline``
  (:func:`llm_wiki.backends.resolve`). The flows take the backend object; the result says where
  its name came from (``backend_source``: flag, env, settings or default; a name passed to a
  method counts as the flag).

The long verbs (``consolidate``, ``ingest``, ``ingest_inbox``, ``lint`` with the LLM,
``import_adr``, ``index``, ``archive``, ``site``) take ``progress``, a
:class:`llm_wiki.progress.Progress` told what is done as the run goes (n of N, LLM calls and
tokens); the CLI passes one that draws on a terminal.

Each method is one call into the flow that does the work, imported inside the method so that
``import llm_wiki`` and ``llm-wiki write`` load only what they use. Results are the flows'
frozen dataclasses; their ``to_dict()`` is what ``--json`` prints.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llm_wiki.access import Viewer, disk_viewer, resolve_viewer
from llm_wiki.entries import Alternative, Entry, draft, parse_alt
from llm_wiki.wiki import ENV_DIR, Wiki, resolve_wiki

if TYPE_CHECKING:
    from pathlib import Path

    from llm_wiki.adr import ImportResult
    from llm_wiki.agents import InstalledPlugin
    from llm_wiki.archive import ArchiveResult
    from llm_wiki.backends import Backend
    from llm_wiki.brief import Briefing, SavedBriefings
    from llm_wiki.catalog import IndexResult
    from llm_wiki.consolidate import ConsolidateResult
    from llm_wiki.create import InitResult
    from llm_wiki.evaluation import EvalResult
    from llm_wiki.hooks import Context
    from llm_wiki.ingest import InboxResult, IngestResult
    from llm_wiki.lint import LintResult
    from llm_wiki.progress import Progress
    from llm_wiki.reads import Page, Shown
    from llm_wiki.retrieve import Answer
    from llm_wiki.site import SiteResult
    from llm_wiki.stats import Stats
    from llm_wiki.sync import SyncResult
    from llm_wiki.tokens import Issued, Token
    from llm_wiki.verify import VerifyResult
    from llm_wiki.write import WriteResult

PathLike = str | os.PathLike[str]


class Session:
    """A wiki as one reader sees it. ``viewer`` fixes the reader outright; else ``reader`` (or
    ``LLM_WIKI_READER``) names one, resolved at the first read. Open a new session to see a
    changed access.yaml."""

    def __init__(
        self, wiki: Wiki | PathLike, viewer: Viewer | None = None, *, reader: str | None = None
    ) -> None:
        self.wiki = wiki if isinstance(wiki, Wiki) else resolve_wiki(wiki)
        self.reader = viewer.name if viewer is not None else reader
        self._viewer = viewer

    def __repr__(self) -> str:
        return f"Session({self.wiki.dir!r}, reader={self.reader!r})"

    @property
    def root(self) -> Path:
        return self.wiki.root

    @property
    def viewer(self) -> Viewer:
        """Who reads: resolved once, failing closed under walls when no reader is named."""
        if self._viewer is None:
            self._viewer = resolve_viewer(self.wiki, self.reader)
        return self._viewer

    def _disk(self, command: str) -> None:
        """Refuse a disk command to a walled reader (see :func:`llm_wiki.access.disk_viewer`)."""
        disk_viewer(self.wiki, self.reader, command)

    def _backend(self, backend: str | Backend | None, model: str | None) -> tuple[Backend, str]:
        from llm_wiki.backends import Backend, resolve  # deferred: start-up (write never needs it)

        if isinstance(backend, Backend):
            return backend, "flag"
        return resolve(self.wiki, backend, model)

    # ------------------------------------------------------------------ entries

    def write(
        self,
        entry: Entry | Mapping[str, Any] | None = None,
        *,
        type: str | None = None,
        domain: str | None = None,
        summary: str | None = None,
        body: str | None = None,
        tags: Sequence[str] = (),
        actors: Sequence[str] = (),
        supersedes: Sequence[str] = (),
        resolves: Sequence[str] = (),
        alternatives: Sequence[Alternative | Mapping[str, str] | str] = (),
        aliases: Sequence[str] = (),
        questions: Sequence[str] = (),
        sources: Sequence[str] = (),
        scope: str | None = None,
        status: str | None = None,
        origin: str | None = None,
        date: str | None = None,
        id: str | None = None,
        dry_run: bool = False,
    ) -> WriteResult:
        """Record a new entry: ``entry`` (an Entry or its fields as a mapping), overridden by the
        fields given. An alternative is an :class:`Alternative`, ``{"id", "rejected_because"}``
        or ``"id: why it was rejected"``. ``id``: an explicit id instead of a minted one."""
        from llm_wiki.schema import LIST_SIZED, require_list_sizes  # deferred: start-up
        from llm_wiki.write import write_entry  # deferred: start-up

        viewer = self.viewer  # who writes is settled first, before the fields are judged
        base = dict(entry.to_dict() if isinstance(entry, Entry) else entry or {})
        given = {
            "actors": actors,
            "tags": tags,
            "supersedes": supersedes,
            "resolves": resolves,
            "aliases": aliases,
            "questions": questions,
            "sources": sources,
            "alternatives_considered": alternatives,
        }
        # a list of a million items is refused for its length, before a million are parsed
        sized = {f: given.get(f) or base.get(f) or () for f in LIST_SIZED}
        require_list_sizes(sized, self.wiki.schema)
        if alternatives:
            base["alternatives_considered"] = [_alternative(a) for a in alternatives]
        built = draft(
            base,
            type=type,
            domain=domain,
            summary=summary,
            tag=tags,
            actor=actors,
            supersedes=supersedes,
            resolves=resolves,
            alias=aliases,
            question=questions,
            source=sources,
            scope=scope,
            status=status,
            origin=origin,
            date=date,
            body=body,
        )
        return write_entry(self.wiki, built, viewer=viewer, explicit_id=id, dry_run=dry_run)

    def show(self, id: str) -> Shown:
        """One entry with its derived status; NotFound for one this reader may not see."""
        from llm_wiki.reads import show_entry  # deferred: start-up

        return show_entry(self.wiki, id, self.viewer)

    def list(
        self,
        *,
        type: str | None = None,
        domain: str | None = None,
        tag: str | None = None,
        actor: str | None = None,
        scope: str | None = None,
        since: str | None = None,
        until: str | None = None,
        status: str = "all",
        limit: int | None = 50,
        offset: int = 0,
    ) -> Page:
        """Entries matching every filter given, newest first, one page (``limit`` None: all)."""
        from llm_wiki.reads import list_entries  # deferred: start-up

        return list_entries(
            self.wiki,
            self.viewer,
            type=type,
            domain=domain,
            tag=tag,
            actor=actor,
            scope=scope,
            since=since,
            until=until,
            status=status,
            limit=limit,
            offset=offset,
        )

    def stats(self) -> Stats:
        """Counts by type, domain, status, scope and origin, and the LLM calls (``extra``)."""
        from llm_wiki.reads import wiki_stats  # deferred: start-up

        return wiki_stats(self.wiki, self.viewer)

    def verify(self) -> VerifyResult:
        """Every entry this reader may see against the sha256 log.md recorded for it."""
        from llm_wiki.verify import verify  # deferred: start-up

        return verify(self.wiki, self.viewer)

    # ------------------------------------------------------------------ asking

    def query(
        self,
        question: str,
        *,
        k: int | None = None,
        budget: int | None = None,
        file_back: bool = False,
        backend: str | Backend | None = None,
        model: str | None = None,
    ) -> Answer:
        """Answer ``question`` from the entries, citing them (offline: quoting them)."""
        from llm_wiki.retrieve import query  # deferred: start-up

        viewer = self.viewer
        chosen, source = self._backend(backend, model)
        answer = query(
            self.wiki,
            viewer,
            question,
            k=k,
            budget=budget,
            backend=chosen,
            file_back=file_back,
        )
        return _replace(answer, backend_source=source)

    def eval(
        self,
        questions: PathLike,
        *,
        k: int | None = None,
        budget: int | None = None,
        backend: str | Backend | None = None,
        model: str | None = None,
    ) -> EvalResult:
        """Score retrieval on a file of questions (one JSON object a line)."""
        from llm_wiki.evaluation import evaluate  # deferred: start-up

        viewer = self.viewer
        chosen, source = self._backend(backend, model)
        # every entry embedded first: else the first questions rank lexically (a query embeds
        # a few entries itself) and the same file scores differently run to run
        self._refresh_vectors()
        result = evaluate(self.wiki, viewer, _path(questions), k=k, budget=budget, backend=chosen)
        return _replace(result, backend_source=source)

    def brief(
        self,
        *,
        days: int | None = None,
        backend: str | Backend | None = None,
        model: str | None = None,
    ) -> Briefing:
        """What changed in the last ``days`` days (settings.yaml ``brief.days``)."""
        from llm_wiki.brief import brief  # deferred: start-up (jinja2 comes with it)

        viewer = self.viewer
        chosen, source = self._backend(backend, model)
        result = brief(self.wiki, viewer, days=days, backend=chosen)
        return _replace(result, backend_source=source)

    def save_briefings(
        self,
        *,
        days: int | None = None,
        backend: str | Backend | None = None,
        model: str | None = None,
    ) -> SavedBriefings:
        """The daily job: today's briefing into briefings/ (with walls, one per scope)."""
        from llm_wiki.brief import save_briefings  # deferred: start-up (jinja2 comes with it)

        viewer = self.viewer
        chosen, source = self._backend(backend, model)
        result = save_briefings(self.wiki, viewer, days=days, backend=chosen)
        saved = tuple(
            _replace(s, briefing=_replace(s.briefing, backend_source=source)) for s in result.saved
        )
        return _replace(result, saved=saved, backend_source=source)

    def lint(
        self,
        *,
        with_llm: bool = False,
        max_calls: int | None = None,
        backend: str | Backend | None = None,
        model: str | None = None,
        progress: Progress | None = None,
    ) -> LintResult:
        """Every check over the entries this reader may see; ``with_llm``: contradictions too
        (the backend is chosen only then)."""
        from llm_wiki.lint import lint  # deferred: start-up

        viewer = self.viewer
        if not with_llm:
            return lint(self.wiki, viewer, max_calls=max_calls)
        chosen, source = self._backend(backend, model)
        from llm_wiki.progress import reporting  # deferred: start-up

        with reporting(progress):
            result = lint(self.wiki, viewer, with_llm=True, max_calls=max_calls, backend=chosen)
        return _replace(result, backend_source=source)

    def site(
        self,
        out: PathLike | None = None,
        *,
        full: bool = False,
        progress: Progress | None = None,
    ) -> SiteResult:
        """Build (or bring up to date) the static site of what this reader may read, in ``out``
        (default .llm-wiki/site/, under walls .llm-wiki/site/READER/); ``full``: start over
        rather than follow log.md from the last build (every entry file hashed again)."""
        from llm_wiki.site import build_site  # deferred: jinja2 and markdown-it

        viewer = self.viewer
        from llm_wiki.progress import reporting  # deferred: start-up

        with reporting(progress):
            return build_site(self.wiki, viewer, out, full=full)

    # ------------------------------------------------------------------ compiling

    def ingest(
        self,
        source: PathLike | bytes,
        *,
        name: str = "-",
        kind: str | None = None,
        scope: str | None = None,
        dry_run: bool = False,
        max_calls: int | None = None,
        backend: str | Backend | None = None,
        model: str | None = None,
        progress: Progress | None = None,
    ) -> IngestResult:
        """Compile one source into cited entries: a file's path, or its bytes (``name`` says
        where they came from)."""
        from llm_wiki.ingest import ingest, ingest_file  # deferred: start-up

        viewer = self.viewer
        chosen, origin = self._backend(backend, model)
        options: dict[str, Any] = dict(
            kind=kind, scope=scope, dry_run=dry_run, max_calls=max_calls, backend=chosen
        )
        from llm_wiki.progress import reporting  # deferred: start-up

        with reporting(progress) as shown:
            shown.task("ingest", total=1)
            if isinstance(source, bytes):
                shown.item(name)
                result = ingest(self.wiki, viewer, source, name=name, **options)
            else:
                shown.item(_path(source).name)
                result = ingest_file(self.wiki, viewer, _path(source), **options)
            shown.done()
        return _replace(result, backend_source=origin)

    def ingest_inbox(
        self,
        folder: PathLike,
        *,
        quiet_minutes: float | None = None,
        kind: str | None = None,
        scope: str | None = None,
        dry_run: bool = False,
        max_calls: int | None = None,
        backend: str | Backend | None = None,
        model: str | None = None,
        progress: Progress | None = None,
    ) -> InboxResult:
        """Ingest each file of ``folder`` unchanged for ``quiet_minutes`` (the scheduled job)."""
        from llm_wiki.ingest import ingest_inbox  # deferred: start-up

        viewer = self.viewer
        chosen, source = self._backend(backend, model)
        from llm_wiki.progress import reporting  # deferred: start-up

        with reporting(progress):
            result = ingest_inbox(
                self.wiki,
                viewer,
                _path(folder),
                quiet_minutes=quiet_minutes,
                kind=kind,
                scope=scope,
                dry_run=dry_run,
                max_calls=max_calls,
                backend=chosen,
            )
        return _replace(result, backend_source=source)

    def import_adr(
        self,
        folder: PathLike,
        *,
        domain: str | None = None,
        scope: str | None = None,
        recursive: bool = False,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> ImportResult:
        """A folder of architecture decision records as decision entries."""
        from llm_wiki.adr import import_adr  # deferred: start-up

        viewer = self.viewer
        from llm_wiki.progress import reporting  # deferred: start-up

        with reporting(progress):
            result = import_adr(
                self.wiki,
                _path(folder),
                viewer=viewer,
                domain=domain,
                scope=scope,
                recursive=recursive,
                dry_run=dry_run,
            )
            if not dry_run and any(r.action in ("created", "updated") for r in result.records):
                self._refresh_vectors()
        return result

    def consolidate(
        self,
        *,
        domain: str | None = None,
        all_domains: bool = False,
        max_calls: int | None = None,
        max_tokens: int | None = None,
        verify_with_llm: bool | None = None,
        dry_run: bool = False,
        backend: str | Backend | None = None,
        model: str | None = None,
        progress: Progress | None = None,
    ) -> ConsolidateResult:
        """The nightly job: each out-of-date domain rewritten as one cited synthesis."""
        from llm_wiki.consolidate import consolidate  # deferred: start-up

        viewer = self.viewer
        chosen, source = self._backend(backend, model)
        from llm_wiki.progress import reporting  # deferred: start-up

        with reporting(progress):
            result = consolidate(
                self.wiki,
                viewer,
                domain=domain,
                all_domains=all_domains,
                max_calls=max_calls,
                max_tokens=max_tokens,
                dry_run=dry_run,
                verify_with_llm=verify_with_llm,
                backend=chosen,
            )
        return _replace(result, backend_source=source)

    # ------------------------------------------------------------------ agents

    def agent_context(self, cwd: PathLike | None = None, *, compact: bool = False) -> Context:
        """What the Claude Code session-start hook gives an agent working in ``cwd`` (default:
        this process's folder): the current decisions of the domains it maps to (agents.folders
        in settings.yaml) and the open incidents, within agents.context_tokens."""
        from llm_wiki.catalog import read_catalog  # deferred: start-up
        from llm_wiki.hooks import session_context  # deferred: start-up

        viewer = self.viewer
        folder = os.path.abspath(os.path.expanduser(os.fspath(cwd or os.getcwd())))
        with read_catalog(self.wiki) as catalog:
            context = session_context(self.wiki, viewer, folder, compact=compact, catalog=catalog)
        assert context is not None  # a catalog was given
        return context

    def install_agents(self, dest: PathLike | None = None) -> InstalledPlugin:
        """Write the Claude Code plugin (skills, MCP server, hooks) for this wiki into ``dest``
        (default ~/.claude/skills/llm-wiki). A reader named here is checked now and written in;
        without one the hooks read LLM_WIKI_READER when they run."""
        from llm_wiki.agents import install_plugin  # deferred: start-up

        if self.reader:
            _ = self.viewer  # an unknown reader fails now, not in the agent's session
        return install_plugin(
            self.wiki.root, reader=self.reader, dest=_path(dest) if dest else None
        )

    # ------------------------------------------------------------------ the disk, every scope

    def index(
        self, *, check: bool = False, full: bool = False, progress: Progress | None = None
    ) -> IndexResult:
        """Bring the catalog, INDEX.md and index/ up to date; ``check``: only say what is stale;
        ``full``: drop the catalog and build it from every file (after a hand edit of it)."""
        from llm_wiki.catalog import check_index, rebuild_index  # deferred: start-up

        self._disk("index")
        if check:
            return check_index(self.wiki)
        from llm_wiki.progress import reporting  # deferred: start-up

        with reporting(progress):
            result = rebuild_index(self.wiki, full=full)
            refreshed = self._refresh_vectors()
        return result if refreshed is None else _replace(result, vectors=refreshed.to_dict())

    def _refresh_vectors(self) -> Any:
        """Embed the entries without a vector when the semantic signal is on (after ``index``,
        an import, and before ``eval``: else each query embeds a few and ranks lexically until
        all have one);
        None when it is off."""
        from llm_wiki.catalog import read_catalog  # deferred: start-up
        from llm_wiki.ranking import vectors  # deferred: start-up (numpy only when on)

        if not vectors.status(self.wiki).on:
            return None
        with read_catalog(self.wiki) as catalog:
            return vectors.refresh(self.wiki, catalog)

    def archive(
        self,
        *,
        older_than: int | str | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> ArchiveResult:
        """Roll entries superseded more than ``older_than`` days ago (``90`` or ``"90d"``;
        default settings.yaml) into a monthly archive."""
        from llm_wiki.archive import archive_entries, parse_age  # deferred: tarfile + zstandard

        self._disk("archive")
        days = parse_age(older_than) if isinstance(older_than, str) else older_than
        from llm_wiki.progress import reporting  # deferred: start-up

        with reporting(progress):
            return archive_entries(self.wiki, older_than_days=days, dry_run=dry_run)

    def sync(self, *, remote: str | None = None, push: bool = True) -> SyncResult:
        """Replicate through git: commit, pull --rebase, refresh the catalog, push."""
        from llm_wiki.sync import sync_wiki  # deferred: start-up

        self._disk("sync")
        return sync_wiki(self.wiki, remote=remote, push=push)

    # ------------------------------------------------------------------ the team server

    def add_token(self, reader: str, *, rotate: bool = False) -> Issued:
        """A new token for ``reader`` (shown once; the wiki keeps its hash). One per reader:
        ``rotate`` replaces the one it has. Under walls the reader must be in access.yaml."""
        from llm_wiki.tokens import add_token  # deferred: start-up

        self._disk("token add")
        return add_token(self.wiki, reader, rotate=rotate)

    def tokens(self) -> Sequence[Token]:
        """The tokens issued: reader, id, created and last used (never the token)."""
        from llm_wiki.tokens import list_tokens  # deferred: start-up

        self._disk("token list")
        return list_tokens(self.wiki)

    def revoke_token(self, who: str) -> Sequence[Token]:
        """Revoke the token of reader ``who`` (or with id ``who``); it is refused from the next
        request on."""
        from llm_wiki.tokens import revoke_token  # deferred: start-up

        self._disk("token revoke")
        return revoke_token(self.wiki, who)


def _path(path: PathLike) -> Path:
    from pathlib import Path  # deferred: start-up (write, show and list load no pathlib)

    return Path(path)


def _replace(result: Any, **changes: Any) -> Any:
    """``dataclasses.replace``, its module loaded by the commands that use it (list does not)."""
    import dataclasses  # deferred: start-up

    return dataclasses.replace(result, **changes)


def _alternative(value: Alternative | Mapping[str, str] | str) -> Any:
    if isinstance(value, str):
        value = parse_alt(value)
    if isinstance(value, Alternative):
        return {"id": value.id, "rejected_because": value.rejected_because}
    return dict(value)


def open(path: PathLike | None = None, reader: str | None = None) -> Session:
    """The wiki at ``path`` (else ``LLM_WIKI_DIR``, the nearest wiki upward, ``~/llm-wiki``) as
    ``reader`` sees it (else ``LLM_WIKI_READER``; under walls one must be named)."""
    return Session(resolve_wiki(path), reader=reader)


def create_wiki(path: PathLike | None = None) -> InitResult:
    """``llm-wiki init``: a wiki at ``path`` (else ``LLM_WIKI_DIR``, else ``~/llm-wiki``) in a new
    or empty folder; an existing wiki is left as it is. The result says what was created."""
    from llm_wiki.create import init_wiki  # deferred: start-up (templates, the first index)

    return init_wiki(path or os.environ.get(ENV_DIR) or _path(os.path.expanduser("~")) / "llm-wiki")


def init(path: PathLike | None = None, *, reader: str | None = None) -> Session:
    """:func:`create_wiki`, then :func:`open` it."""
    return Session(Wiki(_path(create_wiki(path).root)), reader=reader)
