"""Every hostile input in tests/data/hostile/ is refused the same way, whichever way it comes in:
exit code 2 or 1, one ``Error:`` line, no traceback, under two seconds of CPU, and nothing
written (no entry, no log.md line, no temp file). Issue 13; the corpus's README says how to add
a case."""

from __future__ import annotations

import json
import resource
import tracemalloc
from pathlib import Path

import anyio
import pytest

from conftest import REPO

CORPUS = REPO / "tests" / "data" / "hostile"
BASE = {
    "type": "decision",
    "domain": "platform",
    "summary": "Use Postgres for the ledger",
    "alternatives_considered": [{"id": "mysql", "rejected_because": "weaker JSON support"}],
}
CPU_LIMIT = 2.0
FLAGS = {
    "type": "--type",
    "domain": "--domain",
    "summary": "--summary",
    "date": "--date",
    "scope": "--scope",
    "status": "--status",
    "origin": "--origin",
    "body": "--body",
    "tags": "--tag",
    "actors": "--actor",
    "supersedes": "--supersedes",
    "aliases": "--alias",
    "questions": "--question",
    "sources": "--source",
}
LIST_FLAGS = {"tags", "actors", "supersedes", "aliases", "questions", "sources"}
MCP_PARAMS = {
    "type",
    "domain",
    "summary",
    "body",
    "tags",
    "actors",
    "supersedes",
    "questions",
    "aliases",
    "sources",
    "status",
    "scope",
}


def _documents() -> list[Path]:
    return sorted((CORPUS / "documents").iterdir())


def _expand(value, unit: str, times: int):
    if value == "{XS}":
        return [f"{unit}{i}" for i in range(times)]
    if value == "{ALTS}":
        return [{"id": f"a{i}", "rejected_because": "r"} for i in range(times)]
    if isinstance(value, list):
        return [_expand(v, unit, times) for v in value]
    if isinstance(value, str):
        return value.replace("{X}", unit * times)
    return value


def _field_cases() -> list[tuple[str, dict]]:
    cases = [(c["name"], c["fields"]) for c in json.loads((CORPUS / "fields.json").read_text())]
    for recipe in json.loads((CORPUS / "generated.json").read_text()):
        fields = {
            k: _expand(v, recipe["unit"], recipe["times"]) for k, v in recipe["fields"].items()
        }
        cases.append((recipe["name"], fields))
    return cases


FIELD_CASES = _field_cases()


def _flags(fields: dict) -> list[str] | None:
    """``write`` flags for BASE overridden by ``fields``; None if flags cannot say it."""
    data = {**BASE, **fields}
    argv = ["write"]
    for key, value in data.items():
        if key == "alternatives_considered":
            if not isinstance(value, list) or not all(isinstance(a, dict) for a in value):
                return None
            for alt in value:
                argv += ["--alt", f"{alt.get('id', '')}: {alt.get('rejected_because', '')}"]
            continue
        flag = FLAGS.get(key)
        if flag is None:
            return None
        if isinstance(value, list) != (key in LIST_FLAGS):
            return None  # a list for a one-value flag, or one value for a list
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str) for v in items) or not items:
            return None
        for item in items:
            argv += [flag, item]
    return argv


def _mcp_args(fields: dict) -> dict | None:
    data = {**BASE, **fields}
    alts = data.pop("alternatives_considered")
    if not set(data) <= MCP_PARAMS:
        return None
    return {**data, "alternatives": alts}


