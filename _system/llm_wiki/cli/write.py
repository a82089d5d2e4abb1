"""`llm-wiki write`: its options, and the entry it records."""

from __future__ import annotations

from typing import Any

import click

from llm_wiki.cli import (
    _collector_held,
    _Command,
    _json_option,
    _note,
    _print_json,
    _read_input,
    _session,
    _wiki_options,
)
from llm_wiki.errors import InvalidInput


class _InputFile(click.ParamType):
    """``click.Path(dir_okay=False, allow_dash=True)``: the same checks, messages and
    completion, without the gettext lookup click.Path makes for its name (see cli._Verbosity)."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import os  # deferred: cheap, kept beside its one use
        import stat  # deferred: as above

        if value == "-":
            return value
        try:
            st = os.stat(value)
        except OSError:
            return value
        shown = click.format_filename(value)
        if stat.S_ISDIR(st.st_mode):
            self.fail(f"File {shown!r} is a directory.", param, ctx)
        if not os.access(value, os.R_OK):
            self.fail(f"File {shown!r} is not readable.", param, ctx)
        return value

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> Any:
        from click.shell_completion import CompletionItem  # deferred: completion only

        return [CompletionItem(incomplete, type="file")]


_INPUT_FILE = _InputFile()

# --------------------------------------------------------------------------- write


@click.command(name="write", cls=_Command)
@click.option(
    "--type",
    "type_",
    metavar="TYPE",
    help="decision | incident | synthesis | reflection (schema.md).",
)
@click.option("--domain", help="One area, e.g. platform (lowercase, digits, hyphens).")
@click.option("--summary", help="What happened or was decided, in one sentence.")
@click.option("--tag", multiple=True, help="A tag (repeatable).")
@click.option("--actor", multiple=True, help="Who took part (repeatable).")
@click.option(
    "--supersedes", multiple=True, metavar="ID", help="An entry this one replaces (repeatable)."
)
@click.option(
    "--resolves",
    multiple=True,
    metavar="ID",
    help="An incident this entry resolves, which closes it (repeatable).",
)
@click.option(
    "--alt",
    multiple=True,
    metavar='"ID: REASON"',
    help="An alternative that was rejected, and why (repeatable).",
)
@click.option("--alias", multiple=True, help="Another name for it, any language (repeatable).")
@click.option("--question", multiple=True, help="A question this entry answers (repeatable).")
@click.option(
    "--source",
    multiple=True,
    help="What it rests on: an entry id, raw/<sha256>.<ext>#L1-L9, or kind:name.",
)
@click.option("--scope", help="Its audience; default from settings.yaml (shared).")
@click.option("--status", help="active (default) | proposed | rejected | deprecated.")
@click.option("--origin", help="authored (default) | imported | ingested | consolidated | answer.")
@click.option("--date", help="YYYY-MM-DD; default today.")
@click.option("--id", "entry_id", help="An explicit id instead of a minted one.")
@click.option("--body", help="The markdown body.")
@click.option(
    "--body-file",
    type=_INPUT_FILE,
    help="Read the body from a file (- for stdin).",
)
@click.option(
    "--from",
    "from_file",
    type=_INPUT_FILE,
    help="An entry as markdown with frontmatter, YAML or JSON (- for stdin); flags override its fields.",
)
@click.option("--dry-run", is_flag=True, help="Validate and print the entry; write nothing.")
@_json_option
@_wiki_options
@_collector_held
def entry_write(
    type_: str | None,
    domain: str | None,
    summary: str | None,
    tag: tuple[str, ...],
    actor: tuple[str, ...],
    supersedes: tuple[str, ...],
    resolves: tuple[str, ...],
    alt: tuple[str, ...],
    alias: tuple[str, ...],
    question: tuple[str, ...],
    source: tuple[str, ...],
    scope: str | None,
    status: str | None,
    origin: str | None,
    date: str | None,
    entry_id: str | None,
    body: str | None,
    body_file: str | None,
    from_file: str | None,
    dry_run: bool,
    as_json: bool,
    wiki_path: str | None,
    reader: str | None,
) -> None:
    """Record a new entry. Entries are never edited: to change one, supersede it.

    Example usage:

        llm-wiki write --type decision --domain platform --tag database \\
            --summary "Use Postgres for the ledger" \\
            --alt "mysql: weaker JSON support" --alt "dynamodb: no joins" \\
            --body "Context and consequences..."
        llm-wiki write --from entry.md --json
    """
    from llm_wiki.entries import load_draft  # deferred: start-up

    if body is not None and body_file is not None:
        raise InvalidInput("give --body or --body-file, not both.")
    session = _session(wiki_path, reader)
    schema = session.wiki.schema
    base: dict[str, Any] = {}
    if from_file is not None:
        text = _read_input(from_file, "--from", schema.max_input_bytes)
        base = load_draft(text, f"--from {from_file}", limits=schema.yaml_limits)
        if entry_id is None and base.get("id"):
            entry_id = str(base["id"])
    if body_file is not None:
        body = _read_input(body_file, "--body-file", schema.max_input_bytes)
    result = session.write(
        base,
        type=type_,
        domain=domain,
        summary=summary,
        tags=tag,
        actors=actor,
        supersedes=supersedes,
        resolves=resolves,
        alternatives=alt,
        aliases=alias,
        questions=question,
        sources=source,
        scope=scope,
        status=status,
        origin=origin,
        date=date,
        body=body,
        id=entry_id,
        dry_run=dry_run,
    )
    if as_json:
        _print_json(result.to_dict())
    elif dry_run:
        click.echo(result.text, nl=False)
        _note(f"(dry run: would write {result.path})")
    elif result.created:
        click.echo(f"Recorded {result.id}")
        click.echo(f"  {result.path}")
    else:
        click.echo(f"Already recorded {result.id} (identical content); nothing written.")
        click.echo(f"  {result.path}")
