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
    assert f"entries/2026/06/{current}.md" in sources
    assert "2026-04-02-ledger-postgres  2026-04-02 (superseded)" in sources
