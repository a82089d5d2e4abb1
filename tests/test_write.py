"""`llm-wiki write`: what it records, and every bad input refused with nothing written."""

from __future__ import annotations

import json
import os
import stat

import pytest

from conftest import write_args


def snapshot(root):
    """Every file under the wiki except local state, with its bytes."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(".llm-wiki/"):
            out[rel] = path.read_bytes()
    return out


def test_write_records_an_immutable_entry(cli, wiki_path, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02T10:00:00Z")
    out = cli.json(
        *write_args(tag=["database"], actor=["lucas"], alias=["Hauptbuch"], question=["Which DB?"])
    )
    assert set(out) >= {"id", "path", "sha256"}
    assert out["id"].startswith("2026-05-02-use-postgres-for-the-ledger-")
    path = wiki_path / out["path"]
    assert out["path"] == f"entries/2026/05/{out['id']}.md"
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    text = path.read_text()
    assert "alternatives_considered:\n- id: mysql\n  rejected_because: weaker JSON support" in text
    assert "aliases: [Hauptbuch]" in text
    log = (wiki_path / "log.md").read_text().splitlines()[-1]
    assert log.startswith("2026-05-02T10:00:00Z write " + out["id"] + " sha256=" + out["sha256"])
    import hashlib

    assert hashlib.sha256(path.read_bytes()).hexdigest() == out["sha256"]
    index = (wiki_path / "index" / "platform.md").read_text()
    assert out["id"] in index and "aka: Hauptbuch" in index and "Q: Which DB?" in index
    assert out["id"] in (wiki_path / "INDEX.md").read_text()


def test_identical_write_returns_the_existing_id(cli, wiki_path, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    first = cli.json(*write_args())
    before = snapshot(wiki_path)
    again = cli(*write_args())
    assert "already recorded" in again.stdout.lower() and first["id"] in again.stdout
    assert snapshot(wiki_path) == before
    other = cli.json(*write_args(body="different body"))
    assert other["id"] != first["id"]


def test_supersede_derives_status_and_never_touches_the_old_file(cli, wiki_path):
    old = cli.json(*write_args())
    old_bytes = (wiki_path / old["path"]).read_bytes()
    new = cli.json(*write_args("Move the ledger to CockroachDB", supersedes=old["id"]))
    assert (wiki_path / old["path"]).read_bytes() == old_bytes
    shown = cli.json("show", old["id"])
    assert shown["status"] == "superseded" and shown["superseded_by"] == [new["id"]]
    assert shown["written_status"] == "active"
    assert "superseded by " + new["id"] in cli("show", old["id"]).stdout
    listed = cli.json("list", "--status", "active")
    assert [e["id"] for e in listed["entries"]] == [new["id"]]
    line = [
        ln
        for ln in (wiki_path / "index/platform.md").read_text().splitlines()
        if old["id"] + "]" in ln
    ][0]
    assert "superseded by " + new["id"] in line


def test_write_from_markdown_yaml_json_and_stdin(cli, wiki_path, tmp_path):
    md = tmp_path / "e.md"
    md.write_text(
        "---\ntype: incident\ndomain: ops\nsummary: Disk filled up\ntags: [disk]\n---\nThe disk filled.\n"
    )
    a = cli.json("write", "--from", str(md))
    assert "The disk filled." in (wiki_path / a["path"]).read_text()
    y = tmp_path / "e.yaml"
    y.write_text("type: reflection\ndomain: ops\nsummary: Disks fill on Fridays\nbody: pattern\n")
    cli.json("write", "--from", str(y))
    j = json.dumps({"type": "incident", "domain": "ops", "summary": "Queue stalled", "tags": ["q"]})
    c = cli.json("write", "--from", "-", input=j)
    assert cli.json("show", c["id"])["tags"] == ["q"]
    # flags override the file
    d = cli.json("write", "--from", str(md), "--summary", "Disk filled up again")
    assert cli.json("show", d["id"])["summary"] == "Disk filled up again"


def test_dry_run_writes_nothing(cli, wiki_path):
    before = snapshot(wiki_path)
    result = cli(*write_args(), "--dry-run")
    assert result.stdout.startswith("---\nid: ")
    assert snapshot(wiki_path) == before


def test_explicit_id_and_taken_id(cli, wiki_path):
    cli("write", *write_args()[1:], "--id", "ledger-db")
    assert cli.json("show", "ledger-db")["summary"] == "Use Postgres for the ledger"
    before = snapshot(wiki_path)
    same = cli("write", *write_args()[1:], "--id", "ledger-db", code=2)
    different = cli("write", *write_args("Other")[1:], "--id", "ledger-db", code=2)
    assert same.stderr == different.stderr
    assert "already taken" in same.stderr
    assert snapshot(wiki_path) == before


BAD = [
    (["write", "--type", "memo", "--domain", "d", "--summary", "s"], "type 'memo' is not one of"),
    (["write", "--type", "incident", "--domain", "d"], "summary is required"),
    (["write", "--type", "incident", "--summary", "s"], "domain is required"),
    (["write", "--type", "decision", "--domain", "d", "--summary", "s"], "alternatives_considered"),
    (write_args(date="02/05/2026"), "not an ISO date"),
    (write_args(date="2026-02-30"), "not an ISO date"),
    (write_args(supersedes="2020-01-01-nothing-abcd"), "no such entry"),
    (write_args(id="Bad/Id"), "is not valid"),
    (write_args(id="../escape"), "is not valid"),
    (write_args(id="has space"), "is not valid"),
    (write_args(id="UPPER"), "is not valid"),
    # "$" matches before a final newline: it would name a file and tear the log.md line
    (write_args(id="ledger-db\n"), "is not valid"),
    (write_args(alt=False) + ["--alt", "no reason given"], "must look like 'ID: why"),
    (write_args(status="superseded"), "'superseded' is derived"),
    (write_args(domain="Not A Domain"), "lowercase letters"),
    (write_args(source="not a source!"), "is not an entry id"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[m for _, m in BAD])
def test_bad_input_is_refused_and_nothing_is_written(cli, wiki_path, args, message):
    before = snapshot(wiki_path)
    result = cli(*args, code=2)
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("Error: ")
    assert snapshot(wiki_path) == before


BAD_FILES = [
    ("---\ntype: incident\ndomain: d\nsummary: [unclosed\n---\n", "malformed YAML"),
    (b"---\ntype: incident\ndomain: d\nsummary: caf\xe9\n---\n", "not UTF-8"),
    ("---\ntype: incident\ndomain: d\nsummary: s\ntags: just-one\n---\n", "tags must be a list"),
    (
        "---\ntype: incident\ndomain: d\nsummary: s\nsupersedes: x\n---\n",
        "supersedes must be a list",
    ),
    ("---\ntype: incident\ndomain: d\nsummary: s\n", "not closed"),
    ("[1, 2]", "expected markdown with frontmatter"),
    ('{"type": "incident",', "malformed JSON"),
    # YAML types with no JSON form: the catalog cannot hold them (write crashed after linking)
    ("---\ntype: incident\ndomain: d\nsummary: s\nblob: !!binary aGVsbG8=\n---\n", "'blob' holds"),
    ("---\ntype: incident\ndomain: d\nsummary: s\nseen: !!set {a: null}\n---\n", "'seen' holds"),
]


@pytest.mark.parametrize("content, message", BAD_FILES, ids=[m for _, m in BAD_FILES])
def test_bad_files_are_refused(cli, wiki_path, tmp_path, content, message):
    path = tmp_path / "in.md"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = snapshot(wiki_path)
    result = cli("write", "--from", str(path), code=2)
    assert message in result.stderr
    assert snapshot(wiki_path) == before


def test_body_over_one_mib_is_refused(cli, wiki_path, tmp_path):
    body = tmp_path / "body.md"
    body.write_text("x" * (1024 * 1024 + 1))
    before = snapshot(wiki_path)
    result = cli(*write_args(), "--body-file", str(body), code=2)
    assert "over the 1048576-byte limit" in result.stderr
    assert snapshot(wiki_path) == before


def test_supersedes_itself_is_refused(cli, wiki_path):
    cli(*write_args(), "--id", "ledger")
    before = snapshot(wiki_path)
    result = cli(*write_args("Again"), "--id", "ledger-two", "--supersedes", "ledger-two", code=2)
    assert "cannot supersede itself" in result.stderr
    assert snapshot(wiki_path) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_unwritable_wiki_is_refused(cli, wiki_path):  # pragma: no cover - CI runs as root
    os.chmod(wiki_path / "entries", 0o555)
    try:
        result = cli(*write_args(), code=1)
    finally:
        os.chmod(wiki_path / "entries", 0o755)
    assert "permission denied" in result.stderr


def test_unwritable_wiki_is_refused_even_as_root(cli, wiki_path, monkeypatch):
    """os.access is what the writer asks; make it say no, as it would for a normal user."""
    real = os.access
    monkeypatch.setattr(
        os, "access", lambda p, m, **kw: False if str(p).endswith("entries") else real(p, m, **kw)
    )
    before = snapshot(wiki_path)
    result = cli(*write_args(), code=1)
    assert "permission denied" in result.stderr and "entries" in result.stderr
    assert snapshot(wiki_path) == before


def test_editing_schema_changes_what_is_accepted(cli, wiki_path):
    cli("write", "--type", "experiment", "--domain", "d", "--summary", "s", code=2)
    schema = wiki_path / "schema.md"
    text = schema.read_text()
    text = text.replace(
        "  reflection:\n", "  experiment:\n    description: We tried something.\n  reflection:\n"
    )
    text = text.replace(
        "        origins: [authored]\n",
        "        origins: [authored]\n  incident:\n    rules:\n      - field: tags\n        min_items: 1\n",
        1,
    )
    text = text.replace("  incident:\n    description: Something broke or surprised.\n", "")
    schema.write_text(text)
    cli("write", "--type", "experiment", "--domain", "d", "--summary", "s")
    refused = cli("write", "--type", "incident", "--domain", "d", "--summary", "no tags", code=2)
    assert "needs at least 1 tags item" in refused.stderr
    cli("write", "--type", "incident", "--domain", "d", "--summary", "tagged", "--tag", "x")


def test_scope_defaults_from_settings(cli, wiki_path):
    settings = wiki_path / "settings.yaml"
    settings.write_text(
        settings.read_text().replace("default_scope: shared", "default_scope: team-a")
    )
    out = cli.json(*write_args())
    assert cli.json("show", out["id"])["scope"] == "team-a"


def test_show_unknown_id(cli):
    result = cli("show", "2020-01-01-nope-abcd", code=1)
    assert result.stderr.startswith("Error: No entry '2020-01-01-nope-abcd'")


BAD_CONFIG = [
    ("settings.yaml", b"backend: \xff\n", 2, "settings.yaml is not UTF-8 text"),
    ("schema.md", b"\xff\xfe", 2, "schema.md is not UTF-8 text"),
    ("schema.md", "# Rules\n", 2, "schema.md has no ```yaml block; restore the block"),
    ("access.yaml", b"readers:\n  \xff: {admin: true}\n", 2, "access.yaml is not UTF-8 text"),
    ("settings.yaml", "backend: [offline\n", 2, "settings.yaml: malformed YAML at line 2"),
    ("settings.yaml", None, 1, "cannot read"),  # a folder where the file belongs
]


@pytest.mark.parametrize(
    "name, content, code, message", BAD_CONFIG, ids=[m for *_, m in BAD_CONFIG]
)
def test_a_broken_config_file_is_one_line_naming_it(cli, wiki_path, name, content, code, message):
    path = wiki_path / name
    path.unlink(missing_ok=True)
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = snapshot(wiki_path)
    result = cli(*write_args(), "--as", "someone", code=code)
    assert result.stderr.startswith("Error: ") and message in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert snapshot(wiki_path) == before


def test_init_takes_the_wiki_like_every_other_command(tmp_path):
    """PATH, or --wiki before or after the command name; a non-empty folder is refused."""
    from conftest import Cli

    run = Cli(None)
    made = json.loads(run("init", "--wiki", str(tmp_path / "a"), "--json").stdout)
    assert made["created"] and (tmp_path / "a/schema.md").is_file()
    assert "Created a wiki at" in run("--wiki", str(tmp_path / "b"), "init").stdout
    again = run("init", str(tmp_path / "a"))
    assert again.stdout == f"{tmp_path / 'a'} is already a wiki; nothing changed.\n"
    (tmp_path / "c").mkdir()
    (tmp_path / "c/notes.txt").write_text("mine")
    refused = run("init", str(tmp_path / "c"), code=2)
    assert (
        refused.stderr.startswith("Error: ") and "is not empty and is not a wiki" in refused.stderr
    )
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["notes.txt"]


def test_not_a_wiki_suggests_init_only_where_init_would_work(tmp_path):
    from conftest import Cli

    run = Cli(None)
    new = run("--wiki", str(tmp_path / "new"), "list", code=1)
    assert f"create one with `llm-wiki init {tmp_path / 'new'}`." in new.stderr
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes/todo.txt").write_text("mine")
    for other in (tmp_path / "notes", tmp_path / "notes/todo.txt"):
        result = run("--wiki", str(other), "list", code=1)
        assert (
            "point --wiki at a wiki's folder, or create one with `llm-wiki init NEW-FOLDER`."
            in result.stderr
        )
        assert len(result.stderr.splitlines()) == 1
