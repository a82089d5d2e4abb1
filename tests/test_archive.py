"""`llm-wiki archive`: long-superseded entries roll into a tar.zst that reads transparently,
opens with the standard tools, has deterministic bytes, and survives a SIGKILL at every step."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess

import pytest

from conftest import Cli, index_files, remove_derived, run_module, subprocess_env, write_args


def pair(cli, monkeypatch, old_day, new_day, summary, domain="platform"):
    """An entry written on ``old_day`` and the one superseding it on ``new_day``."""
    monkeypatch.setenv("LLM_WIKI_NOW", old_day)
    old = cli.json(*write_args(summary, domain=domain, tag=[domain]))["id"]
    monkeypatch.setenv("LLM_WIKI_NOW", new_day)
    new = cli.json(*write_args(f"{summary}, revised", domain=domain, supersedes=old))["id"]
    return old, new


def archives(wiki_path):
    return sorted((wiki_path / "archive").glob("*.tar.zst"))


def archive_lines(wiki_path):
    return [ln for ln in (wiki_path / "log.md").read_text().splitlines() if " archive " in ln]


def test_selection_follows_the_clock_and_the_superseding_entrys_date(cli, wiki_path, monkeypatch):
    a, _ = pair(cli, monkeypatch, "2026-01-05", "2026-01-10", "Use Postgres for the ledger")
    # written early, superseded late: the superseding entry's date counts
    c, _ = pair(cli, monkeypatch, "2026-01-05", "2026-04-01", "Run one queue per service")
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-03-01")
    cli(*write_args("Page on-call only for customer impact", domain="ops"))

    monkeypatch.setenv("LLM_WIKI_NOW", "2026-04-10")  # exactly 90 days after 2026-01-10
    out = cli.json("archive", "--dry-run")
    assert out["archived"] == [] and out["cutoff"] == "2026-01-10" and out["dry_run"]
    assert cli.json("archive", "--dry-run", "--older-than", "30d")["archived"] == [a]
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-04-11")
    assert cli.json("archive", "--dry-run")["archived"] == [a]
    settings = wiki_path / "settings.yaml"
    settings.write_text(settings.read_text().replace("older_than_days: 90", "older_than_days: 200"))
    assert "Nothing to archive" not in cli("archive", "--dry-run").stdout
    assert cli.json("archive", "--dry-run")["archived"] == []
    assert cli("archive").stdout.startswith("Nothing to archive")
    assert not (wiki_path / "archive").exists()
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-12-01")
    assert cli.json("archive", "--dry-run", "--older-than", "90")["archived"] == sorted([a, c])
    assert cli("archive", "--older-than", "ninety", code=2).stderr.startswith("Error: --older")


def test_archived_entries_read_transparently(cli, wiki_path, monkeypatch):
    old, new = pair(cli, monkeypatch, "2026-01-05", "2026-01-10", "Use Postgres for the ledger")
    loose = wiki_path / f"entries/2026/01/{old}.md"
    original = loose.read_bytes()
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    out = cli.json("archive")
    name = out["archive"]
    assert out["archived"] == [old] and name.startswith("archive/2026-05-")
    assert out["entry_bytes"] == len(original) and out["bytes"] > 0
    assert not loose.exists() and (wiki_path / f"entries/2026/01/{new}.md").exists()
    assert stat.S_IMODE((wiki_path / name).stat().st_mode) == 0o444
    assert archive_lines(wiki_path)[0].split()[1:3] == ["archive", old]

    shown = cli("show", old).stdout
    assert shown.startswith(original.decode())
    assert f"[superseded by {new}; archived in {name}]" in shown
    assert cli.json("show", old)["text"] == original.decode()
    listed = cli.json("list", "--status", "superseded")["entries"]
    assert [(e["id"], e["archive"]) for e in listed] == [(old, name)]
    assert cli.json("stats")["archived"] == 1
    assert "Archived: 1" in (wiki_path / "INDEX.md").read_text()
    domain = (wiki_path / "index/platform.md").read_text().splitlines()
    line = [ln for ln in domain if f"[{old}]" in ln]
    assert line[0].endswith(f"· archived in {name}")
    assert "Verified 2 entries: clean." in cli("verify").stdout
    cli("index", "--check")

    # the catalog and index files rebuild from the archive byte for byte
    before = index_files(wiki_path)
    remove_derived(wiki_path)
    cli("index")
    assert index_files(wiki_path) == before
    cli("index", "--check")
    assert cli.json("show", old)["archive"] == name


def test_archive_opens_with_zstd_and_tar_and_has_deterministic_bytes(
    cli, wiki_path, monkeypatch, tmp_path
):
    ids = [
        pair(cli, monkeypatch, "2026-01-05", "2026-01-10", f"Decision number {n}")[0]
        for n in range(3)
    ]
    twin = tmp_path / "twin"
    shutil.copytree(wiki_path, twin)
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    originals = {i: (wiki_path / f"entries/2026/01/{i}.md").read_bytes() for i in ids}
    name = cli.json("archive")["archive"]
    path = wiki_path / name

    listing = subprocess.run(
        f"zstd -dc '{path}' | tar -tvf -", shell=True, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert [ln.split()[-1] for ln in listing] == sorted(f"entries/2026/01/{i}.md" for i in ids)
    assert all(ln.startswith("-r--r--r-- 0/0 ") and " 2026-01-05 00:00 " in ln for ln in listing)
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["tar", "--zstd", "-xf", str(path), "-C", str(out)], check=True)
    for entry_id, data in originals.items():
        assert (out / f"entries/2026/01/{entry_id}.md").read_bytes() == data
    subprocess.run(["zstd", "-tq", str(path)], check=True)

    # the same members give the same bytes and the same name, on another machine too
    assert Cli(twin).json("archive")["archive"] == name
    assert (twin / name).read_bytes() == path.read_bytes()


def test_each_entry_is_read_from_its_own_frame(cli, wiki_path, monkeypatch, tmp_path):
    from llm_wiki import archive_file as archive
    from llm_wiki.catalog import read_catalog
    from llm_wiki.wiki import Wiki

    monkeypatch.setattr(archive, "FRAME_BYTES", 4096)
    ids = [
        pair(cli, monkeypatch, "2026-01-05", "2026-01-10", f"Decision {n} " + "words " * 150)[0]
        for n in range(7)
    ]
    long_id = "2026-01-05-" + "a-very-long-explicit-id-" * 6 + "end"  # path > 100: a pax header
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-01-05")
    cli(*write_args("Explicit id", id=long_id))
    cli(*write_args("Explicit id, revised", supersedes=long_id))
    ids.append(long_id)
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    name = cli.json("archive")["archive"]
    wiki = Wiki(wiki_path)
    with read_catalog(wiki) as catalog:
        rows = [catalog.get(i, catalog_viewer()) for i in ids]
    frames = {row.archive_at.split("+")[0] for row in rows}
    assert len(frames) > 2  # several independent frames ...
    listing = subprocess.run(
        f"zstd -dc '{wiki_path / name}' | tar -tf -", shell=True, capture_output=True, text=True
    )
    assert listing.returncode == 0 and len(listing.stdout.split()) == 8  # ... one tar stream
    for row in rows:
        data = archive.read_member(wiki, name, row.path, row.archive_at)
        assert data.decode().startswith(f"---\nid: {row.id}\n")
    # the locators a scan finds are the ones the archiver recorded
    shutil.rmtree(wiki_path / ".llm-wiki")
    cli("index")
    with read_catalog(wiki) as catalog:
        assert [catalog.get(i, catalog_viewer()).archive_at for i in ids] == [
            r.archive_at for r in rows
        ]
    # a wrong locator falls back to reading the archive through
    assert archive.read_member(wiki, name, rows[0].path, rows[5].archive_at) == (
        archive.read_member(wiki, name, rows[0].path)
    )


def catalog_viewer():
    from llm_wiki.access import Viewer

    return Viewer.everyone()


def test_catch_up_archives_everything_due_and_a_second_run_changes_nothing(
    cli, wiki_path, monkeypatch
):
    due = [
        pair(cli, monkeypatch, f"2025-{9 + m}-02", f"2026-0{m}-03", f"Decision of month {m}")[0]
        for m in (1, 2, 3)
    ]
    pair(cli, monkeypatch, "2026-06-01", "2026-06-02", "Too recent to archive")
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-07-15")  # off on the 1st of April, May, June, July
    out = cli.json("archive")
    assert out["archived"] == due
    snapshot = {p: p.read_bytes() for p in (wiki_path / "archive").iterdir()}
    log = (wiki_path / "log.md").read_bytes()
    second = cli("archive")
    assert second.stdout.startswith("Nothing to archive")
    assert {p: p.read_bytes() for p in (wiki_path / "archive").iterdir()} == snapshot
    assert (wiki_path / "log.md").read_bytes() == log
    assert not (wiki_path / "entries/2025").exists()  # emptied folders go
    assert cli.json("stats")["entries"] == 8


def test_a_stale_catalog_row_still_reads_after_its_file_was_archived(cli, wiki_path, monkeypatch):
    from llm_wiki.catalog import read_catalog
    from llm_wiki.reads import read_entry
    from llm_wiki.wiki import Wiki

    old, _ = pair(cli, monkeypatch, "2026-01-05", "2026-01-10", "Use Postgres for the ledger")
    wiki = Wiki(wiki_path)
    with read_catalog(wiki) as catalog:
        row = catalog.get(old, catalog_viewer())  # a reader holds this row ...
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    cli("archive")  # ... while the archiver moves the file
    entry, text = read_entry(wiki, row)
    assert entry.id == old and text.startswith("---\n")


def test_a_tampered_entry_stays_loose_and_verify_tells(cli, wiki_path, monkeypatch):
    a, _ = pair(cli, monkeypatch, "2026-01-05", "2026-01-10", "Use Postgres for the ledger")
    b, _ = pair(cli, monkeypatch, "2026-01-05", "2026-01-10", "Use Kafka for events")
    path = wiki_path / f"entries/2026/01/{b}.md"
    path.chmod(0o644)
    path.write_text(path.read_text().replace("Use Kafka", "Use RabbitMQ"))
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    result = cli("archive")
    assert "Archived 1 entry" in result.stdout
    assert f"warning: left {b} in entries/: its file differs from the sha256" in result.stderr
    assert path.exists() and not (wiki_path / f"entries/2026/01/{a}.md").exists()
    findings = cli.json("verify", code=1)["findings"]
    assert [(f["kind"], f["id"]) for f in findings] == [("edited", b)]


@pytest.mark.parametrize("how", ["truncated", "corrupted"])
def test_a_broken_archive_is_reported_by_name(cli, wiki_path, monkeypatch, how):
    old, _ = pair(cli, monkeypatch, "2026-01-05", "2026-01-10", "Use Postgres for the ledger")
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    name = cli.json("archive")["archive"]
    path = wiki_path / name
    data = path.read_bytes()
    path.chmod(0o644)
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:
        middle = len(data) // 2
        flipped = bytes(b ^ 0xFF for b in data[middle : middle + 8])
        path.write_bytes(data[:middle] + flipped + data[middle + 8 :])
    result = cli.json("verify", code=1)
    kinds = {(f["kind"], f["path"]) for f in result["findings"]}
    assert ("unreadable-archive", name) in kinds
    text = cli("verify", code=1).stdout
    assert f"unreadable-archive: {name}" in text
    assert name in cli("show", old, code=1).stderr
    shutil.rmtree(wiki_path / ".llm-wiki")
    assert name in cli("index").stderr  # a rebuild warns and goes on
    assert cli.json("stats")["entries"] == 1


def test_the_same_entry_in_two_archives_is_one_entry(cli, wiki_path, monkeypatch, tmp_path):
    a, _ = pair(cli, monkeypatch, "2026-01-05", "2026-01-10", "Use Postgres for the ledger")
    b, _ = pair(cli, monkeypatch, "2026-02-05", "2026-02-10", "Use Kafka for events")
    other = tmp_path / "other"
    shutil.copytree(wiki_path, other)
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-04-20")  # only a is due here
    first = cli.json("archive")["archive"]
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-20")  # a and b are due on the other machine
    second = Cli(other).json("archive")["archive"]
    assert first != second
    shutil.copy(other / second, wiki_path / second)  # as a sync would bring it
    cli("index")
    assert cli.json("stats")["entries"] == 4
    assert cli.json("verify")["ok"]
    cli("index", "--check")
    assert cli.json("show", a)["archive"] == min(first, second)
    assert cli.json("archive")["archived"] == [b]  # b is still loose here: archived again


# --------------------------------------------------------------------------- SIGKILL


STEPS = [
    "archive-before-rename",
    "archive-after-rename",
    "archive-after-log",
    "archive-between-removals",
]


@pytest.mark.parametrize("step", STEPS)
def test_sigkill_at_each_step_then_a_rerun_loses_and_duplicates_nothing(
    cli, wiki_path, monkeypatch, step
):
    due = [
        pair(cli, monkeypatch, "2026-01-05", "2026-01-10", f"Decision number {n}")[0]
        for n in range(3)
    ]
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    cli(*write_args("An active decision", domain="ops"))
    everything = [e["id"] for e in cli.json("list", "--limit", "100")["entries"]]
    env = subprocess_env(
        LLM_WIKI_DIR=str(wiki_path), LLM_WIKI_NOW="2026-05-02", LLM_WIKI_CRASH_AT=step
    )
    proc = run_module("archive", env=env)
    assert proc.returncode == -9, proc.stderr

    # killed: every entry still reads, whichever step it died at
    for entry_id in everything:
        cli("show", entry_id)
    assert cli.json("stats")["entries"] == 7
    crashed = len(archives(wiki_path))
    assert crashed == (0 if step == "archive-before-rename" else 1)

    env.pop("LLM_WIKI_CRASH_AT")
    proc = run_module("archive", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    rerun = json.loads(proc.stdout)
    if step in ("archive-after-log", "archive-between-removals"):
        assert rerun["archived"] == [] and rerun["finished"]
    else:
        assert rerun["archived"] == due

    assert len(archives(wiki_path)) == 1  # the re-run wrote the very same archive
    lines = archive_lines(wiki_path)
    assert sorted(ln.split()[2] for ln in lines) == sorted(due)  # one line each
    loose = {p.stem for p in (wiki_path / "entries").rglob("*.md")}
    assert loose.isdisjoint(due) and len(loose) == 4
    assert cli.json("verify")["ok"]
    cli("index", "--check")
    assert sorted(e["id"] for e in cli.json("list", "--limit", "100")["entries"]) == sorted(
        everything
    )
    for entry_id in due:
        assert cli.json("show", entry_id)["archive"] == lines[0].split("archive=")[1].split()[0]
    assert "Nothing to archive" in run_module("archive", env=env).stdout.decode()


# --------------------------------------------------------------------------- the job


def test_wiki_archive_job_under_dash_and_env_i(cli, wiki_path, monkeypatch):
    from test_scripts import STAMP, run_script, running

    old, _ = pair(cli, monkeypatch, "2026-01-05", "2026-01-10", "Use Postgres for the ledger")
    env = {"LLM_WIKI_DIR": wiki_path, "LLM_WIKI_NOW": "2026-05-02"}
    proc = run_script("wiki-archive", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Archived 1 entry into archive/2026-05-" in proc.stdout
    assert len(STAMP.findall(proc.stderr)) == 2 and "done (exit 0)" in proc.stderr
    assert cli.json("show", old)["archive"]
    proc = run_script("wiki-archive", env=env)  # a second run changes nothing
    assert proc.returncode == 0 and "Nothing to archive" in proc.stdout

    lock = wiki_path / ".llm-wiki/jobs/wiki-archive.lock"
    lock.mkdir(parents=True)
    with running("wiki-archive") as pid:  # an overlapping run holds the lock
        (lock / "pid").write_text(str(pid))
        proc = run_script("wiki-archive", env=env)
    assert proc.returncode == 0 and "holds the lock; exiting" in proc.stderr
    assert proc.stdout == ""


def test_an_archive_copy_that_differs_from_log_md_is_reported(cli, wiki_path, monkeypatch):
    from llm_wiki import archive_file as archive

    old, _ = pair(cli, monkeypatch, "2026-01-05", "2026-01-10", "Use Postgres for the ledger")
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    rel = f"entries/2026/01/{old}.md"
    data = (wiki_path / rel).read_bytes()
    name = cli.json("archive")["archive"]
    path = wiki_path / name
    path.chmod(0o644)
    with open(path, "wb") as fh:  # a well-formed archive whose copy was edited
        writer = archive.Writer(fh)
        writer.add(rel, data.replace(b"Use Postgres", b"Use Oracle"), "2026-01-05")
        writer.finish()
    findings = cli.json("verify", code=1)["findings"]
    assert [(f["kind"], f["id"], f["path"]) for f in findings] == [
        ("archive-mismatch", old, f"{name}:{rel}")
    ]


def test_a_synced_archive_member_cannot_name_a_file_outside_the_wiki(cli, wiki_path, tmp_path):
    """Archives and log.md come from other clones. A member named entries/../../x.md, logged as
    archived, became a catalog row with that path, and the next archive run "finished" it by
    removing <wiki>/../x.md: any .md file next to the wiki (or further up) could be deleted."""
    import hashlib

    from llm_wiki.archive_file import Writer as _Writer

    victim = tmp_path / "notes.md"
    victim.write_text("my own notes, not the wiki's\n")
    text = "---\nid: notes\ntype: incident\ndate: 2026-01-02\ndomain: ops\nsummary: s\n---\n"
    rel = "entries/../../notes.md"
    (wiki_path / "archive").mkdir()
    name = "archive/2026-01-000000000000.tar.zst"
    with open(wiki_path / name, "wb") as fh:
        writer = _Writer(fh)
        writer.add(rel, text.encode(), "2026-01-02")
        writer.finish()
    sha = hashlib.sha256(text.encode()).hexdigest()
    with open(wiki_path / "log.md", "a") as fh:
        fh.write(f"2026-01-02T09:00:00Z write notes sha256={sha} scope=shared path={rel}\n")
        fh.write(f"2026-01-03T09:00:00Z archive notes archive={name} sha256={sha}\n")
    cli("index")
    cli("archive")
    assert victim.read_text() == "my own notes, not the wiki's\n"
    assert cli.json("list")["total"] == 0
