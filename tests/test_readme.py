"""The README's two commands stay true: CI runs the second; this runs the first."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import REPO


def readme_commands():
    text = (REPO / "README.md").read_text()
    return re.findall(r"```sh\n(.*?)\n```", text, re.S)[:2]


def test_ci_runs_the_readme_test_command():
    _, test_command = readme_commands()
    ci = (REPO / ".ci/run").read_text().splitlines()
    assert test_command in ci, ".ci/run must run the README's test command verbatim"
    assert "pytest" in test_command


@pytest.mark.slow
def test_readme_main_command_works_on_a_fresh_copy(tmp_path):
    main_command, _ = readme_commands()
    copy = tmp_path / "repo"
    ignore = shutil.ignore_patterns(
        ".venv",
        ".git",
        "*.egg-info",
        "__pycache__",
        ".llm-wiki",
        ".pytest_cache",
        ".hypothesis",
        "bench-*",
    )
    shutil.copytree(REPO, copy, ignore=ignore)
    proc = subprocess.run(
        ["sh", "-c", main_command], cwd=copy, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    answer, sources = proc.stdout.split("\nSources:\n")
    assert answer.startswith("Extractive answer (offline backend")
    current = "2026-06-15-move-the-ledger-to-a-single-postings-table-partitioned-by-c75c"
    assert answer.index(current) < answer.index("[2026-04-02-ledger-postgres]")
    assert "Move the ledger to a single postings table partitioned by month" in answer
    assert "It replaced 2026-04-02-ledger-postgres." in answer
    assert f"Superseded by {current}." in answer
    # ... and why: the reason, quoted from the decision it replaced, with that entry's id
    assert (
        "- Double-entry postings must commit atomically across accounts; Postgres gives us that "
        "with serializable transactions. [2026-04-02-ledger-postgres]"
    ) in answer
    assert f"entries/2026/06/{current}.md" in sources
    assert "2026-04-02-ledger-postgres  2026-04-02 (superseded)" in sources


def readme_section(title):
    text = (REPO / "README.md").read_text()
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_using_it_runs_as_written(tmp_path):
    """The "Using it" block, verbatim, in a fresh HOME (with the entry.md it names)."""
    import os
    import sys

    from conftest import subprocess_env

    block = re.search(r"```sh\n(.*?)\n```", readme_section("Using it"), re.S).group(1)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "llm-wiki"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m llm_wiki "$@"\n')
    shim.chmod(0o755)
    (tmp_path / "home").mkdir()
    (tmp_path / "entry.md").write_text(
        "---\ntype: incident\ndomain: ledger\nsummary: The nightly report timed out\n---\n"
    )
    env = subprocess_env(
        HOME=str(tmp_path / "home"), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    )
    proc = subprocess.run(
        ["sh", "-ec", block], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = "2026-04-02-keep-the-ledger-in-postgres-47c4"
    assert f"Recorded {first}" in proc.stdout  # the id the README says it prints
    assert "[superseded by 2026-" in proc.stdout
    assert "Verified 3 entries: clean." in proc.stdout


def test_readme_json_keys_are_what_the_commands_print(cli, wiki_path, monkeypatch, tmp_path):
    """The `--json` table in "Using it from an agent" names exactly the top-level keys."""
    import json

    from conftest import EVAL, write_args

    table = readme_section("Using it from an agent").split("| command | keys |")[1]
    rows = dict(re.findall(r"^\| `([a-z-]+)` \| (.*) \|$", table, re.M))
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    first = cli.json(*write_args("Use Postgres for the ledger"))["id"]
    args = {
        "write": write_args("Use SQLite for the cache", domain="cache")[1:] + ["--dry-run"],
        "show": [first],
        "list": [],
        "query": ["Which database holds the ledger?"],
        "brief": [],
        "stats": [],
        "verify": [],
        "lint": [],
        "index": [],
        "eval": [str(EVAL / "tdr-dev.jsonl")],
    }
    assert sorted(rows) == sorted(args)
    fields = set(cli.json("list")["entries"][0])
    for command, keys in rows.items():
        named = {k for k in re.findall(r"`([^`]+)`", re.sub(r"\([^)]*\)", "", keys))}
        named = {k for k in named if not k.startswith("-")}
        got = set(json.loads(cli(command, *args[command], "--json").stdout))
        if command == "show":  # "the entry's fields, ..." and the derived ones named
            assert named <= got and got - named <= fields, (command, got ^ named)
        else:
            assert got == named, (command, got ^ named)


def test_readme_from_python_runs_as_written(tmp_path):
    """The "From Python" block, verbatim, on a copy of the example wiki named as it says."""
    import shutil
    import subprocess
    import sys

    from conftest import subprocess_env

    section = readme_section("From Python")
    assert "cp -R llm-wiki my-wiki" in section
    block = re.search(r"```python\n(.*?)\n```", section, re.S).group(1)
    shutil.copytree(
        REPO / "llm-wiki", tmp_path / "my-wiki", ignore=shutil.ignore_patterns(".llm-wiki")
    )
    proc = subprocess.run(
        [sys.executable, "-c", block],
        cwd=tmp_path,
        env=subprocess_env(LLM_WIKI_NOW="2026-07-01"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    current = "2026-06-15-move-the-ledger-to-a-single-postings-table-partitioned-by-c75c"
    assert proc.stdout.startswith("Extractive answer (offline backend")
    assert f"[{current}]" in proc.stdout and "\noffline settings\n" in proc.stdout
    listed = proc.stdout.split("\noffline settings\n", 1)[1].splitlines()
    new = "2026-07-01-keep-seven-years-of-postings-in-the-ledger-older-ones-in-7a17"
    assert listed[0] == (  # the new decision, newest first
        f"2026-07-01 {new} Keep seven years of postings in the ledger, older ones in cold storage"
    )
    assert (
        listed[1]
        == f"2026-06-15 {current} Move the ledger to a single postings table partitioned by month"
    )
    assert len(listed) == 2  # the superseded 2026-04-02 decision is not active
