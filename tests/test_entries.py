"""The entry model: parse/dump round trip, ids, schema validation."""

from __future__ import annotations

import dataclasses
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SRC, fewer
from llm_wiki.entries import (
    Alternative,
    Entry,
    Relation,
    candidate_ids,
    dump_entry,
    entry_from_mapping,
    parse_entry,
)
from llm_wiki.errors import InvalidInput
from llm_wiki.schema import check_entry, parse_schema
from llm_wiki.slugs import slugify

words = st.text(
    alphabet=string.ascii_lowercase + string.digits + "-", min_size=1, max_size=20
).filter(lambda s: s.strip("-"))
anytext = st.one_of(
    st.text(min_size=1, max_size=80),
    st.sampled_from(
        [
            "yes",
            "No",
            "null",
            "~",
            "0x1F",
            "1e3",
            "2026-05-02",
            "a: b",
            "x #y",
            "-a",
            "[a]",
            "{b}",
            "'q'",
            '"q"',
            "tab\there",
            "line\nbreak",
            "\x85\u2028",
            "12:30",
            "café",
            "ok ",
            "@at",
            "%p",
            "&a",
            "*b",
            "!c",
            "?d",
            "|e",
            ">f",
            "a,b",
        ]
    ),
).filter(lambda s: s.strip())
names = st.from_regex(r"[a-z0-9](?:[a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)


@st.composite
def entries(draw):
    alts = draw(st.lists(st.tuples(words, anytext), max_size=3))
    data = {
        "id": draw(st.one_of(st.just(""), names)),
        "type": draw(st.sampled_from(["decision", "incident", "synthesis", "reflection"])),
        "date": draw(st.dates()).isoformat(),
        "summary": draw(anytext),
        "domain": draw(names),
        "status": draw(st.sampled_from(["active", "proposed", "rejected", "deprecated"])),
        "scope": draw(names),
        "origin": draw(
            st.sampled_from(["authored", "imported", "ingested", "consolidated", "answer"])
        ),
        "actors": draw(st.lists(anytext, max_size=3)),
        "tags": draw(st.lists(words, max_size=4)),
        "supersedes": draw(st.lists(names, max_size=2)),
        "alternatives_considered": [{"id": a, "rejected_because": r} for a, r in alts],
        "aliases": draw(st.lists(anytext, max_size=3)),
        "questions": draw(st.lists(anytext, max_size=2)),
        "sources": draw(st.lists(anytext, max_size=2)),
        "body": draw(st.text(max_size=300)),
    }
    if draw(st.booleans()):
        data["fingerprint"] = draw(words)
    return entry_from_mapping(data)


@settings(max_examples=fewer(500), deadline=None)
@given(entries())
def test_parse_dump_round_trip(entry):
    text = dump_entry(entry)
    again = parse_entry(text)
    assert again == entry
    assert dump_entry(again) == text


# The fast path for the tool's own frontmatter layout (entries.fast_frontmatter) against PyYAML.
# Text that dump_entry could write, plus characters that matter to YAML or to the fast reader.
tricky = st.text(
    alphabet=st.sampled_from(
        list("ab Z_09(/.-:#,[]{}\"'\\!&*?|>%@`~=;<^$+\t\n\r\x00\x85\u2028\x7fé")
    ),
    min_size=0,
    max_size=12,
)


def _yaml_mapping(head):
    """What the YAML path reads (dates as text, as entry_from_mapping turns them), or the error."""
    import datetime as dt

    from llm_wiki.entries import load_yaml

    try:
        data = load_yaml(head, "t")
    except InvalidInput as exc:
        return ("error", exc.message)
    except ValueError as exc:  # PyYAML's constructor on a date like 2026-02-30
        return ("error", str(exc))
    if isinstance(data, dict) and isinstance(data.get("date"), dt.date):
        data["date"] = data["date"].isoformat()
    return data


@st.composite
def tricky_entries(draw):
    entry = draw(entries())
    fields = {}
    for key in ("summary", "domain", "scope", "id"):
        if draw(st.booleans()):
            fields[key] = draw(tricky)
    for key in ("tags", "actors", "aliases", "sources"):
        if draw(st.booleans()):
            fields[key] = tuple(draw(st.lists(tricky, max_size=3)))
    if draw(st.booleans()):
        fields["alternatives_considered"] = tuple(
            Alternative(draw(tricky), draw(tricky)) for _ in range(draw(st.integers(0, 2)))
        )
    if draw(st.booleans()):  # the optional fields: written only when they hold something
        fields["date_source"] = draw(tricky)
    if draw(st.booleans()):
        fields["roles"] = tuple(
            (role, tuple(draw(st.lists(tricky, max_size=2))))
            for role in draw(st.lists(tricky, max_size=3, unique=True))
        )
    if draw(st.booleans()):
        fields["relates"] = tuple(
            Relation(draw(tricky), draw(tricky)) for _ in range(draw(st.integers(0, 2)))
        )
    return dataclasses.replace(entry, **fields)


@settings(max_examples=fewer(1500), deadline=None)
@given(st.one_of(entries(), tricky_entries()))
def test_fast_frontmatter_reads_what_dump_entry_writes_as_yaml_does(entry):
    from llm_wiki.entries import fast_frontmatter, split_frontmatter

    head, _ = split_frontmatter(dump_entry(entry))
    fast = fast_frontmatter(head)
    if entry.extra:
        assert fast is None  # extra fields: always YAML
        return
    assert fast is not None  # the tool's own layout never needs YAML
    assert fast == _yaml_mapping(head)


@pytest.mark.parametrize("role", ["': [", '": [', 'a\\": [', "x: [y]"])
def test_fast_frontmatter_reads_a_quoted_role_that_holds_its_own_separator(role):
    from llm_wiki.entries import fast_frontmatter, split_frontmatter

    entry = Entry(
        id="2026-01-02-use-madr-4-1a2b",
        type="decision",
        date="2026-01-02",
        summary="Use MADR 4",
        domain="docs",
        roles=((role, ("alice",)),),
    )
    head, _ = split_frontmatter(dump_entry(entry))
    fast = fast_frontmatter(head)
    assert fast is not None and fast == _yaml_mapping(head)
    assert fast["roles"] == {role: ["alice"]}


@st.composite
def mangled_heads(draw):
    """A dumped head with a few characters inserted, deleted or replaced anywhere in it."""
    entry = draw(st.one_of(entries(), tricky_entries()))
    head, _ = split_frontmatter_of(dump_entry(dataclasses.replace(entry, extra=())))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(head)))
        cut = draw(st.integers(0, 2))
        head = head[:at] + draw(tricky) + head[at + cut :]
    return head


