"""access.yaml fails closed on what would quietly change who sees what (issue 13): a second
block for one reader, a key the tool does not know, a file others may write or someone else
owns. Each is refused with one line saying how to fix it."""

from __future__ import annotations

import os

import pytest

from conftest import write_args

ACCESS = """readers:
  bob:
    scopes: [team]
  carol:
    admin: true
"""


@pytest.fixture
def walled(cli, wiki_path):
    cli(*write_args("A team decision", scope="team"))
    cli(*write_args("A secret decision", scope="secret"))
    (wiki_path / "access.yaml").write_text(ACCESS)
    os.chmod(wiki_path / "access.yaml", 0o644)
    assert len(cli.json("--as", "bob", "list")["entries"]) == 1
    return wiki_path / "access.yaml"


def _refused(cli, *words, code=None):
    result = cli("--as", "bob", "list", code=code)
    assert result.exit_code in (1, 2)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for word in words:
        assert word in result.stderr, result.stderr
    assert "secret" not in result.stdout
    return result


def test_a_second_block_for_a_reader_is_refused(cli, walled):
    """The second `bob:` block (admin: true) silently won and made bob an admin."""
    walled.write_text(ACCESS + "  bob:\n    admin: true\n")
    _refused(cli, "'readers.bob' is given twice", "keep one")


@pytest.mark.parametrize(
    "text, words",
    [
        (ACCESS.replace("    scopes: [team]", "    scope: [team]"), ["unknown key 'scope'"]),
        (ACCESS + "  dave:\n    readonly: [team]\n", ["unknown key 'readonly'", "'dave'"]),
        (ACCESS + "admins: [bob]\n", ["unknown key 'admins'"]),
        (ACCESS.replace("admin: true", "admin: 'yes'"), ["admin of reader 'carol'"]),
    ],
)
def test_unknown_keys_are_refused(cli, walled, text, words):
    walled.write_text(text)
    _refused(cli, *words)


def test_a_world_writable_access_file_is_refused(cli, walled):
    os.chmod(walled, 0o666)
    _refused(cli, "world-writable", "chmod o-w", code=1)


def test_a_foreign_owned_access_file_is_refused(cli, walled, monkeypatch):
    if os.geteuid() == 0:  # root owns it: ask as if we were someone else
        monkeypatch.setattr(os, "geteuid", lambda: 4242)
        os.chown(walled, 4343, -1)
    else:  # pragma: no cover - CI runs as root
        pytest.skip("only root can give a file away")
    _refused(cli, "belongs to uid 4343", "chown", code=1)
