"""Shared fixtures: a temporary wiki, the CLI in-process and as a subprocess, a clean env."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "_system"
# Copies of ../shared/corpora and ../shared/eval (MIT, with their licences), so a clean clone
# has them.
CORPORA = REPO / "tests" / "data" / "corpora"
EVAL = REPO / "tests" / "data" / "eval"


def pytest_configure(config):
    global FAST_LOOP
    FAST_LOOP = fast_loop(config)
    # Most tests wait on fsync (every write, index file and log line is synced), not on the CPU:
    # on a busy disk a test takes several times as long in /tmp as in RAM. So the tests'
    # temporary folders (tmp_path, and tempfile's in this process) live on /dev/shm when it is a
    # writable tmpfs with room to spare; the product still calls fsync, which returns at once
    # there. --basetemp or PYTEST_DEBUG_TEMPROOT (pytest's own variable) chooses another place.
    shm = "/dev/shm"
    if config.option.basetemp is None and "PYTEST_DEBUG_TEMPROOT" not in os.environ:
        try:
            fs = os.statvfs(shm)
            room = fs.f_bavail * fs.f_frsize
        except OSError:
            room = 0
        if room >= 4 << 30 and os.access(shm, os.W_OK | os.X_OK):
            os.environ["PYTEST_DEBUG_TEMPROOT"] = shm  # xdist's workers inherit it
    if os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        tempfile.tempdir = os.environ["PYTEST_DEBUG_TEMPROOT"]
    # Bytecode caches, even where PYTHONDONTWRITEBYTECODE is set: without them this process (and
    # each xdist worker) rewrites every test module's asserts again, and every `python` the tests
    # start compiles the modules it imports from tests/ again (~18 s of CPU in the fast loop).
    # The caches are __pycache__ folders, which git ignores.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


FAST_LOOP = False  # set by pytest_configure: the -m expression leaves the slow tests out


def fast_loop(config) -> bool:
    """``-m "not slow"``: the developer's fast loop (README, "Try it")."""
    return bool(re.search(r"\bnot\s+slow\b", config.option.markexpr or ""))


def fewer(n: int) -> int:
    """How many of a property test's ``n`` examples to run: all of them, but a tenth (rounded
    up) in the fast loop; the full run (``pytest``, CI) runs them all. Property tests pass
    ``max_examples=fewer(n)``: their modules are imported after ``pytest_configure`` set
    :data:`FAST_LOOP`."""
    return -(-n // 10) if FAST_LOOP else n


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path_factory):
    """No test sees the developer's wiki, key, backend or clock."""
    for key in list(os.environ):
        if key.startswith("LLM_WIKI_") or key in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
            monkeypatch.delenv(key, raising=False)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    # Lexical ranking unless a test turns vectors on in its wiki's settings.yaml, so the
    # suite's outputs are the same with or without the embeddings extra installed.
    monkeypatch.setenv("LLM_WIKI_EMBEDDINGS", "off")
    from llm_wiki.backends import MockBackend

    MockBackend.reset()
    yield
    MockBackend.reset()


@pytest.fixture(scope="session")
def _new_wiki() -> list[Path]:
    return []  # the wiki init_wiki made, once per session (see wiki_path)


@pytest.fixture
def wiki_path(tmp_path, _new_wiki, tmp_path_factory) -> Path:
    """A new wiki at ``tmp_path / "wiki"``, as ``init_wiki`` leaves it: a copy of one it made
    once per session (in a clean environment: after ``clean_env``), whose config cache (keyed by
    the files' paths and inodes) is made again for the copy, as init_wiki makes it. An init per
    test cost ~12 ms of CPU (mostly creating the catalog's tables); a copy costs ~3."""
    from llm_wiki.create import init_wiki
    from llm_wiki.wiki import STATE_DIR, Wiki

    if not _new_wiki:
        root = tmp_path_factory.mktemp("new-wiki") / "wiki"
        init_wiki(root)
        (root / STATE_DIR / "config.cache").unlink()
        _new_wiki.append(root)
    path = tmp_path / "wiki"
    shutil.copytree(_new_wiki[0], path, symlinks=True)
    with contextlib.closing(sqlite3.connect(path / STATE_DIR / "catalog.sqlite3")) as db, db:
        # a generation of its own, as init_wiki draws (readers that follow the log key on it)
        db.execute("UPDATE meta SET value=? WHERE key='generation'", (os.urandom(8).hex(),))
    wiki = Wiki(path)
    wiki.schema, wiki.settings  # noqa: B018 - the config cache, as init_wiki leaves it
    return path


def embeds_counted(monkeypatch) -> list[int]:
    """A list that gets, for each embedding pass from now on, how many entries it embedded."""
    from llm_wiki.ranking import vectors

    embedded: list[int] = []
    original = vectors._embed

    def counted(encoder, catalog, rowids, progress):
        embedded.append(len(rowids))
        return original(encoder, catalog, rowids, progress)

    monkeypatch.setattr(vectors, "_embed", counted)
    return embedded


@pytest.fixture
def wiki(wiki_path):
    from llm_wiki.wiki import Wiki

    return Wiki(wiki_path)