def split_frontmatter_of(text):
    from llm_wiki.entries import split_frontmatter

    return split_frontmatter(text)


@settings(max_examples=fewer(3000), deadline=None)
@given(mangled_heads())
def test_fast_frontmatter_agrees_with_yaml_or_steps_aside(head):
    """On any text, the fast path either gives exactly what YAML gives or returns None."""
    from llm_wiki.entries import fast_frontmatter

    fast = fast_frontmatter(head)
    if fast is not None:
        assert fast == _yaml_mapping(head)


def test_fast_frontmatter_steps_aside_for_other_layouts():
    from llm_wiki.entries import fast_frontmatter, split_frontmatter

    head, _ = split_frontmatter(
        dump_entry(Entry(id="x", type="decision", date="2026-05-02", summary="s", domain="d"))
    )
    assert fast_frontmatter(head) is not None
    for other in (
        head.replace("summary: s", "summary: s # a comment"),
        head.replace("summary: s", "summary: 's'"),
        head.replace("summary: s", "summary: 12"),
        head.replace("summary: s", "summary: yes"),
        head.replace("summary: s\n", "summary: s\nextra: 1\n"),
        head.replace("domain: d\n", "").replace("id: x\n", "id: x\ndomain: d\n"),
        head.replace("\n", "\r\n"),
        head.replace("tags: []", "tags:\n- a"),
    ):
        assert fast_frontmatter(other) is None, other


def test_dump_is_stable_and_readable():
    entry = entry_from_mapping(
        {
            "id": "2026-05-02-x-3f2a",
            "type": "decision",
            "date": "2026-05-02",
            "summary": "Compacted the fleet",
            "domain": "meta",
            "tags": ["a", "b"],
            "alternatives_considered": [{"id": "keep-all", "rejected_because": "noise"}],
        }
    )
    text = dump_entry(entry)
    assert text.splitlines()[:4] == [
        "---",
        "id: 2026-05-02-x-3f2a",
        "type: decision",
        "date: 2026-05-02",
    ]
    assert "tags: [a, b]" in text
    assert "- id: keep-all\n  rejected_because: noise" in text
    keys = [line.split(":")[0] for line in text.splitlines()[1:] if line and line[0].isalpha()]
    assert keys == [
        "id",
        "type",
        "date",
        "actors",
        "tags",
        "domain",
        "summary",
        "status",
        "supersedes",
        "alternatives_considered",
        "aliases",
        "questions",
        "scope",
        "origin",
        "sources",
    ]


def test_yaml_dates_are_normalised_at_the_boundary():
    entry = parse_entry(
        "---\nid: x\ntype: incident\ndate: 2026-01-02\nsummary: s\ndomain: d\n---\n"
    )
    assert entry.date == "2026-01-02"
    with pytest.raises(InvalidInput, match="not a date and time"):
        parse_entry("---\nid: x\ndate: 2026-01-02 10:00:00\n---\n")


