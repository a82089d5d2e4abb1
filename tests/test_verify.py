"""`llm-wiki verify`: edited, removed and unlogged entries are reported by id."""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import fewer, write_args


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


def test_a_removed_entry_is_reported_at_the_path_it_was_written_to(cli, wiki_path):
    a = cli.json(*write_args("First"))
    cli.json(*write_args("Second"))
    (wiki_path / a["path"]).unlink()
    result = cli.json("verify", code=1)
    assert result["checked"] == 2
    assert result["findings"] == [
        {
            "kind": "removed",
            "id": a["id"],
            "path": a["path"],
            "detail": result["findings"][0]["detail"],
        }
    ]


# verify streams log.md and reads write lines by one pattern (store.iter_writes): by property,
# what it reads is what the whole-file reader of before read, line for line.
_LOG_PIECES = [
    "2026-01-01T00:00:00Z write 2026-01-01-a-abcd sha256=" + "ab" * 32 + " scope=shared "
    "path=entries/2026/01/2026-01-01-a-abcd.md",
    "2026-01-01T00:00:00Z write 2026-01-01-b-abcd sha256=" + "cd" * 32 + ' scope="a b" '
    "path=entries/2026/01/2026-01-01-b-abcd.md",
    "2026-01-01T00:00:00Z write 2026-01-01-c-abcd sha256=x scope=team path=p extra=1",
    "2026-01-01T00:00:00Z write 2026-01-01-d-abcd",
    "2026-01-01T00:00:00Z write sha256=ab scope=s path=p",
    '2026-01-01T00:00:00Z write 2026-01-01-e-abcd sha256=ab scope=s path="p q"',
    "2026-01-01T00:00:00Z archive 2026-01-01-a-abcd archive=2026-01.tar.zst",
    "2026-01-01T00:00:00Z index",
    "not a log line",
    "2026-01-01T00:00:00Z write 2026-01-01-é-abcd sha256=ab scope=s path=é",
    "2026-01-01T00:00:00Z write 2026-01-01-f-abcd sha256=ab scope=s path=a\x1cb",
    "2026-01-01T00:00:00Z write 2026-01-01-g-abcd sha256=ab\tscope=s path=p",
    "2026-01-01T00:00:00Z write 2026-01-01-h-abcd sha256=ab scope=s path=p\x85q",
    "2026-01-01T00:00:00Z write 2026-01-01-i-abcd sha256=ab scope=s path=p extra",
    "2026-01-01T00:00:00Z  write 2026-01-01-j-abcd sha256=ab scope=s path=p",
    "",
]


def _old_read_log(data: bytes, start: int = 0):
    """log.md as read before it was streamed: the whole file, then splitlines."""
    from llm_wiki.store import parse_log_line

    offset = start
    out = []
    for raw in data[start:].splitlines(keepends=True):
        offset += len(raw)
        if not raw.endswith(b"\n"):
            break
        parsed = parse_log_line(raw.decode("utf-8", "replace").rstrip("\r\n"))
        if parsed is not None:
            out.append((offset, parsed))
    return out


@settings(max_examples=fewer(200), deadline=None)
@given(
    lines=st.lists(
        st.tuples(st.sampled_from(_LOG_PIECES), st.sampled_from(["\n", "\r\n", "\r", "\n\n", ""])),
        max_size=12,
    ),
    start=st.integers(0, 40),
)
def test_the_streamed_log_reads_as_the_whole_file_did(tmp_path_factory, lines, start):
    from llm_wiki import store
    from llm_wiki.wiki import Wiki

    root = tmp_path_factory.mktemp("log")
    data = "".join(text + end for text, end in lines).encode()
    (root / "log.md").write_bytes(data)
    wiki = Wiki(root)
    start = min(start, len(data))
    old = _old_read_log(data, start)
    assert list(store.read_log(wiki, start)) == old
    writes = [
        (p.subject, p.fields.get("sha256", ""), p.fields.get("scope", ""), p.fields.get("path", ""))
        for _, p in _old_read_log(data)
        if p.op == "write" and p.subject
    ]
    assert list(store.iter_writes(wiki)) == writes


