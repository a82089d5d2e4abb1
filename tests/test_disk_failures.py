"""A full disk, a read-only folder, a file-size limit: one ``Error:`` line that says what to do,
never a traceback, and nothing half-recorded (issue 13)."""

from __future__ import annotations

import errno
import os
import resource
import sqlite3
import subprocess
import sys

import pytest

from conftest import SRC, subprocess_env, write_args
from test_hostile import _state


def _one_error_line(result, *words):
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_while_logging_takes_the_entry_back(cli, wiki_path, monkeypatch):
    cli(*write_args("A first decision"))
    before = _state(wiki_path)
    monkeypatch.setattr(os, "write", _no_space)
    result = cli(*write_args(), code=1)
    monkeypatch.undo()
    _one_error_line(result, "nothing was recorded", "no space left", "free some space")
    assert _state(wiki_path) == before
    assert not list(wiki_path.rglob("*.tmp"))
    cli("verify")  # no "unlogged" entry left behind
    assert cli.json(*write_args())["created"] is True  # and the retry records it


def test_a_full_disk_while_creating_the_file(cli, wiki_path, monkeypatch):
    cli(*write_args("A first decision"))
    before = _state(wiki_path)
    monkeypatch.setattr(os, "fsync", _no_space)
    result = cli(*write_args(), code=1)
    monkeypatch.undo()
    _one_error_line(result, "no space left")
    assert _state(wiki_path) == before and not list(wiki_path.rglob("*.tmp"))


def test_a_read_only_month_folder(cli, wiki_path, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02T10:00:00Z")
    cli(*write_args("A first decision"))
    month = wiki_path / "entries" / "2026" / "05"
    before = _state(wiki_path)
    os.chmod(month, 0o555)
    if os.geteuid() == 0:  # root writes anyway: make the link fail as it would for a user

        def denied(*args, **kwargs):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(month))

        monkeypatch.setattr(os, "link", denied)
    try:
        result = cli(*write_args(), code=1)
    finally:
        os.chmod(month, 0o755)
    _one_error_line(result, "nothing was recorded", "permission denied")
    assert _state(wiki_path) == before


def test_a_file_size_limit_is_an_error_not_a_kill(cli, wiki_path, tmp_path):
    """RLIMIT_FSIZE: the kernel sends SIGXFSZ (which kills) and then fails write with EFBIG."""
    cli(*write_args("A first decision"))
    before = _state(wiki_path)
    body = tmp_path / "body.md"
    body.write_text("b" * 200_000)
    limit = 100_000

    def cap():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run(
        [sys.executable, "-m", "llm_wiki", "--wiki", str(wiki_path), *write_args()]
        + ["--body-file", str(body)],
        env=subprocess_env(PYTHONPATH=str(SRC)),
        capture_output=True,
        text=True,
        preexec_fn=cap,
        timeout=60,
    )
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("Error: ") and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "file-size limit" in proc.stderr
    assert _state(wiki_path) == before and not list(wiki_path.rglob("*.tmp"))


@pytest.mark.parametrize("headroom", [20, 300, 5_000, 40_000, 150_000])
def test_a_file_size_limit_anywhere_in_the_write(cli, wiki_path, headroom):
    """Whichever file the limit stops (the entry, log.md, the catalog, an index file), the write
    either succeeds whole or fails with one line and leaves everything as it was."""
    cli(*write_args("A first decision"))
    before = _state(wiki_path)
    limit = max(p.stat().st_size for p in wiki_path.rglob("*") if p.is_file()) + headroom

    def cap():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run(
        [sys.executable, "-m", "llm_wiki", "--wiki", str(wiki_path), *write_args()],
        env=subprocess_env(PYTHONPATH=str(SRC)),
        capture_output=True,
        text=True,
        preexec_fn=cap,
        timeout=60,
    )
    if proc.returncode == 0:
        assert "Recorded" in proc.stdout
    else:
        assert proc.returncode == 1, (proc.returncode, proc.stderr)
        assert proc.stderr.startswith("Error: ") and len(proc.stderr.splitlines()) == 1
        assert "Traceback" not in proc.stderr
        assert _state(wiki_path) == before, proc.stderr
    assert not list(wiki_path.rglob("*.tmp"))
    cli("verify")


def test_list_on_a_full_disk_says_the_disk_is_full(cli, wiki_path, monkeypatch):
    """It said "check permissions"; and a full disk must not make the catalog be dropped."""
    cli(*write_args())
    catalog = wiki_path / ".llm-wiki" / "catalog.sqlite3"
    assert catalog.exists()

    def full(*args, **kwargs):
        exc = sqlite3.OperationalError("database or disk is full")
        exc.sqlite_errorname = "SQLITE_FULL"
        raise exc

    import importlib

    import llm_wiki.catalog as catalog_package

    refresh_module = importlib.import_module("llm_wiki.catalog.refresh")  # loaded when stale
    monkeypatch.setattr(refresh_module, "refresh", full)
    monkeypatch.setattr(catalog_package, "is_fresh", lambda c: False)
    result = cli("list", code=1)
    _one_error_line(result, "no space left")
    assert "permissions" not in result.stderr
    assert catalog.exists()


@pytest.mark.parametrize(
    "cursor",
    [
        "eyJvIjogMWU0MDAsICJmIjogIiJ9",  # {"o": 1e400, "f": ""}: int(inf) overflowed
        "eyJvIjogMTAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMCwgImYiOiAiIn0",  # a 28-digit offset
        "W10",  # []
        "bnVsbA",  # null
        "%%%",
        "",
    ],
)
def test_a_bad_mcp_cursor_is_a_tool_error(wiki_path, cursor):
    import anyio
    from mcp import Client

    from llm_wiki.access import Viewer
    from llm_wiki.mcp_server import build_server
    from llm_wiki.wiki import Wiki

    server = build_server(Wiki(wiki_path), Viewer.everyone())

    async def main():
        async with Client(server) as client:
            return await client.call_tool("wiki_list", {"cursor": cursor, "limit": 3})

    result = anyio.run(main)
    text = result.content[0].text if result.content else ""
    if cursor:
        assert result.is_error and "cursor" in text and "Traceback" not in text, text
    else:
        assert not result.is_error, text  # an empty cursor is no cursor
