"""`llm-wiki verify`: edited, removed and unlogged entries are reported by id."""

from __future__ import annotations

import os

from conftest import write_args


def test_clean_wiki_verifies(cli):
    cli(*write_args())
    result = cli("verify")
    assert "Verified 1 entry: clean." in result.stdout


def test_edited_removed_and_unlogged_are_reported(cli, wiki_path):
    a = cli.json(*write_args("First"))
    b = cli.json(*write_args("Second"))
    c = cli.json(*write_args("Third"))
    edited = wiki_path / a["path"]
    os.chmod(edited, 0o644)
    edited.write_text(edited.read_text().replace("First", "First (quietly changed)"))
    (wiki_path / b["path"]).unlink()
    stray = wiki_path / "entries/2026/01/2026-01-01-added-by-hand-abcd.md"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_text(
        (wiki_path / c["path"]).read_text().replace(c["id"], "2026-01-01-added-by-hand-abcd")
    )
    result = cli.json("verify", code=1)
    kinds = {(f["kind"], f["id"]) for f in result["findings"]}
    assert kinds == {
        ("edited", a["id"]),
        ("removed", b["id"]),
        ("unlogged", "2026-01-01-added-by-hand-abcd"),
    }
    text = cli("verify", code=1).stdout
    assert f"edited: {a['id']}" in text and "3 findings" in text


def test_show_of_an_entry_mangled_by_hand_names_the_file_and_points_to_verify(cli, wiki_path):
    """Not the reader's mistake (exit 1, not 2), and one line saying which file and what next."""
    a = cli.json(*write_args("First"))
    path = wiki_path / a["path"]
    os.chmod(path, 0o644)
    path.write_text("garbage\n")
    result = cli("show", a["id"], code=1)
    assert result.stderr == (
        f"Error: {a['path']} no longer reads as an entry; run `llm-wiki verify` to see what "
        "changed.\n"
    )
    assert f"edited: {a['id']}" in cli("verify", code=1).stdout