_MORE_PIECES = [
    "2026-01-01T00:00:00Z write 2026-01-01-k-abcd sha256=" + "AB" * 32 + " scope=s path=p",
    "2026-01-01T00:00:00Z write 2026-01-01-l-abcd sha256=" + "ef" * 32 + " scope=a=b path=p",
    '2026-01-01T00:00:00Z write 2026-01-01-"m"-abcd sha256=' + "01" * 32 + " scope=s path=p",
    "2026-01-01T00:00:00Z write 2026-01-01-n-abcd sha256=" + "23" * 32 + " scope=s path=p=q",
    "2026-01-01T00:00:00Z write 2026-01-01-a-abcd sha256=" + "45" * 32 + " scope=other path=p",
    "2026-01-01T00:00:00Z write 2026-01-01-o-abcd sha256=" + "67" * 31 + " scope=s path=p",
    "2026-13-01T00:00:00Z write 2026-01-01-p-abcd sha256=" + "89" * 32 + " scope=s path=p",
    "2026-01-01T00:00:00Z write 2026-01-01-q-abcd sha256=" + "ab" * 32 + " scope=s path=p ",
    "2026-01-01T00:00:00Z write 2026-01-01-r-abcd sha256=" + "cd" * 32 + " scope= path=p",
    "2026-01-01T00:00:00Z write 2026-01-01-s\x00-abcd sha256=" + "ab" * 32 + " scope=s path=p",
    "2026-01-01T00:00:00Z write 2026-01-01-s-abcd sha256=" + "cd" * 32 + " scope=s path=p",
]


@settings(max_examples=fewer(300), deadline=None)
@given(
    lines=st.lists(
        st.tuples(
            st.sampled_from(_LOG_PIECES + _MORE_PIECES),
            st.sampled_from(["\n", "\r\n", "\r", "\n\n", ""]),
        ),
        max_size=12,
    ),
    start=st.integers(0, 400),
    chunk=st.sampled_from([1, 7, 64, 1 << 18]),
)
def test_verify_reads_the_write_lines_parse_log_line_reads(tmp_path_factory, lines, start, chunk):
    """verify's reader of log.md (one regex scan of each chunk, the other lines through
    parse_log_line) finds each entry's last sha256 and scope as the line-by-line parse does, and
    stops where it stops, from any starting line and at any chunk size."""
    from llm_wiki import verify as verify_module
    from llm_wiki.wiki import Wiki

    root = tmp_path_factory.mktemp("log")
    data = "".join(text + end for text, end in lines).encode()
    (root / "log.md").write_bytes(data)
    starts = [0] + [offset for offset, _ in _old_read_log(data)]
    begin = starts[start % len(starts)]
    old = _old_read_log(data, begin)
    expected = {}
    for _, p in old:
        if p.op == "write" and p.subject:
            expected[p.subject] = (
                verify_module._digest(p.fields.get("sha256", "")),
                p.fields.get("scope", "").encode(),
            )
    log = verify_module._Log(Wiki(root))
    log.offset = begin
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(verify_module, "LOG_CHUNK", chunk)
        log.follow()
    log.seal()
    got = {}
    for key in expected:
        record = log.get(key.encode())
        assert record is not None, key
        got[key] = record[1:]
    assert got == expected
    assert len(log.items) + len(log.extra) == len(expected)
    assert log.offset == _end_of_lines(data, begin)


def _end_of_lines(data: bytes, start: int) -> int:
    """Where the reader stops: past every whole line (a later follow starts there)."""
    offset = start
    for raw in data[start:].splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            break
        offset += len(raw)
    return offset


