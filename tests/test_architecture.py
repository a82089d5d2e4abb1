"""Rules that keep the code easy to change: who imports what, and start-up stays light."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from conftest import SRC, Cli, subprocess_env, write_args

PACKAGE = SRC / "llm_wiki"


def imported_modules(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0], node


def test_only_cli_imports_click():
    """Only the cli package (the root group in cli/__init__.py, the commands beside it)."""
    offenders = [
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if p.parent != PACKAGE / "cli" and any(m == "click" for m, _ in imported_modules(p))
    ]
    assert offenders == []
    assert any(m == "click" for m, _ in imported_modules(PACKAGE / "cli" / "__init__.py"))


def test_heavy_sdks_are_never_imported_at_module_level():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:  # top level only
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] in ("anthropic", "mcp") for n in names):
                offenders.append(path.name)
    assert offenders == []


PROBE = """
import sys, runpy
sys.argv = ["llm-wiki", *{args!r}]
try:
    runpy.run_module("llm_wiki", run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
import json
heavy = sorted(m for m in ("anthropic", "mcp", "jinja2", "httpx", "frontmatter", "tarfile", "zstandard", "yaml") if m in sys.modules)
print("MODULES=" + json.dumps(heavy), file=sys.stderr)
sys.exit(code or 0)
"""


def loaded_after(args, wiki=None):
    env = subprocess_env()
    if wiki:
        env["LLM_WIKI_DIR"] = str(wiki)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=list(args))],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES=")][0]
    return json.loads(line.split("=", 1)[1])


def test_help_and_write_stay_light(wiki_path):
    assert loaded_after(["--help"]) == []
    assert loaded_after(["write", "--help"]) == []
    args = ["write", "--type", "incident", "--domain", "ops", "--summary", "Disk full"]
    assert loaded_after(args, wiki_path) == []
    assert loaded_after(["list"], wiki_path) == []


STDLIB_PROBE = """
import sys
sys.argv = ["llm-wiki", *{args!r}]
try:
    from llm_wiki.cli import main  # as the console script runs it
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
import json
unwanted = ("pathlib", "dataclasses", "locale", "sqlite3", "llm_wiki.version")
loaded = sorted(m for m in unwanted if m in sys.modules)
print("MODULES=" + json.dumps(loaded), file=sys.stderr)
sys.exit(code or 0)
"""


def stdlib_loaded_after(args, wiki):
    proc = subprocess.run(
        [sys.executable, "-c", STDLIB_PROBE.format(args=list(args))],
        env=subprocess_env(LLM_WIKI_DIR=str(wiki)),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES=")][0]
    return json.loads(line.split("=", 1)[1]), proc.stdout


def test_write_show_and_list_load_no_pathlib_dataclasses_or_locale(wiki_path):
    # ~6 ms of their start-up (DESIGN.md "Rules that keep it easy to change"); nor the sqlite3
    # package around its C module (~0.9 ms), nor the version (asked only by --version)
    args = ["write", "--type", "incident", "--domain", "ops", "--summary", "Disk full"]
    loaded, out = stdlib_loaded_after([*args, "--tag", "disk"], wiki_path)
    assert loaded == []
    entry_id = out.split()[1]  # "Recorded <id>"
    assert stdlib_loaded_after(["show", entry_id], wiki_path)[0] == []
    assert stdlib_loaded_after(["list"], wiki_path)[0] == []
    assert stdlib_loaded_after(["list", "--json"], wiki_path)[0] == []


def test_an_offline_query_loads_no_pathlib(wiki_path):
    # ~7-9 ms of a query's start-up on a slow machine; the LLM flows load it with jinja2's loader
    Cli(wiki_path)(*write_args("Use Kafka for the event bus"))
    loaded, out = stdlib_loaded_after(["query", "Why Kafka for events?"], wiki_path)
    assert "Kafka" in out
    assert "pathlib" not in loaded


def test_write_holds_the_collector_off_only_while_it_runs(cli):
    # the collector's passes over write's freshly loaded modules cost more than its catalog
    # work (cli._collector_held); an in-process caller gets its collector back, failing or not
    import gc

    assert gc.isenabled()
    cli(*write_args("Hold the collector"))
    assert gc.isenabled()
    cli("write", "--type", "nope", "--domain", "ops", "--summary", "Refused", code=2)
    assert gc.isenabled()


JSON_PROBE = """
import sys
sys.argv = ["llm-wiki", *{args!r}]
try:
    from llm_wiki.cli import main  # as the console script runs it
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
print("JSON=" + str("json" in sys.modules), file=sys.stderr)
"""


def test_write_loads_no_json(wiki_path):
    # ~0.8 ms of its start-up: its catalog row's lists are encoded by json's C string encoder
    args = ["write", "--type", "incident", "--domain", "ops", "--summary", "Disk full"]
    proc = subprocess.run(
        [sys.executable, "-c", JSON_PROBE.format(args=[*args, "--tag", "disk", "--actor", "a b"])],
        env=subprocess_env(LLM_WIKI_DIR=str(wiki_path)),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "JSON=False" in proc.stderr.splitlines(), proc.stderr
    assert proc.stdout.startswith("Recorded ")


NO_FCNTL = """
import importlib, pkgutil, sys
sys.modules["fcntl"] = None  # as where there is no fcntl: `import fcntl` raises ImportError
import llm_wiki
for module in pkgutil.walk_packages(llm_wiki.__path__, "llm_wiki."):
    if module.name != "llm_wiki.__main__":
        try:
            importlib.import_module(module.name)
        except ModuleNotFoundError as exc:  # only an optional extra may be missing (embeddings)
            if exc.name != "numpy":
                raise
from llm_wiki import store
from llm_wiki.errors import WikiError
from llm_wiki.wiki import Wiki
try:
    with store.locked(Wiki(sys.argv[1])):
        pass
except WikiError as exc:
    print(exc.message)
"""


def test_every_module_imports_where_fcntl_is_missing(wiki_path):
    """Linux and macOS are supported; elsewhere the package still imports, and the first lock
    says in one line why it cannot write."""
    proc = subprocess.run(
        [sys.executable, "-c", NO_FCNTL, str(wiki_path)],
        env=subprocess_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "this platform has no flock (fcntl), which llm-wiki needs to write safely; run it on "
        "Linux or macOS.\n"
    )


def all_commands():
    """(name, command) for the group and every command under it, subcommands included."""
    import click

    from llm_wiki.cli import cli

    todo = [("llm-wiki", cli)]
    while todo:
        name, command = todo.pop(0)
        yield name, command
        if isinstance(command, click.Group):
            todo += [(f"{name} {sub}", c) for sub, c in command.commands.items()]


def test_every_command_has_help_with_an_example():
    for name, command in all_commands():
        doc = command.help or ""
        assert doc.strip(), f"{name} has no help"
        assert "Example usage:" in doc, f"{name} help lacks 'Example usage:'"
        for param in command.params:
            if param.param_type_name == "option":
                assert param.help, f"{name} {param.opts[0]} has no help"


def test_the_command_list_shows_each_summary_whole():
    """`llm-wiki --help` lists each command with its whole first line, not cut at 45 chars."""
    import click

    from conftest import Cli

    for name, group in all_commands():
        if not isinstance(group, click.Group):
            continue
        listing = Cli(None)(*name.split()[1:], "--help").stdout.split("Commands:")[1]
        listing = " ".join(listing.split())
        for sub, command in group.commands.items():
            first = " ".join((command.help or "").strip().splitlines()[0].split()).split(". ")[0]
            assert f"{sub} {first}" in listing, f"{name} --help cuts {sub}'s summary"


def examples():
    """Every `Example usage:` line of every help, continuation lines joined."""
    for name, command in all_commands():
        text = (command.help or "").partition("Example usage:")[2]
        text = "\n".join(ln.strip() for ln in text.splitlines() if ln.strip() not in ("", "\b"))
        for line in text.replace("\\\n", " ").splitlines():
            yield name, line


# Examples that need what a test must not touch: an API key or `claude` (the backends are
# tested against a loopback server and a fake `claude`), the OS's service manager, a git
# remote, a stdio client (mcp), or a server that runs until Ctrl-C (site --serve, serve). Each
# is exercised in its own test file (serve: tests/test_serve.py).
NOT_RUN = (
    "--serve",
    "anthropic",
    "claude-cli",
    "claude mcp",
    "--with-llm",
    "llm-wiki ingest",
    "llm-wiki mcp",
    "llm-wiki serve",
    "llm-wiki sync",
    "llm-wiki schedule install",
    "llm-wiki schedule uninstall",
    "llm-wiki schedule status",
)


def test_every_help_example_runs(tmp_path, monkeypatch):
    """Run each example as written, in a folder holding the files it names, on a copy of the
    example wiki: what --help shows must work."""
    import shlex
    import shutil

    from conftest import CORPORA, EVAL, REPO, Cli

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    shutil.copytree(REPO / "llm-wiki", home / "wiki")
    monkeypatch.setenv("LLM_WIKI_DIR", str(home / "wiki"))
    monkeypatch.chdir(tmp_path)
    record = CORPORA / "nationalarchives__tdr-dev-documentation" / "0003-frontend-framework.md"
    for folder in (
        "docs/adr",
        "docs/decisions",
        "architecture-decision-records",
        "matters/acme/adr",
    ):
        (tmp_path / folder).mkdir(parents=True)
        shutil.copy(record, tmp_path / folder)
    (tmp_path / "tests/data/eval").mkdir(parents=True)
    shutil.copy(EVAL / "tdr-dev.jsonl", tmp_path / "tests/data/eval")
    shutil.copy(EVAL / "tdr-dev.jsonl", tmp_path / "questions.jsonl")
    (tmp_path / "entry.md").write_text(
        "---\ntype: incident\ndomain: ops\nsummary: The nightly report timed out\n---\nBody.\n"
    )
    ran = 0
    for name, line in examples():
        if any(s in line for s in NOT_RUN):
            continue
        argv = [
            a.replace("~", str(home), 1) if a.startswith("~/") else a for a in shlex.split(line)
        ]
        assert argv[0] == "llm-wiki", f"{name}: {line}"
        Cli(None)(*argv[1:], code=0)
        ran += 1
    assert ran >= 30


USAGE_ERRORS = [
    (["list", "--xyzzy"], "No such option '--xyzzy'; see `llm-wiki list --help`."),
    (["bogus"], "No such command 'bogus'; see `llm-wiki --help`."),
    (["write", "--bodyy", "x"], "'--body-file'?) See `llm-wiki write --help`."),
    (["--xyzzy", "list"], "No such option '--xyzzy'; see `llm-wiki --help`."),
    (["query"], "Missing argument 'QUESTION'; see `llm-wiki query --help`."),
    (["list", "--limit", "0"], "Invalid value for '--limit'"),
    (["import-adr", "no/such/dir"], "Directory 'no/such/dir' does not exist"),
    (["schedule", "render", "--platform", "windows"], "see `llm-wiki schedule render --help`."),
]


@pytest.mark.parametrize("args, message", USAGE_ERRORS, ids=[" ".join(a) for a, _ in USAGE_ERRORS])
def test_a_usage_error_is_one_line_and_exits_2(wiki_path, args, message):
    """Like every other error: one `Error:` line on stderr (not click's usage block), exit 2."""
    from conftest import Cli

    result = Cli(wiki_path)(*args, code=2)
    assert result.stderr.startswith("Error: ") and message in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stdout == ""