@pytest.mark.parametrize(
    "summary, slug",
    [
        ("Use Postgres for the ledger!", "use-postgres-for-the-ledger"),
        ("Flottenverkleinerung: Größe", "flottenverkleinerung-grosse"),
        ("日本語だけ", "entry"),
        ("a" * 80, "a" * 80),  # one word longer than the limit stays whole: half a word misleads
        ("word " * 30, "-".join(["word"] * 12)),
        ("Don't use Nygard's template", "dont-use-nygards-template"),
        ("Keep the ledger in Postgres...", "keep-the-ledger-in-postgres"),
    ],
)
def test_slugify_never_ends_mid_word(summary, slug):
    assert slugify(summary) == slug
    assert len(slugify(summary)) <= max(60, len(summary.split()[0]))


def test_ids_depend_on_content_and_extend_on_collision():
    base = entry_from_mapping(
        {"type": "incident", "date": "2026-05-02", "summary": "Disk full", "domain": "ops"}
    )
    other = dataclasses.replace(base, body="different")
    first = list(candidate_ids(base))
    assert first[0].startswith("2026-05-02-disk-full-") and len(first[0].rsplit("-", 1)[1]) == 4
    assert first[1].startswith(first[0])  # one more hex digit
    assert first == list(candidate_ids(base))  # deterministic
    assert next(candidate_ids(other)) != first[0]
    scoped = dataclasses.replace(base, scope="hr")
    assert next(candidate_ids(scoped)) != first[0]  # two scopes never mint the same id


SCHEMA = parse_schema((SRC / "llm_wiki/templates/wiki/schema.md").read_text())


def test_schema_rules():
    decision = Entry(id="", type="decision", date="2026-05-02", summary="s", domain="d")
    assert [p.field for p in check_entry(decision, SCHEMA)] == ["alternatives_considered"]
    imported = dataclasses.replace(decision, origin="imported")
    assert check_entry(imported, SCHEMA) == []
    ok = dataclasses.replace(decision, alternatives_considered=(Alternative("x", "y"),))
    assert check_entry(ok, SCHEMA) == []
    bad = dataclasses.replace(ok, type="memo", status="superseded", domain="Big Domain")
    fields = {p.field for p in check_entry(bad, SCHEMA)}
    assert fields == {"type", "status", "domain"}


def test_date_source_roles_and_relates_round_trip_in_the_tools_own_layout():
    from llm_wiki.entries import Relation
    from llm_wiki.wiki import TEMPLATES

    entry = Entry(
        id="2026-01-02-use-madr-4-1a2b",
        type="decision",
        date="2026-01-02",
        summary="Use MADR 4",
        domain="docs",
        origin="imported",
        actors=("Oliver Kopp", "Olaf Zimmermann", "Ann"),
        roles=(("decider", ("Oliver Kopp", "Olaf Zimmermann")), ("informed", ("Ann",))),
        date_source="git",
        relates=(Relation("2025-01-01-use-madr-3-9f9f", "refines"),),
    )
    text = dump_entry(entry)
    assert text.splitlines()[4:9] == [
        "date_source: git",
        "actors: [Oliver Kopp, Olaf Zimmermann, Ann]",
        "roles:",
        "  decider: [Oliver Kopp, Olaf Zimmermann]",
        "  informed: [Ann]",
    ]
    assert "relates:\n- id: 2025-01-01-use-madr-3-9f9f\n  kind: refines\n" in text
    assert parse_entry(text) == entry
    assert entry.role_of("Ann") == "informed" and entry.role_of("nobody") == ""
    schema = parse_schema((TEMPLATES / "wiki" / "schema.md").read_text())
    assert check_entry(entry, schema) == []
    bad = dataclasses.replace(
        entry,
        date_source="guess",
        roles=(("approver", ("Zed",)),),
        relates=(Relation("x", "likes"),),
    )
    messages = " | ".join(p.message for p in check_entry(bad, schema))
    assert "date_source 'guess' is not one of record, git, file-name, mtime" in messages
    assert "role 'approver' is not one of decider, consulted, informed" in messages
    assert "'Zed' (approver) is not among the actors" in messages
    assert "relates kind 'likes' is not one of" in messages


def test_an_entry_without_the_new_fields_dumps_as_it_always_did():
    text = (
        "---\nid: 2026-04-02-ledger-postgres\ntype: decision\ndate: 2026-04-02\nactors: []\n"
        "tags: []\ndomain: ledger\nsummary: Keep the ledger in Postgres\nstatus: active\n"
        "supersedes: []\nalternatives_considered: []\naliases: []\nquestions: []\n"
        "scope: shared\norigin: authored\nsources: []\n---\nBody.\n"
    )
    assert dump_entry(parse_entry(text)) == text
