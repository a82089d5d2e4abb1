"""What a user wrote is what is stored: text fields keep the exact scalar YAML or JSON held, or
the input is refused with one line naming the field. Never a silent change (issue 13, item 2)."""

from __future__ import annotations

import json

import pytest

from conftest import write_args


def _write_from(cli, tmp_path, text: str, code: int = 0, name: str = "in.md"):
    path = tmp_path / name
    path.write_text(text)
    return cli("write", "--from", str(path), "--json", code=code)


FRONT = "---\ntype: incident\ndomain: ops\nsummary: Disk filled up\n{extra}\n---\nbody\n"


def test_yaml_tags_keep_the_text_written(cli, tmp_path):
    out = _write_from(cli, tmp_path, FRONT.format(extra="tags: [0x1F, 1.10, 010, 12:30, yes, ~x]"))
    entry_id = json.loads(out.stdout)["id"]
    shown = cli.json("show", entry_id)
    assert shown["tags"] == ["0x1F", "1.10", "010", "12:30", "yes", "~x"]


@pytest.mark.parametrize(
    "field, written",
    [
        ("summary", "1.10"),
        ("summary", "0x1F"),
        ("summary", "12:30"),
        ("summary", "yes"),
        ("domain", "010"),
        ("summary", "2026-05-02"),
        ("summary", "1e3"),
    ],
)
def test_yaml_scalar_fields_keep_the_text_written(cli, tmp_path, field, written):
    fields = {"type": "incident", "domain": "ops", "summary": "Disk filled up", field: written}
    text = "---\n" + "".join(f"{k}: {v}\n" for k, v in fields.items()) + "---\n"
    entry_id = json.loads(_write_from(cli, tmp_path, text).stdout)["id"]
    assert cli.json("show", entry_id)[field] == written


def test_json_numbers_keep_the_text_written(cli, tmp_path):
    doc = '{"type": "incident", "domain": "ops", "summary": "Disk", "tags": [1.10, 010e1, 7]}'
    doc = doc.replace("010e1", "10e1")
    entry_id = json.loads(_write_from(cli, tmp_path, doc, name="in.json").stdout)["id"]
    assert cli.json("show", entry_id)["tags"] == ["1.10", "10e1", "7"]


def test_extra_fields_keep_numbers_only_when_they_read_back_the_same(cli, wiki_path, tmp_path):
    from llm_wiki.entries import parse_entry

    extra = "priority: 3\nratio: 1.5\nticket: 010\nversion: 1.10\nseen: 2026-5-2\nok: true"
    entry_id = json.loads(_write_from(cli, tmp_path, FRONT.format(extra=extra)).stdout)["id"]
    path = next((wiki_path / "entries").rglob(f"{entry_id}.md"))
    shown = dict(parse_entry(path.read_text()).extra)
    assert shown["priority"] == 3 and shown["ratio"] == 1.5 and shown["ok"] is True
    assert shown["ticket"] == "010" and shown["version"] == "1.10" and shown["seen"] == "2026-5-2"


@pytest.mark.parametrize(
    "extra, words",
    [
        ("date: 2026-13-01", ["date", "2026-13-01"]),
        ("summary: again", ["summary", "twice"]),
        ("tags: [a]\ntags: [b]", ["tags", "twice"]),
    ],
)
def test_yaml_that_cannot_be_kept_is_refused_naming_the_field(
    cli, wiki_path, tmp_path, extra, words
):
    result = _write_from(cli, tmp_path, FRONT.format(extra=extra), code=2)
    assert result.stderr.startswith("Error: ") and len(result.stderr.splitlines()) == 1
    for word in words:
        assert word in result.stderr
    assert not list((wiki_path / "entries").rglob("*.md"))


def test_flags_keep_the_text_written(cli):
    entry_id = cli.json(*write_args("1.10", tag=["0x1F", "010"]))["id"]
    shown = cli.json("show", entry_id)
    assert shown["summary"] == "1.10" and shown["tags"] == ["0x1F", "010"]


def test_written_files_read_back_to_the_same_text(cli, wiki_path, tmp_path):
    from llm_wiki.entries import parse_entry

    extra = "tags: [0x1F, 1.10, 'quoted', \"dq\", null-ish]\nactors: [010]"
    entry_id = json.loads(_write_from(cli, tmp_path, FRONT.format(extra=extra)).stdout)["id"]
    path = next((wiki_path / "entries").rglob(f"{entry_id}.md"))
    entry = parse_entry(path.read_text())
    assert entry.tags == ("0x1F", "1.10", "quoted", "dq", "null-ish")
    assert entry.actors == ("010",)
