"""`llm-wiki query`: an answer from the archive, with the entries it rests on (its own module, so
that a query loads none of the other commands' options)."""

from __future__ import annotations

import sys
from typing import Any

import click

from llm_wiki.cli import (
    _backend_options,
    _Command,
    _json_option,
    _note,
    _print_json,
    _session,
    _short,
    _wiki_options,
)

# --------------------------------------------------------------------------- query


@click.command(name="query", cls=_Command)
@click.argument("question")
@click.option(
    "--k", type=int, default=None, help="Entries the LLM may open (settings: query.k, 3)."
)
@click.option(
    "--budget",
    type=int,
    default=None,
    help="Token budget of each prompt (settings: query.budget_tokens, 8000).",
)
@_backend_options()
@click.option(
    "--file-back",
    is_flag=True,
    help="Record a passing answer as a synthesis entry (LLM backends only).",
)
@_json_option
@_wiki_options
def wiki_query(
    question: str,
    k: int | None,
    budget: int | None,
    backend: str | None,
    model: str | None,
    file_back: bool,
    as_json: bool,
    wiki_path: str | None,
    reader: str | None,
) -> None:
    """Answer a question from the archive, citing the entries it rests on.

    The LLM reads the index lines (prefiltered when they exceed the budget), opens at most --k
    entries (and the entries that replaced them), and answers; citations are checked against
    what was opened. Offline, the best-matching entries' summaries are quoted.

    Example usage:

    \b
        llm-wiki query "Which database holds the ledger now, and why?"
        llm-wiki query "Why SQS?" --backend anthropic --json
        llm-wiki query "How do we deploy?" --backend claude-cli --file-back
    """
    answer = _session(wiki_path, reader).query(
        question, k=k, budget=budget, file_back=file_back, backend=backend, model=model
    )
    if answer.filed:
        _note(f"Filed back as {answer.filed}")
    elif answer.filed_note:
        _note(answer.filed_note)
    if as_json:
        _print_json(answer.to_dict())
    else:
        _print_answer(answer)
    if answer.llm_all_failed:  # printed what it could; no reply of the LLM's was usable
        why = f"; its answer was not used: {answer.rejected}" if answer.rejected else ""
        click.echo(
            f"Error: no reply of the LLM's was usable (its pick named no entry it was shown{why}); "
            "the answer is extractive. Try a larger model, or --backend offline.",
            err=True,
        )
        sys.exit(1)


PICKED_BY = {
    "llm": "the LLM",
    "ranker": "the ranker",
    "none": "nothing (no entry was opened)",
}


def _print_answer(answer: Any) -> None:
    click.echo(answer.answer)
    if answer.backend != "offline" or answer.picked_by != "ranker":
        note = PICKED_BY.get(answer.picked_by, answer.picked_by)
        if answer.picked_by == "ranker" and answer.backend != "offline":
            note += " (the LLM's pick was not usable)"
        click.echo(f"\nPicked by: {note}.")
    if answer.rejected:
        click.echo(f"The LLM's answer was not used: {answer.rejected}.")
    if answer.flagged:
        click.echo(
            "\nWarning: cited but not among the opened entries (unchecked): "
            + ", ".join(answer.flagged)
        )
    sources = [c.source for c in answer.cited if c.source is not None]
    if sources:
        click.echo("\nSources:")
        for source in sources:
            row = source.row
            mark = "" if row.effective_status == "active" else f" ({row.effective_status})"
            click.echo(f"  {row.id}  {row.date}{mark}")
            click.echo(f"    {_short(row.summary)}")
            click.echo(f"    {row.path}")
