"""Tokens, one per reader: what proves who is asking ``llm-wiki serve``.

``llm-wiki token add alice`` makes a random token, prints it once and keeps only its sha256, in
``access-tokens.json`` beside ``access.yaml`` (mode 0600, written atomically under a lock, never
synced: each server issues its own). A request that presents the token is served as its reader
and no request can name another. ``token revoke`` removes the hash, so the next request with it
is refused; the server notices by the file's stat, without a restart.

When a token was last used is kept apart, in ``.llm-wiki/tokens-used.json``, and only the server
writes it: the tokens file is written by ``add`` and ``revoke`` alone, so a server recording a use
can never bring back a token that was just revoked.

A token is 32 random bytes, so a plain sha256 of it cannot be searched backwards; a token is
never logged, echoed in an error or written anywhere but the one line ``add`` prints.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
from dataclasses import dataclass
from typing import Any

import llm_wiki.store as store
from llm_wiki.access import load_access, walls_on
from llm_wiki.clock import now
from llm_wiki.entries import NAME_RE
from llm_wiki.errors import InvalidInput, NotFound, WikiError
from llm_wiki.files import atomic_write
from llm_wiki.wiki import Wiki

TOKENS_FILE = "access-tokens.json"
USED_FILE = "tokens-used.json"
PREFIX = "lwk_"
USED_EVERY = 60.0  # seconds: a token's last-used time is written at most this often


@dataclass(frozen=True)
class Token:
    """One issued token, as the wiki keeps it (its hash, never the token)."""

    id: str
    reader: str
    sha256: str
    created: str
    last_used: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "reader": self.reader,
            "created": self.created,
            "last_used": self.last_used,
        }


@dataclass(frozen=True)
class Issued:
    """``token add``: the token, shown once, and what the wiki keeps of it."""

    token: str
    record: Token

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, **self.record.to_dict()}


def tokens_path(wiki: Wiki) -> Any:
    return wiki.root / TOKENS_FILE


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _stamp() -> str:
    return now().strftime("%Y-%m-%dT%H:%M:%SZ")


def _read(wiki: Wiki) -> list[Token]:
    path = tokens_path(wiki)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise WikiError(f"cannot read {path}: {exc.strerror}; fix its permissions.") from None
    try:
        data = json.loads(raw)
        return [
            Token(id=t["id"], reader=t["reader"], sha256=t["sha256"], created=t["created"])
            for t in data["tokens"]
        ]
    except (ValueError, KeyError, TypeError):
        raise WikiError(
            f"{path} is damaged; move it away and issue the tokens again (llm-wiki token add)."
        ) from None


def _save(wiki: Wiki, tokens: list[Token]) -> None:
    data = {
        "version": 1,
        "tokens": [
            {"id": t.id, "reader": t.reader, "sha256": t.sha256, "created": t.created}
            for t in sorted(tokens, key=lambda t: (t.reader, t.created, t.id))
        ],
    }
    atomic_write(tokens_path(wiki), json.dumps(data, indent=2) + "\n", mode=0o600)


def _used(wiki: Wiki) -> dict[str, str]:
    try:
        data = json.loads((wiki.state_dir / USED_FILE).read_bytes())
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def add_token(wiki: Wiki, reader: str, *, rotate: bool = False) -> Issued:
    """A new token for ``reader`` (one per reader; ``rotate`` replaces the one it has)."""
    reader = reader.strip()
    if not NAME_RE.match(reader):
        raise InvalidInput(
            f"reader {reader!r} is not a name: lowercase letters, digits and hyphens, e.g. alice."
        )
    if walls_on(wiki):
        access = load_access(wiki) or {}
        if reader not in access.get("readers", {}):
            raise InvalidInput(
                f"reader {reader!r} is not in access.yaml; add it there first, then issue its "
                "token."
            )
    with store.locked(wiki, "tokens"):
        tokens = _read(wiki)
        if any(t.reader == reader for t in tokens) and not rotate:
            raise InvalidInput(
                f"reader {reader!r} already has a token; pass --rotate to replace it, or "
                f"`llm-wiki token revoke {reader}` first."
            )
        token = PREFIX + secrets.token_urlsafe(32)
        record = Token(
            id=secrets.token_hex(4), reader=reader, sha256=digest(token), created=_stamp()
        )
        _save(wiki, [t for t in tokens if t.reader != reader] + [record])
    return Issued(token=token, record=record)


def list_tokens(wiki: Wiki) -> list[Token]:
    used = _used(wiki)
    return [Token(t.id, t.reader, t.sha256, t.created, used.get(t.id)) for t in _read(wiki)]


def revoke_token(wiki: Wiki, who: str) -> list[Token]:
    """Remove the token of reader ``who`` (or the token whose id is ``who``)."""
    with store.locked(wiki, "tokens"):
        tokens = _read(wiki)
        gone = [t for t in tokens if who in (t.reader, t.id)]
        if not gone:
            raise NotFound(
                f"no token for {who!r}; `llm-wiki token list` shows the readers and ids."
            )
        _save(wiki, [t for t in tokens if t not in gone])
    return gone


class TokenStore:
    """The server's view of the tokens file: re-read whenever its stat changes (every write is a
    rename, so a new inode), so a token revoked is refused on the very next request."""

    def __init__(self, wiki: Wiki) -> None:
        self.wiki = wiki
        self._lock = threading.Lock()
        self._key: tuple[Any, ...] | None = None
        self._by_hash: dict[str, Token] = {}
        self._by_id: dict[str, Token] = {}
        self._used: dict[str, float] = {}
        self._used_at: dict[str, str] = {}

    def _load(self) -> None:
        path = tokens_path(self.wiki)
        try:
            st = os.stat(path)
            key: tuple[Any, ...] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        except FileNotFoundError:
            key = ()
        if key == self._key:
            return
        tokens = _read(self.wiki) if key else []
        self._by_hash = {t.sha256: t for t in tokens}
        self._by_id = {t.id: t for t in tokens}
        self._key = key

    def count(self) -> int:
        with self._lock:
            self._load()
            return len(self._by_id)

    def lookup(self, token: str) -> Token | None:
        """The record of a presented token, or None (unknown, revoked, malformed)."""
        if not token.startswith(PREFIX) or len(token) > 200:
            return None
        wanted = digest(token)
        with self._lock:
            self._load()
            found = self._by_hash.get(wanted)
        if found is None or not secrets.compare_digest(found.sha256, wanted):
            return None
        return found

    def by_id(self, token_id: str) -> Token | None:
        """A token still issued (a browser session holds its id, never the token)."""
        with self._lock:
            self._load()
            return self._by_id.get(token_id)

    def touch(self, record: Token, clock: float) -> None:
        """Note a use; written to disk at most every :data:`USED_EVERY` seconds per token."""
        with self._lock:
            if clock - self._used.get(record.id, -USED_EVERY) < USED_EVERY:
                return
            self._used[record.id] = clock
            self._used_at[record.id] = _stamp()
            stamps = dict(self._used_at)
        try:
            merged = {**_used(self.wiki), **stamps}
            atomic_write(self.wiki.state_path(USED_FILE), json.dumps(merged, indent=1) + "\n")
        except OSError:
            pass  # last-used is a convenience; a full disk must not refuse the request
