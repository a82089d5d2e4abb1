"""Prompt templates (jinja2 files in ``templates/prompts/``), how an entry is shown in a prompt
(:func:`entry_block`), and reading JSON out of replies; :func:`render_template` renders the
other file templates (briefing, plists, units).

Shared by every flow that asks an LLM something. jinja2 is imported only when a prompt is
rendered, so commands that never ask (``write``, ``list``, ``--help``) never load it.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from llm_wiki.entries import Entry

BODY_CHARS = 1500  # of an entry's body shown in a prompt


@functools.cache
def _environment() -> Any:
    import jinja2  # deferred: only the flows that ask an LLM render prompts

    from llm_wiki.wiki import TEMPLATES  # deferred: a Path (pathlib), which a query need not load

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES / "prompts")),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render_prompt(name: str, **context: Any) -> str:
    """Render ``templates/prompts/<name>``."""
    return str(_environment().get_template(name).render(**context)).strip() + "\n"


@functools.cache
def _files_environment() -> Any:
    import jinja2  # deferred: only the briefing and the schedule render files

    from llm_wiki.wiki import TEMPLATES  # deferred: a Path (pathlib), as above

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        # XML (launchd plists) is escaped; markdown and systemd units are written as given.
        autoescape=jinja2.select_autoescape(enabled_extensions=("plist.j2",), default=False),
    )


def render_template(name: str, **context: Any) -> str:
    """Render a file template, ``templates/<name>`` (briefing, plists, units), as written."""
    return str(_files_environment().get_template(name).render(**context))


def entry_block(entry: Entry) -> str:
    """How an entry is shown in a prompt: id, date, type, tags, summary, alternatives, body."""
    head = f"[{entry.id}] {entry.date} {entry.type}"
    if entry.status != "active":
        head += f" ({entry.status})"
    if entry.tags:
        head += " " + " ".join("#" + t.replace(" ", "-") for t in entry.tags)
    lines = [head, "Summary: " + " ".join(entry.summary.split())]
    if entry.alternatives_considered:
        lines.append(
            "Rejected: "
            + "; ".join(f"{a.id}: {a.rejected_because}" for a in entry.alternatives_considered)
        )
    body = entry.body.strip()
    if body:
        lines.append(body if len(body) <= BODY_CHARS else body[: BODY_CHARS - 1] + "…")
    return "\n".join(lines)


_FENCE_RE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n```\s*$", re.S)


def json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model's reply (bare, fenced, or with prose around it).

    Raises ValueError saying what is wrong, in words a repair prompt can pass back.
    """
    stripped = text.strip()
    fenced = _FENCE_RE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    start, end = stripped.find("{"), stripped.rfind("}")
    if start < 0 or end < start:
        raise ValueError("the reply holds no JSON object")
    try:
        data = json.loads(stripped[start : end + 1])
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"the reply is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(data, dict):
        raise ValueError("the reply must be a JSON object")
    return data