class Cli:
    """Run ``llm-wiki`` in-process against one wiki; assert on exit code and output."""

    def __init__(self, wiki_path: Path | None) -> None:
        self.wiki_path = wiki_path

    def __call__(
        self,
        *args: str,
        input: str | bytes | None = None,
        env: dict | None = None,
        code: int | None = 0,
    ):
        from llm_wiki.cli import cli

        argv = [str(a) for a in args]
        if self.wiki_path is not None and "--wiki" not in argv and argv and argv[0] != "init":
            argv = ["--wiki", str(self.wiki_path), *argv]
        result = CliRunner().invoke(cli, argv, input=input, env=env, catch_exceptions=False)
        if code is not None:
            assert result.exit_code == code, (
                f"llm-wiki {' '.join(argv)} exited {result.exit_code}, wanted {code}\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}"
            )
        return result

    def json(self, *args: str, **kw):
        result = self(*args, "--json", **kw)
        return json.loads(result.stdout)


@pytest.fixture
def cli(wiki_path) -> Cli:
    return Cli(wiki_path)


@pytest.fixture(scope="session")
def _built_wikis() -> dict[str, Path]:
    return {}


@pytest.fixture
def built_wiki(wiki_path, _built_wikis, tmp_path_factory):
    """``built_wiki(name, build)``: the test's wiki (``wiki_path``) becomes a copy of a wiki that
    ``build(cli)`` filled once per session, so tests that read the same imported records do not
    each pay seconds to import them; each test may write to its own copy. Returns its ``cli``."""

    def use(name: str, build) -> Cli:
        if name not in _built_wikis:
            from llm_wiki.create import init_wiki

            root = tmp_path_factory.mktemp(f"built-{name}") / "wiki"
            init_wiki(root)
            build(Cli(root))
            _built_wikis[name] = root
        shutil.rmtree(wiki_path)
        shutil.copytree(_built_wikis[name], wiki_path, symlinks=True)
        return Cli(wiki_path)

    return use


def subprocess_env(**extra: str) -> dict[str, str]:
    """A minimal environment for running the package from this checkout."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": str(SRC),
        "LC_ALL": "C.UTF-8",
        "LLM_WIKI_EMBEDDINGS": "off",  # as clean_env: vectors only where settings.yaml asks
    }
    env.update(extra)
    return env


def run_module(
    *args: str, env: dict | None = None, input: bytes | None = None, timeout: float = 120
):
    """``python -m llm_wiki ARGS`` in a subprocess (jobs, crash and import tests)."""
    return subprocess.run(
        [sys.executable, "-m", "llm_wiki", *map(str, args)],
        env=env or subprocess_env(),
        input=input,
        capture_output=True,
        timeout=timeout,
    )


def git(cwd, *args: str) -> str:
    """Run git in ``cwd``; a failure fails the test with git's own message."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def git_identity(monkeypatch):
    """Commits need an author; no test may depend on the developer's git config."""
    for key in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{key}_NAME", "Wiki Tester")
        monkeypatch.setenv(f"GIT_{key}_EMAIL", "tester@example.org")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def write_args(summary: str = "Use Postgres for the ledger", **kw) -> list[str]:
    """Flags for a valid authored decision."""
    args = [
        "write",
        "--type",
        kw.pop("type", "decision"),
        "--domain",
        kw.pop("domain", "platform"),
        "--summary",
        summary,
    ]
    if kw.pop("alt", True):
        args += ["--alt", "mysql: weaker JSON support"]
    for key, value in kw.items():
        flag = "--" + key.replace("_", "-")
        for item in value if isinstance(value, (list, tuple)) else [value]:
            args += [flag, str(item)]
    return args


def plant(wiki_path, entry_id, date, fields, body="planted"):
    """An entry written past the writer's checks (as an old version or a hand edit would), with
    its log line, so verify stays clean and only lint's own checks can see it."""
    lines = [f"id: {entry_id}", f"date: {date}"] + [f"{k}: {v}" for k, v in fields.items()]
    text = "---\n" + "\n".join(lines) + "\n---\n" + body + "\n"
    rel = f"entries/{date[:4]}/{date[5:7]}/{entry_id}.md"
    path = wiki_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o444)
    sha = hashlib.sha256(text.encode()).hexdigest()
    with open(wiki_path / "log.md", "a") as fh:
        fh.write(f"{date}T09:00:00Z write {entry_id} sha256={sha} scope=shared path={rel}\n")
    return entry_id


def index_files(root: Path) -> dict[str, bytes]:
    """INDEX.md, index/<domain>.md and index/<domain>/<YYYY-MM>.md as name -> bytes, to compare
    a rebuild byte for byte."""
    files = {"INDEX.md": (root / "INDEX.md").read_bytes()}
    for path in sorted((root / "index").rglob("*.md")):
        files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


def remove_derived(root: Path) -> None:
    """Delete everything `llm-wiki index` rebuilds: .llm-wiki/, index/ and INDEX.md."""
    shutil.rmtree(root / ".llm-wiki")
    shutil.rmtree(root / "index")
    (root / "INDEX.md").unlink()
