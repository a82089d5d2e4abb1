"""A mock LLM that answers consolidation (and briefing) prompts the way a careful model would.

It reads the entries (or notes) it was shown, groups them by topic (an entry's first tag), and
writes statements that reuse the entries' own wording and cite only ids it was shown. Usable
in-process (``MockBackend.enqueue(respond, ...)``) and from the CLI (``LLM_WIKI_MOCK_FILE`` =
this file: it defines ``respond(prompt, purpose)`` and imports only the standard library).
"""

from __future__ import annotations

import json
import re

ENTRY_RE = re.compile(
    r"^\[(?P<id>[a-z0-9][a-z0-9-]*)\] (?P<date>\d{4}-\d\d-\d\d) (?P<type>[a-z-]+)"
    r"(?: \([a-z]+\))?(?P<tags>(?: #\S+)*)\nSummary: (?P<summary>.*)$",
    re.M,
)
NOTE_RE = re.compile(
    r"^- (?:\((?P<topic>[^)]*)\) )?(?P<text>.*) \[(?P<cites>[a-z0-9, -]+)\]$", re.M
)
DOMAIN_RE = re.compile(r"Domain: (?P<domain>\S+) \(scope: (?P<scope>[^)]+)\)")
PER_STATEMENT = 3  # entries merged into one statement


def respond(prompt: str, purpose: str) -> str:
    if purpose == "consolidate-verify":
        return json.dumps({"unsupported": []})
    if purpose == "brief":  # the briefing's "what changed": statements about the new entries
        said = [{"text": n["text"], "cites": n["cites"]} for n in notes(prompt)]
        return json.dumps({"statements": said[:8]})
    # A repair prompt starts with the original prompt: answer that one, correctly this time.
    prompt = prompt.split("\nYour previous reply was:", 1)[0]
    domain = DOMAIN_RE.search(prompt)
    name = domain.group("domain") if domain else "this"
    if "Notes taken from the parts" in prompt:
        return json.dumps(combine(prompt, name))
    statements = notes(prompt)
    if re.search(r"part \d+ of \d+", prompt):
        return json.dumps({"statements": statements[:12]})
    return json.dumps(final(name, statements))


def shown_entries(prompt: str) -> list[dict]:
    """The entries of the prompt (not the previous synthesis, which is context)."""
    head = prompt.split("current synthesis, for context only", 1)[0]
    return [m.groupdict() for m in ENTRY_RE.finditer(head)]


def notes(prompt: str) -> list[dict]:
    groups: dict[str, list[dict]] = {}
    for entry in shown_entries(prompt):
        tags = entry["tags"].split()
        groups.setdefault(tags[0].lstrip("#") if tags else "general", []).append(entry)
    out = []
    for topic, entries in groups.items():
        for i in range(0, len(entries), PER_STATEMENT):
            part = entries[i : i + PER_STATEMENT]
            text = "; ".join(e["summary"].rstrip(".") for e in part) + "."
            out.append({"topic": topic, "text": text, "cites": [e["id"] for e in part]})
    return out


def combine(prompt: str, domain: str) -> dict:
    head = prompt.split("current synthesis, for context only", 1)[0]
    by_topic: dict[str, list[dict]] = {}
    for m in NOTE_RE.finditer(head):
        cites = [c.strip() for c in m.group("cites").split(",") if c.strip()]
        by_topic.setdefault(m.group("topic") or "general", []).append(
            {"text": m.group("text"), "cites": cites}
        )
    for note in notes(prompt):  # entries shown whole, next to the notes
        by_topic.setdefault(note["topic"], []).append(note)
    statements = []
    for topic, items in by_topic.items():
        for i in range(0, len(items), 2):  # merge notes pairwise, as a model condenses
            pair = items[i : i + 2]
            text = " ".join(n["text"] for n in pair)
            cites = list(dict.fromkeys(c for n in pair for c in n["cites"]))
            statements.append({"topic": topic, "text": text, "cites": cites})
    return final(domain, statements[:60])


def final(domain: str, statements: list[dict]) -> dict:
    if not statements:
        return {"skip": "no entries worth synthesising"}
    return {
        "title": f"Where {domain} stands",
        "summary": f"The current decisions, incidents and lessons of the {domain} domain, by topic.",
        "statements": statements,
    }
