"""Every other `llm-wiki` command (loaded only when one of them runs, or for --help)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from llm_wiki.cli import (
    _backend_options,
    _Command,
    _json_option,
    _note,
    _print_json,
    _progress,
    _session,
    _short,
    _wiki_option,
    _wiki_options,
)
from llm_wiki.errors import InvalidInput, WikiError

# --------------------------------------------------------------------------- init


@click.command(name="init", cls=_Command)
@click.argument("path", required=False)
@_json_option
@_wiki_option
def wiki_init(path: str | None, as_json: bool, wiki_path: str | None) -> None:
    """Create a wiki: README.md, schema.md, settings.yaml, INDEX.md, log.md, entries/.

    PATH defaults to --wiki, LLM_WIKI_DIR, or ~/llm-wiki. A non-empty folder that is not a wiki
    is refused; an existing wiki is left as it is.

    Example usage:

        llm-wiki init ~/llm-wiki
        llm-wiki init --wiki ~/team-wiki --json
    """
    from llm_wiki.session import create_wiki  # deferred: start-up

    obj = click.get_current_context().find_root().obj or {}
    result = create_wiki(path or wiki_path or obj.get("wiki_path"))
    if as_json:
        _print_json({"root": result.root, "created": result.created, "files": list(result.files)})
    elif result.created:
        click.echo(f"Created a wiki at {result.root}")
        click.echo(f"Next: llm-wiki --wiki {result.root} write --help")
    else:
        click.echo(f"{result.root} is already a wiki; nothing changed.")


@click.command(name="index", cls=_Command)
@click.option(
    "--check",
    is_flag=True,
    help="Exit 1 if INDEX.md, index/ or the catalog is stale; write nothing.",
)
@click.option(
    "--full",
    is_flag=True,
    help="Drop the catalog and build it again from every file (after a hand edit of it).",
)
@_json_option
@_wiki_options
def index_build(
    check: bool, full: bool, as_json: bool, wiki_path: str | None, reader: str | None
) -> None:
    """Rebuild the catalog, INDEX.md and index/ from the entries (only changed files re-parsed).

    With walls (access.yaml) the index files are written per scope, under indexes/<scope>/. It
    acts on the disk for every scope: run it without --as, or as an admin.

    Example usage:

        llm-wiki index
        llm-wiki index --check
        llm-wiki index --full
    """
    result = _session(wiki_path, reader).index(check=check, full=full, progress=_progress(as_json))
    if as_json:
        _print_json(result.to_dict())
    elif check:
        if result.stale:
            # A catalog that differs from its files may have been edited by hand, which a scan
            # (that trusts unchanged folders) would not undo.
            how = "index --full" if ".llm-wiki/catalog.sqlite3" in result.stale else "index"
            click.echo(f"Stale (run `llm-wiki {how}`): " + ", ".join(result.stale))
        else:
            click.echo(f"Index is up to date ({_n(result.entries, 'entry', 'entries')}).")
    else:
        click.echo(
            f"Indexed {_n(result.entries, 'entry', 'entries')} (re-parsed {result.parsed}, "
            f"dropped {result.removed}); wrote {_n(len(result.written), 'index file')}."
        )
        if result.vectors:
            v = result.vectors
            click.echo(
                f"Entry vectors: {v['vectors']:,} (embedded {v['embedded']:,} in "
                f"{v['embed_cpu_seconds']:.1f} s CPU, kept {v['kept']:,})."
            )
    for path, message in result.problems:
        _note(f"warning: {path}: unreadable entry skipped: {message}")
    for entry_id, path in result.unlogged[:5]:
        _note(
            f"warning: {entry_id} ({path}): its bytes are not what log.md logged: edited or "
            "added by hand; it is indexed as it is now, `llm-wiki verify` says more"
        )
    if len(result.unlogged) > 5:
        _note(f"warning: and {len(result.unlogged) - 5} more: `llm-wiki verify` lists them")
    if check and result.stale:
        sys.exit(1)


@click.command(name="site", cls=_Command)
@click.option(
    "--out",
    metavar="DIR",
    help="Where to build it (an empty or new folder, or an earlier site); default "
    ".llm-wiki/site/ (under walls .llm-wiki/site/READER/).",
)
@click.option(
    "--serve",
    "port",
    type=click.IntRange(0, 65535),
    is_flag=False,
    flag_value=8000,
    default=None,
    metavar="[PORT]",
    help="Then serve it on 127.0.0.1 (default port 8000; 0: any free one) and rebuild it when "
    "the wiki changes, until Ctrl-C.",
)
@click.option(
    "--full",
    is_flag=True,
    help="Start over: read every row, hash every entry file, plan every page (a rebuild "
    "otherwise follows log.md from where the last build stopped).",
)
@_json_option
@_wiki_options
def wiki_site(
    out: str | None,
    port: int | None,
    full: bool,
    as_json: bool,
    wiki_path: str | None,
    reader: str | None,
) -> None:
    """Build a static site of what the reader may read: wiki, evidence and inspector pages.

    Plain HTML with inline pictures and an offline search; it opens from the folder (file://)
    or from any static host and loads nothing from outside it. A rebuild renders only the pages
    whose inputs changed. Under walls a site is built for one reader (--as).

    Example usage:

        llm-wiki site
        llm-wiki site --out ~/wiki-site --as alice
        llm-wiki site --serve 8765
        llm-wiki site --full
    """
    session = _session(wiki_path, reader)
    viewer = session.viewer
    server = None
    if port is not None:  # the port first: one in use is said before a build, not after it
        from llm_wiki.site import site_folder  # deferred: the site's code, only for `site`
        from llm_wiki.site.serve import bind  # deferred: http.server, only with --serve

        server = bind(site_folder(session.wiki, viewer, out), port)
    result = session.site(out, full=full, progress=_progress(as_json))

    def report(result: Any) -> None:
        if as_json:
            _print_json(result.to_dict())
            return
        whom = f" for {result.reader}" if viewer.walls and result.reader else ""
        click.echo(
            f"Built the site{whom}: {_n(result.pages, 'page')}, {len(result.written)} written, "
            f"{len(result.removed)} removed ({_n(result.entries, 'entry', 'entries')}) in "
            f"{result.out}"
        )

    report(result)
    if port is None:
        if not as_json:
            click.echo(f"Open file://{result.out}/index.html")
        return
    from llm_wiki.site.serve import serve  # deferred: http.server, only with --serve

    serve(
        session.wiki,
        viewer.name or None,
        result.out,
        port,
        on_start=lambda url: click.echo(f"Serving {result.out} at {url} (Ctrl-C to stop)"),
        on_rebuild=report,
        server=server,
    )


@click.command(name="verify", cls=_Command)
@_json_option
@_wiki_options
def wiki_verify(as_json: bool, wiki_path: str | None, reader: str | None) -> None:
    """Check every entry against the sha256 in log.md: edited, removed or unlogged entries.

    Exits 1 on any finding.

    Example usage:

        llm-wiki verify
    """
    result = _session(wiki_path, reader).verify()
    if as_json:
        _print_json(result.to_dict())
    else:
        for f in result.findings:
            click.echo(f"{f.kind}: {f.id or f.path} ({f.path}) — {f.detail}")
        state = "clean" if result.ok else _n(len(result.findings), "finding")
        click.echo(f"Verified {_n(result.checked, 'entry', 'entries')}: {state}.")
    if not result.ok:
        sys.exit(1)


@click.command(name="stats", cls=_Command)
@_json_option
@_wiki_options
def wiki_stats(as_json: bool, wiki_path: str | None, reader: str | None) -> None:
    """Counts by type, domain, status, scope and origin; LLM calls and tokens by purpose, scope, day.

    Example usage:

        llm-wiki stats --json
    """
    stats = _session(wiki_path, reader).stats()
    if as_json:
        _print_json(stats.to_dict())
    else:
        _print_stats(stats)


def _print_stats(stats: Any) -> None:
    click.echo(
        f"{_n(stats.entries, 'entry', 'entries')} ({stats.first or '-'} to {stats.latest or '-'})"
    )
    for title, counts in (
        ("status", stats.by_status),
        ("type", stats.by_type),
        ("domain", stats.by_domain),
        ("scope", stats.by_scope),
        ("origin", stats.by_origin),
    ):
        if counts:
            click.echo(f"  by {title}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if stats.archived:
        click.echo(f"  archived: {stats.archived}")
    ranking = stats.extra.get("ranking") or {}
    if ranking:
        vectors = ""
        if ranking.get("semantic"):
            missing = ranking.get("vectors_missing") or 0
            vectors = f" ({ranking['vectors']:,} entry vectors" + (
                f", {missing:,} still to embed: run `llm-wiki index`)" if missing else ")"
            )
        click.echo(f"  ranking: {ranking['reason']}{vectors}")
    llm = stats.extra.get("llm") or {}
    if llm.get("calls"):
        failed = f" ({llm['failed']} failed)" if llm.get("failed") else ""
        click.echo(
            f"  LLM: {_n(llm['calls'], 'call')}{failed}, {llm['tokens_in']:,} tokens in, "
            f"{llm['tokens_out']:,} out"
        )
        for title, groups in (
            ("purpose", llm["by_purpose"]),
            ("scope", llm["by_scope"]),
            ("day", dict(list(llm["by_day"].items())[-7:])),
        ):
            click.echo(
                f"    by {title}: "
                + ", ".join(
                    f"{k} {_n(v['calls'], 'call')}/{v['tokens_in'] + v['tokens_out']:,} tokens"
                    for k, v in groups.items()
                )
            )
        for name, v in llm.get("by_model", {}).items():
            window = f"{v['context_window']:,}-token window" if v["context_window"] else "window ?"
            click.echo(
                f"    {name}: {_n(v['calls'], 'call')}, {window}, replies up to "
                f"{v['max_tokens']:,} tokens"
            )
    limits = llm.get("limits")
    if limits and "error" in limits:
        click.echo(f"  model limits: {limits['error']}")
    elif limits:
        click.echo(
            f"  model limits ({limits['backend']}/{limits['model']}, from {limits['source']}): "
            f"{limits['context_window']:,}-token context window, replies up to "
            f"{limits['max_output']:,} tokens"
        )


# ---- consolidate


@click.command(name="consolidate", cls=_Command)
@click.option("--domain", help="Only this domain (in every scope you may write).")
@click.option(
    "--all",
    "all_domains",
    is_flag=True,
    help="Rewrite every domain, even those up to date, ignoring cached chunk notes.",
)
@click.option(
    "--max-calls",
    type=click.IntRange(min=0),
    help="LLM calls this run may make; default settings.yaml consolidate.max_calls.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=0),
    help="Tokens this run may spend; default settings.yaml consolidate.max_tokens.",
)
@click.option(
    "--verify-with-llm/--no-verify-with-llm",
    default=None,
    help="A second call checks that each statement is supported by its citations (with an "
    "LLM backend, on unless settings.yaml consolidate.verify_with_llm is false).",
)
@click.option(
    "--dry-run", is_flag=True, help="Show what would be done and its cost; call and write nothing."
)
@_backend_options()
@_json_option
@_wiki_options
def wiki_consolidate(
    domain: str | None,
    all_domains: bool,
    max_calls: int | None,
    max_tokens: int | None,
    verify_with_llm: bool | None,
    dry_run: bool,
    backend: str | None,
    model: str | None,
    as_json: bool,
    wiki_path: str | None,
    reader: str | None,
) -> None:
    """Rewrite each out-of-date domain as one cited synthesis (the nightly job).

    A domain is out of date when its active entries differ from those its current synthesis
    was made from. The nightly job uses the backend in settings.yaml (offline: extractive
    syntheses); every statement must cite the entries it rests on, or the attempt is recorded
    in synthesis-failures.md. Exits 1 when the backend is unusable or fails: it never falls
    back to offline.

    Example usage:

        llm-wiki consolidate
        llm-wiki consolidate --domain ledger --dry-run
        llm-wiki consolidate --max-calls 10 --max-tokens 100000 --json
    """
    result = _session(wiki_path, reader).consolidate(
        domain=domain,
        all_domains=all_domains,
        max_calls=max_calls,
        max_tokens=max_tokens,
        dry_run=dry_run,
        verify_with_llm=verify_with_llm,
        backend=backend,
        model=model,
        progress=_progress(as_json),
    )
    if as_json:
        _print_json(result.to_dict())
    else:
        _print_consolidate(result, dry_run)
    if result.error:
        raise WikiError(f"{result.error}; the domains left wait for the next run.")
    if result.llm_all_failed:
        raise WikiError(
            f"every domain the LLM worked on failed ({_n(result.count('failed'), 'domain')}, "
            f"{result.llm_failed} of {result.llm_ok + result.llm_failed} LLM replies unusable; "
            "recorded in synthesis-failures.md); try a larger model, or --backend offline."
        )
    if result.all_failed:
        raise WikiError(
            f"every domain failed ({_n(len(result.domains), 'domain', 'domains')}, nothing "
            "written); see synthesis-failures.md for why, they are tried again next run."
        )


def _print_consolidate(result: Any, dry_run: bool) -> None:
    for d in result.domains:
        cost = f"{_n(d.calls, 'call')}, {d.tokens:,} tokens"
        what = (d.id or "") if d.status == "written" else d.reason
        if d.status == "failed":
            what += " (recorded in synthesis-failures.md)"
        click.echo(f"{d.status:<9} {d.scope}/{d.domain}  {what}  ({cost})")
    counts = ", ".join(
        f"{result.count(s)} {s}"
        for s in ("written", "skipped", "failed", "waiting", "planned")
        if result.count(s)
    )
    verb = "Would consolidate" if dry_run else "Consolidated"
    click.echo(
        f"{verb} with {result.backend}/{result.model} ({result.method}): "
        f"{counts or 'nothing to do'}; {result.up_to_date} up to date; "
        f"{_n(result.calls, 'LLM call')}, {result.tokens:,} tokens"
        + (" (estimated)." if dry_run else ".")
    )
    if result.verify_calls:
        click.echo(
            f"Of these, checking statements against their citations took "
            f"{_n(result.verify_calls, 'call')}, {result.verify_tokens:,} tokens "
            "(settings.yaml consolidate.verify_with_llm: false turns it off)."
        )


def _n(count: int, word: str, plural: str = "") -> str:
    """``1 entry``, ``2 entries``: a count with its noun."""
    return f"{count} {word if count == 1 else plural or word + 's'}"


# ---- archive and sync


@click.command(name="archive", cls=_Command)
@click.option(
    "--older-than",
    metavar="AGE",
    help="Archive entries superseded more than this long ago, e.g. 90d "
    "(default: settings.yaml archive.older_than_days, 90).",
)
@click.option("--dry-run", is_flag=True, help="List what would be archived; change nothing.")
@_json_option
@_wiki_options
def wiki_archive(
    older_than: str | None,
    dry_run: bool,
    as_json: bool,
    wiki_path: str | None,
    reader: str | None,
) -> None:
    """Roll long-superseded entries into a monthly archive (archive/*.tar.zst).

    Reads stay transparent: show, list, query and verify see archived entries. Each original is
    removed only after its archive copy is checked and logged; a re-run finishes an interrupted
    run, and a second run changes nothing. It acts on the disk for every scope: under walls, run
    it without --as, or as an admin.

    Example usage:

        llm-wiki archive --dry-run
        llm-wiki archive --older-than 180d --json
    """
    result = _session(wiki_path, reader).archive(
        older_than=older_than, dry_run=dry_run, progress=_progress(as_json)
    )
    if as_json:
        _print_json(result.to_dict())
    else:
        _print_archive(result, dry_run)


def _print_archive(result: Any, dry_run: bool) -> None:
    for entry_id, reason in result.skipped:
        _note(f"warning: left {entry_id} in entries/: {reason}")
    if result.finished:
        click.echo(
            f"Finished an interrupted run: removed {_n(len(result.finished), 'archived original')}."
        )
    if dry_run:
        click.echo(
            f"Would archive {_n(len(result.ids), 'entry', 'entries')} superseded before {result.cutoff}"
            + (":" if result.ids else ".")
        )
        for entry_id in result.ids:
            click.echo(f"  {entry_id}")
    elif result.archive:
        ratio = result.entry_bytes / result.size if result.size else 0.0
        click.echo(
            f"Archived {_n(len(result.ids), 'entry', 'entries')} into {result.archive} "
            f"({result.size:,} bytes, {ratio:.1f}x smaller)."
        )
    elif not result.finished:
        click.echo(f"Nothing to archive: no entry was superseded before {result.cutoff}.")


@click.command(name="sync", cls=_Command)
@click.option("--remote", metavar="NAME", help="The git remote (default: upstream, or origin).")
@click.option("--no-push", is_flag=True, help="Commit and pull, but do not push.")
@click.option(
    "--require-remote",
    is_flag=True,
    help="Exit 1 when the repository has no remote (after committing): the hourly job's check.",
)
@_json_option
@_wiki_options
def wiki_sync(
    remote: str | None,
    no_push: bool,
    require_remote: bool,
    as_json: bool,
    wiki_path: str | None,
    reader: str | None,
) -> None:
    """Replicate the wiki through git: commit, pull --rebase, refresh the catalog, push.

    Commits new entries, raw sources, archives and log.md. log.md merges as a union; INDEX.md,
    index/ and .llm-wiki/ are regenerated by each clone, never merged. Every scope goes to every
    clone: walls govern readers through the tool, not who holds the disk. Under walls, run it
    without --as, or as an admin.

    Example usage:

        llm-wiki sync
        llm-wiki sync --remote origin --json
    """
    result = _session(wiki_path, reader).sync(remote=remote, push=not no_push)
    unsynced = require_remote and result.remote is None
    if as_json:
        _print_json(result.to_dict())
        if unsynced:
            raise WikiError(_NO_REMOTE)
        return
    if result.committed:
        click.echo(f"Committed {_n(result.committed, 'file')} ({(result.commit or '')[:12]}).")
    else:
        click.echo("Nothing new to commit.")
    if result.remote is None:
        click.echo("No git remote: committed locally only (add one with `git remote add`).")
    else:
        click.echo(f"Pulled {_n(result.pulled, 'commit')} from {result.remote}.")
        click.echo(f"Pushed to {result.remote}." if result.pushed else "Not pushed (--no-push).")
    click.echo(f"The catalog holds {_n(result.entries, 'entry', 'entries')}.")
    if unsynced:
        raise WikiError(_NO_REMOTE)


_NO_REMOTE = (
    "this repository has no git remote, so nothing was replicated (committed locally only); "
    "add one with `git remote add origin URL`."
)


# ---- lint


@click.command(name="lint", cls=_Command)
@click.option(
    "--with-llm", is_flag=True, help="Also ask the LLM for contradictions between entries."
)
@click.option(
    "--max-calls",
    type=click.IntRange(min=0),
    help="LLM calls at most (default settings.yaml lint.max_calls).",
)
@_backend_options("The backend for --with-llm", llm_only=True)
@_json_option
@_wiki_options
def wiki_lint(
    with_llm: bool,
    max_calls: int | None,
    backend: str | None,
    model: str | None,
    as_json: bool,
    wiki_path: str | None,
    reader: str | None,
) -> None:
    """Find what rots: schema breaks, broken supersedes, tampering, duplicates, stale syntheses.

    Findings are errors, warnings or info; any error exits 1. A summary line goes to log.md.

    Example usage:

        llm-wiki lint
        llm-wiki lint --json
        llm-wiki lint --with-llm --max-calls 5
    """
    result = _session(wiki_path, reader).lint(
        with_llm=with_llm,
        max_calls=max_calls,
        backend=backend,
        model=model,
        progress=_progress(as_json),
    )
    if as_json:
        _print_json(result.to_dict())
    else:
        for f in result.findings:
            click.echo(f"{f.level:<7} {f.check}: {f.message}")
        counts = result.counts
        click.echo(
            f"Linted {_n(result.checked, 'entry', 'entries')}: {_n(counts['error'], 'error')}, "
            f"{_n(counts['warning'], 'warning')}, {counts['info']} info"
            + (f" ({_n(result.calls, 'LLM call')})" if with_llm else "")
            + "."
        )
    if not result.ok:
        sys.exit(1)


# ---- import-adr, eval (issue 3; query is in .query)


@click.command(name="import-adr", cls=_Command)
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--domain", help="The entries' domain; default: a slug of the folder name.")
@click.option("--scope", help="Their audience; default from settings.yaml (shared).")
@click.option("--recursive", is_flag=True, help="Records in sub-folders too (MADR categories).")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@_json_option
@_wiki_options
def adr_import(
    folder: str,
    domain: str | None,
    scope: str | None,
    recursive: bool,
    dry_run: bool,
    as_json: bool,
    wiki_path: str | None,
    reader: str | None,
) -> None:
    """Import a folder of architecture decision records as decision entries.

    Nygard/adr-tools, MADR, log4brains, or records with YAML frontmatter; oldest first, origin:
    imported, keeping each record's date (and where it came from), status, links, options with
    their reasons, and people. Run it again to follow the folder: unchanged records add
    nothing, an edited record gets a new entry that supersedes its earlier import.

    Example usage:

    \b
        llm-wiki import-adr docs/adr --domain platform
        llm-wiki import-adr docs/decisions --recursive --dry-run
        llm-wiki import-adr architecture-decision-records --json
        llm-wiki --as alice import-adr matters/acme/adr --scope matter-acme
    """
    result = _session(wiki_path, reader).import_adr(
        folder,
        domain=domain,
        scope=scope,
        recursive=recursive,
        dry_run=dry_run,
        progress=_progress(as_json),
    )
    if as_json:
        _print_json(result.to_dict())
    else:
        _print_import(result, dry_run)
    for item in result.refused:
        _note(f"refused link in {item['file']} ({item['kind']}): {item['link']}: {item['why']}")
    for warning in result.warnings:
        _note(f"warning: {warning}")


def _print_import(result: Any, dry_run: bool) -> None:
    for record in result.records:
        if record.action == "unchanged":
            continue
        replaces = f" (supersedes {', '.join(record.supersedes)})" if record.supersedes else ""
        target = record.id or "a new entry"
        click.echo(f"{record.action}: {record.file} -> {target}{replaces}")
    data = result.to_dict()
    if dry_run:
        click.echo(
            f"Dry run: would import {_n(data['would_create'], 'new record')} and "
            f"{_n(data['would_update'], 'changed record')} into domain {result.domain}; "
            f"{data['unchanged']} unchanged. Nothing was written."
        )
    else:
        click.echo(
            f"Imported {_n(data['imported'], 'record')} into domain {result.domain}"
            + (f" ({data['updated']} changed)" if data["updated"] else "")
            + (f"; {data['unchanged']} already there." if data["unchanged"] else ".")
        )
    for item in data["skipped"]:
        click.echo(f"skipped {item['file']}: {item['why']}")


@click.command(name="eval", cls=_Command)
@click.argument("questions", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--k", type=int, default=None, help="Entries picked per question (settings: query.k, 3)."
)
@_backend_options()
@_json_option
@_wiki_options
def wiki_eval(
    questions: str,
    k: int | None,
    backend: str | None,
    model: str | None,
    as_json: bool,
    wiki_path: str | None,
    reader: str | None,
) -> None:
    """Measure retrieval (and answers, where a line names gold sentences) on a file of questions.

    One JSON object a line: {"qid", "question", "relevant": [entry ids or source names],
    "kind", "gold": [sentences]}. kind is one of why, what-decided, when, alternatives, current (the
    first relevant name is the newest record, the rest those it replaced), past, none (nothing
    answers it; relevant empty) or other. Prints recall@1/3/5, MRR, current@3, current_first,
    shortlist recall, none_correct, false_none and the mean prompt size. A line with "gold" is
    also answered (with an LLM backend, a paid call) and scored by answer_hit: whether the
    answer holds a gold sentence. A relevant name no entry matches is warned about and scored
    as a miss.

    Example usage:

    \b
        llm-wiki eval tests/data/eval/tdr-dev.jsonl
        llm-wiki eval questions.jsonl --k 5 --json
    """
    result = _session(wiki_path, reader).eval(questions, k=k, backend=backend, model=model)
    for warning in result.warnings[:10]:
        _note(f"warning: {warning}")
    if result.unmatched:
        verb = "matches" if len(result.unmatched) == 1 else "match"
        _note(
            f"warning: {_n(len(result.unmatched), 'relevant name')} {verb} no entry you may read, "
            f"each scored as a miss: {', '.join(result.unmatched[:10])}"
            + (" ..." if len(result.unmatched) > 10 else "")
        )
    if as_json:
        _print_json(result.to_dict())
        return
    metrics = result.metrics()
    click.echo(
        f"{_n(metrics['n'], 'question')}, backend {result.backend}, k={result.k}, "
        f"ranking {result.ranking}"
    )
    for key, value in metrics.items():
        if key == "answer_hit_by_kind":
            value = ", ".join(f"{kind} {share}" for kind, share in value.items())
        if key != "n":
            click.echo(f"  {key:<20} {'-' if value is None else value}")
    misses = [r for r in result.results if r.kind != "none" and (r.rank or 99) > result.k]
    for r in misses:
        click.echo(f"  miss: {r.qid} ({r.kind}) {_short(r.question, 90)}")


# ---- ingest


@click.command(name="ingest", cls=_Command)
@click.argument("path", required=False, metavar="[PATH|-]")
@click.option(
    "--inbox",
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False),
    help="Ingest every file of DIR unchanged for --quiet-minutes (for a scheduled job).",
)
@click.option(
    "--quiet-minutes",
    type=click.FloatRange(min=0),
    metavar="MINUTES",
    help="With --inbox: minutes a file must be unchanged (default settings.yaml, 10).",
)
@click.option(
    "--kind",
    type=click.Choice(["conversation", "document"]),
    help="What the source is (default: guessed from its lines).",
)
@click.option("--scope", help="The entries' audience; default from settings.yaml (shared).")
@_backend_options(llm_only=True)
@click.option(
    "--max-calls",
    type=click.IntRange(min=1),
    metavar="N",
    help="LLM calls per source at most (default settings.yaml ingest.max_calls, 20).",
)
@click.option("--dry-run", is_flag=True, help="Ask the LLM and check, but store and write nothing.")
@_json_option
@_wiki_options
def wiki_ingest(
    path: str | None,
    inbox: str | None,
    quiet_minutes: float | None,
    kind: str | None,
    scope: str | None,
    backend: str | None,
    model: str | None,
    max_calls: int | None,
    dry_run: bool,
    as_json: bool,
    wiki_path: str | None,
    reader: str | None,
) -> None:
    """Compile a conversation or document into cited entries (raw source kept in raw/).

    The source is stored as raw/<sha256>.<ext> and logged; the LLM proposes decisions (with
    their alternatives), incidents, findings and reflections, each citing lines of the source
    with a verbatim quote that must be found there; updates supersede. Ingesting the same bytes
    again does nothing; a conversation that grew is read from its new part. Needs an LLM backend.

    Example usage:

    \b
        llm-wiki ingest chat-2026-04-14.txt --backend anthropic
        cat notes.md | llm-wiki ingest - --kind document --dry-run --json
        llm-wiki ingest --inbox ~/llm-wiki-inbox --quiet-minutes 10
    """
    if (path is None) == (inbox is None):
        raise InvalidInput("give either PATH (or - for stdin) or --inbox DIR.")
    if quiet_minutes is not None and inbox is None:
        raise InvalidInput("--quiet-minutes goes with --inbox DIR.")
    session = _session(wiki_path, reader)
    options: dict[str, Any] = {
        "kind": kind,
        "scope": scope,
        "dry_run": dry_run,
        "max_calls": max_calls,
        "backend": backend,
        "model": model,
        "progress": _progress(as_json),
    }
    if inbox is not None:
        batch = session.ingest_inbox(inbox, quiet_minutes=quiet_minutes, **options)
        if as_json:
            _print_json(batch.to_dict())
        else:
            _print_inbox(batch)
        if batch.failed:
            sys.exit(1)
        return
    source = sys.stdin.buffer.read() if path == "-" else str(path)
    from llm_wiki.ingest import UnreadableReply  # deferred: start-up

    try:
        result = session.ingest(source, **options)
    except UnreadableReply as exc:  # --json: print what was spent, then exit 1 as others do
        if not as_json or exc.result is None:
            raise
        _print_json({**exc.result.to_dict(), "error": exc.message})
        click.echo(f"Error: {exc.message}", err=True)
        sys.exit(1)
    if as_json:
        _print_json(result.to_dict())
    else:
        _print_ingest(result)
    if result.llm_all_failed:
        click.echo(
            f"Error: every entry the LLM proposed failed the checks ({len(result.rejected)} "
            "rejected, none written); read the reasons above, or try a larger model.",
            err=True,
        )
        sys.exit(1)


def _print_inbox(batch: Any) -> None:
    for item in batch.items:
        if item.result is not None:
            failed = f" Failed: {item.detail}." if item.status == "failed" else ""
            click.echo(f"{item.name}: {_ingest_line(item.result)}{failed}")
        else:
            click.echo(f"{item.name}: {item.status}" + (f" ({item.detail})" if item.detail else ""))
    click.echo(f"{_n(len(batch.items), 'file')} in {batch.folder}.")


def _print_ingest(result: Any) -> None:
    click.echo(_ingest_line(result))
    verb = "Would write" if result.status == "dry-run" else "Wrote"
    for w in result.written:
        again = "" if w.created else " (already recorded)"
        click.echo(f"  {verb.lower()} {w.id}{again}  {w.type}: {_short(w.summary, 90)}")
        if w.supersedes:
            click.echo(f"    supersedes {', '.join(w.supersedes)}")
    for r in result.rejected:
        click.echo(f"  rejected: {_short(r.summary or '(no summary)', 80)}")
        for p in r.problems:
            click.echo(f"    {p.kind}: {p.detail}")


def _ingest_line(result: Any) -> str:
    """One line saying what an ingest did."""
    if result.status == "unchanged":
        when = f" on {result.ingested_at}" if result.ingested_at else ""
        return f"Nothing new: {result.raw} was already ingested into scope {result.scope}{when}."
    lines = f"lines {result.first_line}-{result.last_line}"
    if result.previous:
        lines += f", new since {result.previous}"
    head = "Dry run, nothing stored" if result.status == "dry-run" else f"Stored {result.raw}"
    return (
        f"{head} ({result.kind}, {lines}; {_n(result.calls, 'LLM call')}): "
        f"{_n(len(result.written), 'entry', 'entries')} "
        f"{'would be ' if result.status == 'dry-run' else ''}written, "
        f"{_n(len(result.rejected), 'proposal')} rejected, "
        f"{_n(result.quotes_checked, 'quote')} checked."
    )


# ---- brief


@click.command(name="brief", cls=_Command)
@click.option(
    "--days",
    type=click.IntRange(min=1),
    help="How many days back, today included (default settings.yaml brief.days, 7).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write the briefing (or its --json) to FILE instead of printing it.",
)
@click.option(
    "--save",
    is_flag=True,
    help="Write it to briefings/YYYY-MM-DD.md in the wiki (the daily job); with walls, one "
    "per scope: briefings/<scope>/YYYY-MM-DD.md.",
)
@_backend_options("The backend for the narrative")
@_json_option
@_wiki_options
def wiki_brief(
    days: int | None,
    out: str | None,
    save: bool,
    backend: str | None,
    model: str | None,
    as_json: bool,
    wiki_path: str | None,
    reader: str | None,
) -> None:
    """The daily briefing: what was recorded, superseded, still open, and what it cost.

    Counts; new entries by domain and type; what was superseded and by what; open incidents;
    new decisions with the alternatives they rejected; consolidator failures; LLM calls and
    tokens. With an LLM backend, a short "what changed" narrative whose every statement cites
    entries (dropped, and said so, if a citation fails its checks). Exits 1 when the backend is
    unusable or fails.

    Example usage:

        llm-wiki brief
        llm-wiki brief --days 1 --json
        llm-wiki brief --save
        llm-wiki brief --out ~/Desktop/briefing.md
    """
    if save and out is not None:
        raise InvalidInput("give --save or --out, not both.")
    session = _session(wiki_path, reader)
    if save:
        saved = session.save_briefings(days=days, backend=backend, model=model)
        if as_json:
            _print_json(saved.to_dict())
        else:
            for item in saved.saved:
                click.echo(f"Wrote {item.path}")
        errors = [_brief_failure(s.briefing) for s in saved.saved]
        errors = [e for e in errors if e]
    else:
        result = session.brief(days=days, backend=backend, model=model)
        text = (
            json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
            if as_json
            else result.markdown()
        )
        if out is None or out == "-":
            click.echo(text, nl=False)
        else:
            from pathlib import Path  # deferred: pathlib is not loaded for --help

            from llm_wiki.files import atomic_write  # deferred: start-up

            atomic_write(Path(out).expanduser(), text)
            _note(f"Wrote {out}")
        errors = [e for e in [_brief_failure(result)] if e]
    if errors:
        raise WikiError(f"{errors[0]}; the briefing says so and has no narrative.")


def _brief_failure(briefing: Any) -> str:
    """Why the LLM's narrative could not be used ("" when it could, or was not asked for)."""
    if briefing.error:
        return str(briefing.error)
    return str(briefing.narrative.note) if briefing.llm_all_failed else ""
