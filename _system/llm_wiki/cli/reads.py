"""`llm-wiki show` and `llm-wiki list`: one entry, and a page of them."""

from __future__ import annotations

import click

from llm_wiki.cli import (
    _Command,
    _json_option,
    _print_json,
    _session,
    _short,
    _wiki_options,
)

# --------------------------------------------------------------------------- reads


@click.command(name="show", cls=_Command)
@click.argument("entry_id", metavar="ID")
@_json_option
@_wiki_options
def entry_show(entry_id: str, as_json: bool, wiki_path: str | None, reader: str | None) -> None:
    """Print one entry, with its derived status (superseded by ...).

    Example usage:

        llm-wiki show 2026-05-02-use-postgres-for-the-ledger-f685
    """
    shown = _session(wiki_path, reader).show(entry_id)
    if as_json:
        _print_json(shown.to_dict())
        return
    click.echo(shown.text, nl=not shown.text.endswith("\n"))
    notes = []
    if shown.row.superseded_by:
        notes.append("superseded by " + ", ".join(shown.row.superseded_by))
    if shown.row.archive:
        notes.append(f"archived in {shown.row.archive}")
    if notes:
        click.echo(f"\n[{'; '.join(notes)}]")


@click.command(name="list", cls=_Command)
@click.option("--type", "type_", help="Only this type.")
@click.option("--domain", help="Only this domain.")
@click.option("--tag", help="Only entries with this tag.")
@click.option("--actor", help="Only entries this person took part in.")
@click.option("--scope", help="Only this scope (of those you may read).")
@click.option("--since", metavar="YYYY-MM-DD", help="Dated on or after.")
@click.option("--until", metavar="YYYY-MM-DD", help="Dated on or before.")
@click.option(
    "--status",
    type=click.Choice(["active", "proposed", "rejected", "deprecated", "superseded", "all"]),
    default="all",
    show_default=True,
    help="Effective status (superseded is derived).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many."
)
@click.option("--offset", type=click.IntRange(min=0), default=0, help="Skip this many (paging).")
@_json_option
@_wiki_options
def entry_list(
    type_: str | None,
    domain: str | None,
    tag: str | None,
    actor: str | None,
    scope: str | None,
    since: str | None,
    until: str | None,
    status: str,
    limit: int,
    offset: int,
    as_json: bool,
    wiki_path: str | None,
    reader: str | None,
) -> None:
    """List entries, newest first.

    Example usage:

        llm-wiki list --domain platform --status active
        llm-wiki list --actor alice --since 2026-01-01 --json
    """
    page = _session(wiki_path, reader).list(
        type=type_,
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
    if as_json:
        _print_json(page.to_dict())
        return
    for row in page.rows:
        mark = "" if row.effective_status == "active" else f" ({row.effective_status})"
        click.echo(f"{row.date}  {row.type:<10} {row.id}{mark}")
        click.echo(f"            {_short(row.summary)}")
    if not page.rows:
        click.echo("No entries match.")
    elif page.total > offset + len(page.rows):
        rest = page.total - offset - len(page.rows)
        click.echo(f"… {rest} more (use --limit or --offset {offset + len(page.rows)})")