def _state(root: Path) -> dict[str, bytes]:
    """What a refused write must leave as it was: every file but the catalog and the locks,
    with its bytes (entries, log.md, index files, and temp files of any kind)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith((".llm-wiki/catalog", ".llm-wiki/write.lock")):
            out[rel] = path.read_bytes() if not rel.endswith(".lock") else b""
    return out


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _refused(result, wiki_path: Path, before: dict, cpu: float, what: str) -> None:
    output = result.stdout + result.stderr
    assert result.exit_code in (1, 2), f"{what}: exit {result.exit_code}\n{output[-2000:]}"
    assert "Traceback" not in output, f"{what}: {output[-2000:]}"
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), f"{what}: {result.stderr[:2000]}"
    assert cpu < CPU_LIMIT, f"{what}: {cpu:.2f} s of CPU"
    after = _state(wiki_path)
    assert after == before, f"{what}: wrote {sorted(set(after) ^ set(before)) or 'changes'}"
    assert not list(wiki_path.rglob("*.tmp")), what


@pytest.fixture
def seeded(cli, wiki_path):
    """A wiki holding one entry, so every refusal is checked against a log and an index."""
    cli(
        "write",
        *sum((["--" + k, v] for k, v in BASE.items() if isinstance(v, str)), []),
        "--alt",
        "mysql: weaker JSON support",
        "--summary",
        "A first decision",
    )
    return wiki_path


@pytest.mark.parametrize("doc", _documents(), ids=lambda p: p.name)
def test_a_hostile_document_is_refused_from_a_file_and_from_stdin(cli, seeded, doc):
    data = doc.read_bytes()
    for how, args, stdin in (
        ("--from file", ["write", "--from", str(doc)], None),
        ("--from -", ["write", "--from", "-"], data),
    ):
        before = _state(seeded)
        start = _cpu()
        result = cli(*args, input=stdin, code=None)
        _refused(result, seeded, before, _cpu() - start, f"{doc.name} via {how}")


@pytest.mark.parametrize("name, fields", FIELD_CASES, ids=[n for n, _ in FIELD_CASES])
def test_hostile_fields_are_refused_as_flags_and_as_json(cli, seeded, tmp_path, name, fields):
    ways = []
    argv = _flags(fields)
    if argv is not None:
        ways.append(("flags", argv, None))
    doc = json.dumps({**BASE, **fields})  # ensure_ascii: a lone surrogate is sent as \udc80
    path = tmp_path / f"{name}.json"
    path.write_text(doc)
    ways.append(("--from file", ["write", "--from", str(path)], None))
    ways.append(("--from -", ["write", "--from", "-"], doc.encode()))
    for how, args, stdin in ways:
        before = _state(seeded)
        start = _cpu()
        result = cli(*args, input=stdin, code=None)
        _refused(result, seeded, before, _cpu() - start, f"{name} via {how}")


def test_hostile_fields_are_refused_by_the_mcp_tool(seeded):
    from mcp import Client

    from llm_wiki.access import Viewer
    from llm_wiki.mcp_server import build_server
    from llm_wiki.wiki import Wiki

    server = build_server(Wiki(seeded), Viewer.everyone())
    cases = [(n, a) for n, f in FIELD_CASES if (a := _mcp_args(f)) is not None]
    assert len(cases) >= 30
    outcomes = []

    async def main():
        async with Client(server) as client:
            # a first refusal loads what every write loads; the limit is on the input's cost
            warm = await client.call_tool("wiki_write", {**_mcp_args({}), "type": "no-such-type"})
            assert warm.is_error
            for name, arguments in cases:
                before = _state(seeded)
                start = _cpu()
                result = await client.call_tool("wiki_write", arguments)
                text = result.content[0].text if result.content else ""
                outcomes.append((name, result.is_error, text, _cpu() - start, before))
                after = _state(seeded)
                assert after == before, f"{name}: wrote {sorted(set(after) ^ set(before))}"

    anyio.run(main)
    for name, is_error, text, cpu, _ in outcomes:
        assert is_error, f"{name}: accepted: {text[:300]}"
        assert "Traceback" not in text, f"{name}: {text[:2000]}"
        # The SDK checks parameter types before the tool runs and words that error itself
        # (several lines, from pydantic); every error of the tool's own is one line.
        if "validation error for wiki_writeArguments" not in text:
            assert "\n" not in text.strip(), f"{name}: {text[:2000]}"
        assert cpu < CPU_LIMIT, f"{name}: {cpu:.2f} s of CPU"


def test_the_corpus_holds_at_least_eighty_inputs():
    assert len(_documents()) + len(FIELD_CASES) >= 80


@pytest.mark.parametrize(
    "name", ["alias-bomb-9-levels.yaml", "deep-json-list.json", "deep-yaml-flow-list.yaml"]
)
def test_bombs_are_refused_in_bounded_memory(cli, seeded, name):
    tracemalloc.start()
    try:
        cli("write", "--from", str(CORPUS / "documents" / name), code=2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 30 * 1024 * 1024, f"{name}: {peak / 1e6:.0f} MB"


def test_from_dev_zero_stops(cli, seeded):
    """--from /dev/zero read until memory ran out; the input is read no further than the limit."""
    before = _state(seeded)
    start = _cpu()
    result = cli("write", "--from", "/dev/zero", code=2)
    assert "limits.max_input_bytes" in result.stderr
    _refused(result, seeded, before, _cpu() - start, "/dev/zero")
