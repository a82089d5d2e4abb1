"""The README stays true: its install line, the two commands of "Try it" (CI runs the second;
this runs the first) and the "Using it" block, each run as written in a fresh HOME."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO


def readme_commands():
    return re.findall(r"```sh\n(.*?)\n```", readme_section("Try it"), re.S)[:2]


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


def sh_block(section):
    return re.search(r"```sh\n(.*?)\n```", readme_section(section), re.S).group(1)


def run_using_it(tmp_path, bin_dir, env):
    """The "Using it" block, verbatim, in a fresh shell (sh -e: any command failing fails it)
    and a fresh HOME, in an empty folder, with only ``bin_dir`` added to PATH."""
    work = tmp_path / "work"
    work.mkdir()
    env = {**env, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    proc = subprocess.run(
        ["sh", "-ec", sh_block("Using it")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = "2026-04-02-keep-the-ledger-in-postgres-47c4"
    assert f"Recorded {first}" in proc.stdout  # the id the README says it prints
    assert '"created": true' in proc.stdout  # entry.md, the sample the block writes
    assert "[superseded by 2026-" in proc.stdout
    assert "Verified 3 entries: clean." in proc.stdout
    assert (work / "entry.md").read_text().count("\n") == 6  # the six-line sample


def test_readme_using_it_runs_as_written(tmp_path):
    """With `llm-wiki` on PATH as this checkout's package (fast; the slow test below installs)."""
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "llm-wiki"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m llm_wiki "$@"\n')
    shim.chmod(0o755)
    (tmp_path / "home").mkdir()
    env = {"HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO / "_system"), "LC_ALL": "C.UTF-8"}
    run_using_it(tmp_path, bin_dir, env)


@pytest.mark.slow
def test_install_as_written_then_using_it(tmp_path):
    """The README's install line, as pipx and uv do it, offline: a wheel of a fresh copy,
    installed (not editable) into an environment of its own, the dependencies taken from this
    test's environment instead of the package index. Then, in a fresh HOME, "Using it", the
    plugin's hook and a scheduled job run from the installed package alone."""
    import json
    import os
    import sys
    import sysconfig

    install = sh_block("Install").split("#")[0].strip()
    assert install == "pipx install ."
    home = tmp_path / "home"
    home.mkdir()
    copy = tmp_path / "src"
    ignore = shutil.ignore_patterns(".venv", ".git", "*.egg-info", "__pycache__", ".llm-wiki",
                                    ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache",
                                    "bench-*", "build", "dist")  # fmt: skip
    shutil.copytree(REPO, copy, ignore=ignore, symlinks=True)
    env = {"HOME": str(home), "LC_ALL": "C.UTF-8", "PATH": os.environ["PATH"]}
    wheels = tmp_path / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
             "--no-index", "-w", str(wheels), "."]  # fmt: skip
    proc = subprocess.run(build, cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = wheels.glob("llm_wiki-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    site = subprocess.run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    (Path(site) / "deps-of-the-test.pth").write_text(sysconfig.get_path("purelib") + "\n")
    pip = [str(venv / "bin" / "pip"), "install", "-q", "--no-index", "--no-deps", str(wheel)]
    proc = subprocess.run(pip, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bin_dir = venv / "bin"
    shutil.rmtree(copy)  # nothing below may lean on the source tree
    where = [str(bin_dir / "python"), "-c", "import llm_wiki; print(llm_wiki.__file__)"]
    assert subprocess.run(where, capture_output=True, text=True).stdout.startswith(site)
    run_using_it(tmp_path, bin_dir, {"HOME": str(home), "LC_ALL": "C.UTF-8"})

    env = {"HOME": str(home), "LC_ALL": "C.UTF-8", "PATH": f"{bin_dir}:/usr/bin:/bin",
           "LLM_WIKI_DIR": str(home / "llm-wiki")}  # fmt: skip

    def run(*args, **kw):
        return subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, **kw)

    plugin = tmp_path / "plugin"
    assert run("llm-wiki", "agents", "install", "--dest", str(plugin)).returncode == 0
    start = json.dumps({"session_id": "s", "cwd": str(tmp_path), "source": "startup"})
    hook = run("sh", str(plugin / "scripts" / "hook.sh"), "session-start", input=start)
    assert hook.returncode == 0 and "decision archive at" in hook.stdout, hook.stderr
    assert "Keep the ledger in Postgres" not in hook.stdout  # superseded: not current
    units = run("llm-wiki", "schedule", "render", "--platform", "systemd", "--jobs", "all")
    assert units.returncode == 0, units.stderr
    (script,) = {
        ln.split()[1]
        for ln in units.stdout.splitlines()
        if "wiki-lint" in ln and ln.startswith("ExecStart=")
    }
    assert script.startswith(f"{site}/llm_wiki/bin/")  # the package's copy of the scripts
    python = next(
        ln.split("=", 2)[2]
        for ln in units.stdout.splitlines()
        if ln.startswith("Environment=LLM_WIKI_PYTHON=")
    )
    job = subprocess.run(["env", "-i", f"HOME={home}", f"LLM_WIKI_DIR={home / 'llm-wiki'}",
                          f"LLM_WIKI_PYTHON={python}", "/bin/sh", script],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert job.returncode == 0 and job.stderr.rstrip().endswith("wiki-lint done (exit 0)"), (
        job.stderr
    )


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


def test_the_documented_shell_completion_works():
    """Each completion line in "Install" produces its shell's script, and bash's completes."""
    import sys

    from conftest import subprocess_env

    llm_wiki = str(Path(sys.executable).parent / "llm-wiki")  # this environment's entry point
    text = readme_section("Install")
    lines = re.findall(r"_LLM_WIKI_COMPLETE=(\w+)_source llm-wiki", text)
    assert lines == ["bash", "zsh", "fish"]
    env = subprocess_env()
    for shell in lines:
        proc = subprocess.run(
            [llm_wiki],
            env={**env, "_LLM_WIKI_COMPLETE": f"{shell}_source"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (
            proc.returncode == 0
            and "llm-wiki" in proc.stdout
            and "_LLM_WIKI_COMPLETE" in proc.stdout
        )
    ask = {"_LLM_WIKI_COMPLETE": "bash_complete", "COMP_WORDS": "llm-wiki sch", "COMP_CWORD": "1"}
    proc = subprocess.run([llm_wiki], env={**env, **ask}, capture_output=True, text=True)
    assert proc.stdout.splitlines() == ["plain,schedule"], proc.stderr
