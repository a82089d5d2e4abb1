"""The archive file format: ``archive/YYYY-MM-<hash>.tar.zst``, written and read.

An archive is one ordinary tar stream (``zstd -dc FILE | tar -t`` lists it), compressed as a
sequence of independent zstd frames of about a megabyte, each holding whole members. The catalog
keeps each archived entry's *locator* (where its frame starts, how far into the frame's data its
tar header is), so reading one entry decompresses one frame, not the archive; a scan of the
archive rebuilds the locators. The bytes are deterministic — members sorted by path, fixed tar
metadata (mtime = the entry's date, mode 0444, uid/gid 0, no user names), a fixed zstd level — so
the same members give the same file on every machine and two machines never write conflicting
archives. Reading and writing stream: neither holds a whole archive in memory.

Importing this module loads tarfile and zstandard; the commands that may never meet an archive
(``write``, ``list``, ``show`` of a loose entry) import it only when they do. The monthly job that
fills archives is :mod:`llm_wiki.archive`.
"""

from __future__ import annotations

import bisect
import calendar
import contextlib
import datetime as dt
import hashlib
import io
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import zstandard

from llm_wiki.errors import WikiError
from llm_wiki.wiki import Wiki

LEVEL = 19  # fixed: part of what makes the bytes deterministic
FRAME_BYTES = 1 << 20  # tar bytes per zstd frame (a bigger member gets a frame of its own)
_CHUNK = 1 << 17
_BLOCK = tarfile.BLOCKSIZE
_END = b"\0" * (2 * _BLOCK)  # tar's end-of-archive marker


class Member(NamedTuple):
    """One entry file in an archive."""

    rel: str  # entries/YYYY/MM/<id>.md
    data: bytes
    at: str | None  # locator "<frame offset>+<offset into the frame's data>", None if unknown


class _Broken(Exception):
    pass


# --------------------------------------------------------------------------- reading


class _Frames(io.RawIOBase):
    """The decompressed bytes of a zstd file, frame after frame, noting where each frame starts.

    ``frames`` holds (offset in the decompressed stream, offset in the file) per frame begun so
    far. A file that ends inside a frame is an error (truncated), not a short read.
    """

    def __init__(self, raw: BinaryIO, start: int = 0) -> None:
        self._raw = raw
        self._dctx = zstandard.ZstdDecompressor()
        self._obj: Any = None  # the current frame's decompressor
        self._in = b""  # compressed bytes not yet fed
        self._in_at = start  # file offset of self._in[0]
        self._out = memoryview(b"")
        self.produced = 0
        self.frames: list[tuple[int, int]] = []

    def readable(self) -> bool:
        return True

    def _fill(self) -> bool:
        while not self._out:
            if not self._in:
                self._in = self._raw.read(_CHUNK)
                if not self._in:
                    if self._obj is not None:
                        raise _Broken("it ends inside a zstd frame (truncated)")
                    return False
            if self._obj is None:
                self.frames.append((self.produced, self._in_at))
                self._obj = self._dctx.decompressobj()
            fed = self._in
            out = self._obj.decompress(fed)
            if self._obj.eof:
                self._in = self._obj.unused_data
                self._obj = None
            else:
                self._in = b""
            self._in_at += len(fed) - len(self._in)
            self._out = memoryview(out)
            self.produced += len(out)
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._fill():
            return 0
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def skip(self, count: int) -> None:
        while count > 0:
            if not self._fill():
                raise _Broken("it is shorter than its locator says")
            n = min(count, len(self._out))
            self._out = self._out[n:]
            count -= n

    def drain(self) -> None:
        while self._fill():
            self._out = memoryview(b"")

    def locate(self, offset: int) -> str | None:
        i = bisect.bisect_right(self.frames, (offset, float("inf"))) - 1
        if i < 0:
            return None
        start, at = self.frames[i]
        return f"{at}+{offset - start}"


def iter_path(path: Path) -> Iterator[Member]:
    """Every entry file in the archive at ``path``; raises _Broken/tar/zstd/OS errors."""
    with open(path, "rb") as raw:
        stream = _Frames(raw)
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for info in tar:
                if not info.isfile() or not info.name.endswith(".md"):
                    continue
                fh = tar.extractfile(info)
                if fh is not None:
                    yield Member(info.name, fh.read(), stream.locate(info.offset))
            end = tar.offset
        stream.drain()
        if stream.produced < end + len(_END):
            raise _Broken("it lacks tar's end-of-archive blocks (truncated)")


READ_ERRORS = (OSError, EOFError, tarfile.TarError, zstandard.ZstdError, _Broken)


def iter_members(wiki: Wiki, name: str) -> Iterator[Member]:
    """Every entry file in one archive (``archive/<file>``), streamed, with its locator."""
    try:
        yield from iter_path(wiki.root / name)
    except READ_ERRORS as exc:
        raise WikiError(
            f"{name} is unreadable ({exc}); run `llm-wiki verify` and restore it from a copy."
        ) from None


def locate(wiki: Wiki, name: str) -> dict[str, str | None]:
    """Member path -> locator for one archive (a full read; the catalog caches the result)."""
    return {m.rel: m.at for m in iter_members(wiki, name)}


def read_member(wiki: Wiki, name: str, rel: str, at: str | None = None) -> bytes:
    """One entry's bytes from an archive: one frame when the locator ``at`` is known."""
    if at:
        with contextlib.suppress(*READ_ERRORS, ValueError):
            data = _read_at(wiki.root / name, rel, at)
            if data is not None:
                return data
    for member in iter_members(wiki, name):  # no or stale locator: read it through
        if member.rel == rel:
            return member.data
    raise WikiError(f"{rel} is missing from {name}; run `llm-wiki verify`.")


def _read_at(path: Path, rel: str, at: str) -> bytes | None:
    frame, skip = (int(part) for part in at.split("+"))
    with open(path, "rb") as raw:
        raw.seek(frame)
        stream = _Frames(raw, frame)
        stream.skip(skip)
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            info = tar.next()
            if info is None or info.name != rel or not info.isfile():
                return None
            fh = tar.extractfile(info)
            return fh.read() if fh is not None else None


# --------------------------------------------------------------------------- writing


def _tar_member(rel: str, data: bytes, date: str) -> bytes:
    """Header, bytes and padding of one member, with fixed metadata (deterministic)."""
    info = tarfile.TarInfo(rel)
    info.size = len(data)
    info.mode = 0o444
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    try:
        info.mtime = calendar.timegm(dt.date.fromisoformat(date).timetuple())
    except ValueError:
        info.mtime = 0
    header = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "strict")
    return header + data + b"\0" * (-len(data) % _BLOCK)


class Writer:
    """Streams members into independent zstd frames of about FRAME_BYTES of tar each."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self._cctx = zstandard.ZstdCompressor(
            level=LEVEL, write_checksum=True, write_content_size=True
        )
        self._buf = bytearray()
        self.size = 0
        self.sha = hashlib.sha256()

    def add(self, rel: str, data: bytes, date: str) -> str:
        blob = _tar_member(rel, data, date)
        if self._buf and len(self._buf) + len(blob) > FRAME_BYTES:
            self._flush()
        at = f"{self.size}+{len(self._buf)}"
        self._buf += blob
        return at

    def finish(self) -> None:
        self._buf += _END
        self._flush()

    def _flush(self) -> None:
        frame = self._cctx.compress(bytes(self._buf))
        self._fh.write(frame)
        self.sha.update(frame)
        self.size += len(frame)
        self._buf.clear()