hand_steps = st.lists(
    st.tuples(
        st.sampled_from(
            ["write", "edit", "same-size edit", "remove", "restore", "stray", "twin", "touch"]
        ),
        st.integers(0, 20),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=fewer(15), deadline=None)
@given(steps=hand_steps, trusted=st.booleans())
def test_verify_since_finds_what_verify_finds(tmp_path_factory, steps, trusted):
    """A site rebuild checks again only what changed since the last build (verify_since): after
    any run of writes and hand changes (an edit, one that keeps the size and puts the mtime back,
    a file deleted and put back, a stray copy, a copy under the same name in another month, a
    touch) it reports what the whole verify does, whether the last build's records are trusted
    or not (a build within 2 s of a write: each file is hashed again in place, and a file gone
    must still be found among records remade so)."""
    from conftest import Cli
    from llm_wiki import store
    from llm_wiki.access import Viewer
    from llm_wiki.create import init_wiki
    from llm_wiki.verify import HashCache, logged_entries, verify, verify_since
    from llm_wiki.wiki import Wiki

    root = tmp_path_factory.mktemp("since") / "wiki"
    init_wiki(root)
    cli = Cli(root)
    for i in range(3):
        cli(*write_args(f"Entry number {i}"))
    wiki, viewer = Wiki(root), Viewer.everyone()
    removed: list[tuple[os.PathLike[str], bytes]] = []

    def logged_now() -> tuple[dict, int, list]:
        lines, offset = [], 0
        for end, line in store.read_log(wiki):
            lines.append(line)
            offset = end
        return logged_entries(lines), offset, lines

    logged, offset, lines = logged_now()
    hashes = HashCache()
    last = verify(wiki, viewer, logged=logged, logged_to=offset, hashes=hashes)

    def trust_all() -> None:
        # every record trusted, as a build made seconds later trusts them; the sleep keeps a
        # hand change out of the clock tick its file was hashed in (the racy case RACY_NS is for)
        hashes.finish(os.stat(wiki.log_path).st_mtime_ns + 10 * HashCache.RACY_NS if trusted else 0)
        time.sleep(0.02)

    trust_all()
    files = hashes.files
    for n, (kind, k) in enumerate(steps):
        paths = sorted((root / "entries").rglob("*.md"))
        path = paths[k % len(paths)] if paths else None
        if kind == "write":
            cli(*write_args(f"Written at step {n}"))
        elif path is not None and kind in ("edit", "same-size edit"):
            st_ = path.stat()
            os.chmod(path, 0o644)
            data = path.read_bytes()
            new = data.replace(b"Entry", b"Entre") if kind == "same-size edit" else data + b"x\n"
            path.write_bytes(new)
            if kind == "same-size edit":
                os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns))
        elif path is not None and kind == "remove":
            removed.append((path, path.read_bytes()))
            path.unlink()
        elif kind == "restore" and removed:
            back, data = removed.pop()
            back.write_bytes(data)
        elif path is not None and kind == "stray":
            path.with_name(f"{path.stem[:10]}-stray-{n}.md").write_bytes(path.read_bytes())
        elif path is not None and kind == "twin":  # the same file in a month before or after
            twin = root / "entries" / ("2001/01" if k % 2 else "2099/12") / path.name
            twin.parent.mkdir(parents=True, exist_ok=True)
            twin.write_bytes(path.read_bytes())
        elif path is not None and kind == "touch":
            os.utime(path)
        logged, new_offset, now_lines = logged_now()
        named = {line[2] for line in now_lines[len(lines) :] if line[1] == "write" and line[2]}
        lines, offset = now_lines, new_offset
        whole = verify(wiki, viewer, logged=logged, logged_to=offset, hashes=HashCache(files))
        hashes = HashCache(files)
        got = verify_since(
            wiki, viewer, last, logged=logged, logged_to=offset, hashes=hashes, named=named
        )
        if got is None:  # it could not say (a stray file): the caller runs verify
            hashes = HashCache(files)
            got = verify(wiki, viewer, logged=logged, logged_to=offset, hashes=hashes)
        assert got == whole, (kind, got, whole)
        trust_all()
        files, last = hashes.files, got


def _three_entries_verified(tmp_path, finish_at):
    """A wiki of three written entries, verified once into a HashCache finished at
    ``finish_at`` (None: late enough that every record is trusted; 0: none is): the root, the
    ids, the wiki, the viewer, log.md's records and end, the result and the records."""
    from conftest import Cli
    from llm_wiki import store
    from llm_wiki.access import Viewer
    from llm_wiki.create import init_wiki
    from llm_wiki.verify import HashCache, logged_entries, verify
    from llm_wiki.wiki import Wiki

    root = tmp_path / "wiki"
    init_wiki(root)
    cli = Cli(root)
    ids = [cli.json(*write_args(f"Entry number {i}"))["id"] for i in range(3)]
    wiki, viewer = Wiki(root), Viewer.everyone()
    lines, offset = [], 0
    for end, line in store.read_log(wiki):
        lines.append(line)
        offset = end
    logged = logged_entries(lines)
    hashes = HashCache()
    last = verify(wiki, viewer, logged=logged, logged_to=offset, hashes=hashes)
    if finish_at is None:
        finish_at = os.stat(wiki.log_path).st_mtime_ns + 10 * HashCache.RACY_NS
    hashes.finish(finish_at)
    return root, ids, wiki, viewer, logged, offset, last, dict(hashes.files)


def test_verify_since_hashes_again_a_file_whose_record_is_not_trusted(tmp_path):
    """A record made in the clock tick its file last changed in is not trusted (HashCache): the
    file is hashed again. Holding the recorded bytes, its entry keeps its last findings without
    log.md's records being read (a build just after a write); holding others under the same
    stat (an edit in that tick), verify_since finds what the whole verify finds."""
    from collections.abc import Mapping

    from llm_wiki.verify import HashCache, verify, verify_since

    # none trusted: as a build within 2 s of the writes leaves them
    root, ids, wiki, viewer, logged, offset, last, files = _three_entries_verified(tmp_path, 0)
    assert files and not any(v[5] for v in files.values())

    class Watched(Mapping):  # log.md's records, counting the look-ups
        asked: list[str] = []

        def __getitem__(self, key):
            self.asked.append(key)
            return logged[key]

        def __iter__(self):
            self.asked.append("*")
            return iter(logged)

        def __len__(self):
            return len(logged)

    watched = Watched()
    again = HashCache(files)
    got = verify_since(
        wiki, viewer, last, logged=watched, logged_to=offset, hashes=again, named=set()
    )
    assert got == last and not watched.asked
    assert not again.changed and {r: v[:5] for r, v in again.files.items()} == {
        r: v[:5] for r, v in files.items()
    }

    # an edit in that tick: the same stat as the record's, other bytes
    rel = next(r for r in files if ids[1] in r)
    path = root / rel
    os.chmod(path, 0o644)
    path.write_bytes(path.read_bytes().replace(b"Entry", b"Entre"))
    st_ = path.stat()
    files[rel] = (*HashCache.key(st_), files[rel][4], False)
    whole = verify(wiki, viewer, logged=logged, logged_to=offset, hashes=HashCache(files))
    again = HashCache(files)
    got = verify_since(
        wiki, viewer, last, logged=logged, logged_to=offset, hashes=again, named=set()
    )
    assert got == whole and any(f.id == ids[1] for f in got.findings)
    assert again.changed == {rel}


@pytest.mark.parametrize("trusted", [True, False])
def test_verify_since_finds_a_file_gone_when_another_came_in_its_place(tmp_path, trusted):
    """Files gone are found by count (the last build's records less those kept or checked
    again): one file removed and one added by hand before the same rebuild must not cancel out,
    whether the records were trusted or are remade in place."""
    from llm_wiki.verify import HashCache, verify, verify_since

    root, ids, wiki, viewer, logged, offset, last, files = _three_entries_verified(
        tmp_path, None if trusted else 0
    )
    gone = root / next(r for r in files if ids[0] in r)
    came = root / next(r for r in files if ids[1] in r)
    gone.unlink()
    twin = root / "entries" / "2001" / "01" / came.name  # a logged id's file in another month
    twin.parent.mkdir(parents=True)
    twin.write_bytes(came.read_bytes())
    whole = verify(wiki, viewer, logged=logged, logged_to=offset, hashes=HashCache(files))
    got = verify_since(
        wiki, viewer, last, logged=logged, logged_to=offset, hashes=HashCache(files), named=set()
    )
    assert any(f.kind == "removed" and f.id == ids[0] for f in whole.findings)
    assert got == whole, (got, whole)


def test_a_wiki_outside_git_runs_no_git_whatever_git_variables_are_set(cli, wiki_path, monkeypatch):
    """Only a .git up the tree, GIT_DIR or GIT_WORK_TREE can put the wiki in a repository: with
    an identity or a CA file in GIT_ variables (as the tests and many shells have), verify asks
    git nothing for a wiki outside one; with GIT_DIR set it asks."""
    import llm_wiki.verify as verify

    cli(*write_args("A decision outside git"))
    asked: list[tuple[str, ...]] = []
    monkeypatch.setattr(verify, "_git_out", lambda wiki, *args: asked.append(args))
    if any((p / ".git").exists() for p in (wiki_path.resolve(), *wiki_path.resolve().parents)):
        pytest.skip("the test's folder lies in a git repository")
    monkeypatch.setenv("GIT_SSL_CAINFO", "/etc/ssl/certs/ca-certificates.crt")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Wiki Tester")
    assert cli.json("verify")["ok"]
    assert asked == []
    monkeypatch.setenv("GIT_DIR", str(wiki_path / "elsewhere.git"))
    assert verify._in_git(verify.Wiki(wiki_path)) is False
    assert asked == [("rev-parse", "--is-inside-work-tree")]
