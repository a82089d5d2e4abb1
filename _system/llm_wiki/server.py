"""``llm-wiki serve``: one ASGI application for a team — MCP over HTTP, the site, sign-in.

Routes:

- ``/mcp``: the MCP tools of ``llm-wiki mcp`` over streamable HTTP (the SDK's own transport, in
  stateless JSON mode: every POST stands alone, so every POST proves its reader). Only an
  ``Authorization: Bearer`` token opens it; a browser cookie does not.
- ``/login`` (GET a form, POST a token), ``/logout`` (POST), ``/ask`` (GET a form, POST a
  question): a browser trades its token for an HttpOnly, SameSite=Strict session cookie; every
  state-changing request made with the cookie must carry the session's CSRF token.
- everything else: the static site of :mod:`llm_wiki.site`, built for the signed-in reader in
  ``.llm-wiki/serve/site/<reader>/`` and brought up to date in the background as the wiki
  changes; rebuilt *before* serving when the reader's scopes changed.

Who is asking is settled on every request, from the token (:class:`~llm_wiki.tokens.TokenStore`
re-reads the tokens file when it changes) and access.yaml (read again each time), so a revoked
token or a withdrawn scope holds on the next request, without a restart. Nothing is served
without a token. Fail-safe defaults: the server binds loopback, and refuses any other address
unless the wiki has walls and tokens; every response says ``Cache-Control: no-store`` and carries
a strict Content-Security-Policy; a request body is bounded (:data:`MAX_BODY`); errors never
echo a token and the access log names readers, never tokens (nor query strings).
"""

from __future__ import annotations

import html
import ipaddress
import json
import mimetypes
import re
import secrets
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import parse_qs

import anyio.to_thread  # with the MCP SDK (and Starlette); cheap next to them

import llm_wiki.budgets as budgets
from llm_wiki.access import Viewer, disk_viewer, resolve_viewer, walls_on
from llm_wiki.clock import stamp
from llm_wiki.errors import WikiError
from llm_wiki.session import Session
from llm_wiki.tokens import PREFIX, Token, TokenStore
from llm_wiki.wiki import TEMPLATES, Wiki

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

HOST = "127.0.0.1"
PORT = 8765
MAX_BODY = 1_000_000  # bytes of one request body (an entry is far smaller)
MAX_FORM = 16_000  # bytes of a browser form
MAX_CONNECTIONS = 512  # open connections and requests at once
COOKIE = "llm_wiki_session"
SESSION_SECONDS = 12 * 3600
MAX_SESSIONS = 10_000
# The site is brought up to date at most this often per reader, one reader at a time: under a
# steady stream of writes a 10k-entry site rebuilt every 5 s per reader took most of the CPU.
REBUILD_SECONDS = 30.0
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"cache-control", b"no-store"),
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
_OURS = {k for k, _ in SECURITY_HEADERS} | {b"server"}
_TOKEN_RE = re.compile(re.escape(PREFIX) + r"[A-Za-z0-9_-]*")
UNAUTHORIZED = (
    "401 Unauthorized: present a token (Authorization: Bearer TOKEN, or sign in at /login); "
    "the wiki's admin issues one with `llm-wiki token add READER`.\n"
)
NOT_FOUND = "Not found.\n"
# The site's own files, the same for every reader: served before sign-in (the sign-in page uses
# the stylesheet); they hold no entry.
ASSETS = ("site.css", "site.js", "minisearch.js", "minisearch-LICENSE.txt")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(wiki: Wiki, host: str) -> None:
    """Refuse a non-loopback address unless the wiki has walls and tokens (fail safe)."""
    if is_loopback(host):
        return
    if not walls_on(wiki):
        raise WikiError(
            f"refusing to serve on {host}: this wiki has no walls (access.yaml), so every token "
            "would read everything; add access.yaml (README, Walls), or keep the default "
            "127.0.0.1 behind a TLS reverse proxy."
        )
    if TokenStore(wiki).count() == 0:
        raise WikiError(
            f"refusing to serve on {host}: no reader has a token yet; issue one with "
            "`llm-wiki token add READER`."
        )


# --------------------------------------------------------------------------- who is asking


@dataclass
class _Browser:
    """A signed-in browser: the token's id (never the token), its CSRF token, when it expires."""

    token_id: str
    reader: str
    csrf: str
    expires: float


@dataclass(frozen=True)
class Caller:
    """The reader a request proved, its viewer (from access.yaml now), and how it proved it."""

    token: Token
    viewer: Viewer
    browser: _Browser | None = None  # set when the cookie proved it


class _Denied(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


class ServedSession(Session):
    """A Session for one request of the server: the same verbs, and each LLM-backed query
    counted against the reader's daily budget first."""

    def query(self, question: str, **options: Any) -> Any:
        chosen, _ = self._backend(options.get("backend"), options.get("model"))
        if chosen.is_llm:
            budgets.charge(self.wiki, self.viewer.name or "-")
        return super().query(question, **options)


def _headers(scope: Scope) -> dict[bytes, bytes]:
    out: dict[bytes, bytes] = {}
    for key, value in scope.get("headers", []):
        out.setdefault(key.lower(), value)
    return out


def _cookies(raw: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in raw.decode("latin-1").split(";"):
        name, _, value = part.strip().partition("=")
        if name and name not in out:
            out[name] = value
    return out


# --------------------------------------------------------------------------- the site


@dataclass
class _Built:
    folder: Path
    scopes: frozenset[str] | None
    state: tuple[Any, ...]
    checked: float


class SiteCache:
    """One built site per reader, kept up to date: a site whose reader's scopes changed is
    rebuilt before it is served again; one whose wiki changed is rebuilt in the background
    (what it shows meanwhile is still only what the reader may read)."""

    def __init__(self, wiki: Wiki, *, rebuild_seconds: float = REBUILD_SECONDS) -> None:
        self.wiki = wiki
        self.base = wiki.state_dir / "serve" / "site"
        self.rebuild_seconds = rebuild_seconds
        self._built: dict[str, _Built] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._pending: set[str] = set()
        self._refreshing = threading.Lock()  # one background rebuild at a time, all readers

    def _key(self, viewer: Viewer) -> str:
        return viewer.name if viewer.walls and viewer.name else "_all"

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def folder(self, viewer: Viewer) -> Path:
        """The reader's site folder, built for exactly the scopes ``viewer`` reads now."""
        from llm_wiki.site.serve import wiki_state  # deferred: the site's modules (jinja2)

        key = self._key(viewer)
        built = self._built.get(key)
        if built is not None and built.scopes == viewer.read:
            clock = time.monotonic()
            if clock - built.checked >= self.rebuild_seconds:
                built.checked = clock
                if wiki_state(self.wiki) != built.state:
                    self._refresh_later(key, viewer.name)
            return built.folder
        with self._lock(key):
            built = self._built.get(key)
            if built is None or built.scopes != viewer.read:
                built = self._build(key, viewer)
            return built.folder

    def _build(self, key: str, viewer: Viewer) -> _Built:
        from llm_wiki.site import build_site  # deferred: jinja2 and markdown-it
        from llm_wiki.site.serve import wiki_state  # deferred: the site's modules

        state = wiki_state(self.wiki)
        folder = self.base / key
        build_site(self.wiki, viewer, folder)
        built = _Built(folder, viewer.read, state, time.monotonic())
        self._built[key] = built
        return built

    def _refresh_later(self, key: str, reader: str) -> None:
        with self._guard:
            if key in self._pending:
                return
            self._pending.add(key)

        def run() -> None:
            try:
                with self._refreshing, self._lock(key):
                    viewer = resolve_viewer(self.wiki, reader or None)  # as it stands now
                    self._build(key, viewer)
            except Exception as exc:  # noqa: BLE001 - a failed refresh keeps the last site
                print(
                    f"llm-wiki serve: site refresh for {reader or '-'} failed: {exc}",
                    file=sys.stderr,
                )
            finally:
                with self._guard:
                    self._pending.discard(key)

        threading.Thread(target=run, name=f"site-{key}", daemon=True).start()


def safe_relative(path: str) -> str | None:
    """The site path asked for, or None when it would leave the site folder: ``..`` and ``.``
    segments, empty segments (``//``), backslashes, NUL and control characters are refused.
    The path is the decoded one, so ``%2e%2e`` arrives as ``..``."""
    rel = path[1:] if path.startswith("/") else path
    if rel == "":
        return "index.html"
    if any(c in rel for c in "\\\x00") or any(ord(c) < 32 for c in rel):
        return None
    parts = rel.split("/")
    if parts[-1] == "":
        parts[-1] = "index.html"
    if any(p in ("", ".", "..") for p in parts):
        return None
    return "/".join(parts)


# --------------------------------------------------------------------------- the application


class App:
    """The ASGI application of ``llm-wiki serve`` (see the module's docstring)."""

    def __init__(
        self,
        wiki: Wiki,
        *,
        host: str = HOST,
        allow_hosts: tuple[str, ...] = (),
        log: TextIO | None = sys.stderr,
        rebuild_seconds: float = REBUILD_SECONDS,
    ) -> None:
        from mcp.server.transport_security import (  # deferred: the MCP SDK
            TransportSecuritySettings,
        )

        from llm_wiki.mcp_server import build_server  # deferred: the MCP SDK

        self.wiki = wiki
        self.tokens = TokenStore(wiki)
        self.sites = SiteCache(wiki, rebuild_seconds=rebuild_seconds)
        self.log = log
        self._browsers: dict[str, _Browser] = {}
        self._browsers_lock = threading.Lock()
        self._mcp = build_server(wiki, open_session=self._mcp_session)
        hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", *(f"{h}:*" for h in allow_hosts)]
        hosts += list(allow_hosts)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=is_loopback(host) or bool(allow_hosts),
            allowed_hosts=hosts,
            allowed_origins=[f"{s}://{h}" for s in ("http", "https") for h in hosts],
        )
        self._mcp_app = self._mcp.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=True,
            transport_security=security,
            max_request_body_size=MAX_BODY,
            host=host,
        )

    # -- ASGI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._mcp_app(scope, receive, send)  # runs the SDK's session manager
            return
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        started = time.perf_counter()
        status = [0]
        note: dict[str, str] = {"reader": "-", "call": ""}

        async def send_secure(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _OURS]
                message = {**message, "headers": headers + SECURITY_HEADERS}
            await send(message)

        try:
            await self._dispatch(scope, receive, send_secure, note)
        finally:
            self._access_log(scope, status[0], note, time.perf_counter() - started)

    def _access_log(self, scope: Scope, status: int, note: dict[str, str], seconds: float) -> None:
        if self.log is None:
            return
        call = f" {note['call']}" if note["call"] else ""
        path = _TOKEN_RE.sub("lwk_…", scope.get("path", ""))[:300]  # a token pasted into a URL
        line = (
            f"{stamp()} {note['reader']} {scope.get('method', '-')} {path}"
            f"{call} {status or '-'} {seconds * 1000:.0f}ms\n"
        )
        try:
            self.log.write(line)
            self.log.flush()
        except (OSError, ValueError):
            pass

    async def _dispatch(
        self, scope: Scope, receive: Receive, send: Send, note: dict[str, str]
    ) -> None:
        path = scope.get("path", "")
        method = scope.get("method", "GET")
        try:  # who is asking, from the headers alone: a stranger's body is never read
            caller = await anyio.to_thread.run_sync(self._authenticate, scope, path == "/mcp")
        except _Denied as exc:
            await _text(send, exc.status, exc.text, extra=_www_authenticate(exc.status))
            return
        if caller is not None:
            note["reader"] = caller.token.reader
        elif path == "/mcp":
            await _text(send, 401, UNAUTHORIZED, extra=_www_authenticate(401))
            return
        limit = MAX_BODY if path == "/mcp" else MAX_FORM
        body = await _read_body(scope, receive, limit)
        if body is None:
            return  # the client went away before its request was whole: nothing was done
        if isinstance(body, _TooLarge):
            await _text(send, 413, f"413: the request body is over {limit} bytes; send less.\n")
            return
        replay = _replay(body, receive)
        if path == "/mcp" and caller is not None:
            note["call"] = _mcp_call(body)
            scope = {**scope, "llm_wiki.caller": caller}
            await self._mcp_app(scope, replay, send)
            return
        if path == "/login":
            await self._login(scope, method, body, caller, send)
            return
        if path.startswith("/assets/") and path[8:] in ASSETS and method in ("GET", "HEAD"):
            data = (TEMPLATES / "site" / "assets" / path[8:]).read_bytes()  # the package's own
            kind = mimetypes.guess_type(path)[0] or "text/plain"
            await _respond(
                send,
                200,
                f"{kind}; charset=utf-8",
                b"" if method == "HEAD" else data,
                length=len(data),
            )
            return
        if caller is None:
            await _page(send, 401, "Sign in", _sign_in_form(), extra=_www_authenticate(401))
            return
        if path == "/logout":
            await self._logout(scope, method, body, caller, send)
        elif path == "/ask":
            await self._ask(scope, method, body, caller, send)
        elif method in ("GET", "HEAD"):
            await self._site(path, method, caller, send)
        else:
            await _text(send, 405, "405: the site is read-only; use GET.\n")

    # -- who is asking

    def _authenticate(self, scope: Scope, bearer_only: bool) -> Caller | None:
        """The caller a request proves, None when it proves none, _Denied when it presents a
        token that fails (wrong, revoked) or a reader access.yaml no longer lets in."""
        headers = _headers(scope)
        auth = headers.get(b"authorization")
        browser: _Browser | None = None
        if auth is not None:
            kind, _, token = auth.decode("latin-1").partition(" ")
            record = self.tokens.lookup(token.strip()) if kind.lower() == "bearer" else None
            if record is None:
                raise _Denied(401, UNAUTHORIZED)
        elif not bearer_only and b"cookie" in headers:
            sid = _cookies(headers[b"cookie"]).get(COOKIE)
            browser = self._browser(sid) if sid else None
            record = self.tokens.by_id(browser.token_id) if browser else None
            if record is None or browser is None or record.reader != browser.reader:
                return None
        else:
            return None
        try:
            viewer = resolve_viewer(self.wiki, record.reader)
        except WikiError:
            raise _Denied(
                403, f"403: reader {record.reader!r} is not allowed in by access.yaml now.\n"
            ) from None
        self.tokens.touch(record, time.monotonic())
        return Caller(token=record, viewer=viewer, browser=browser)

    def _browser(self, sid: str) -> _Browser | None:
        with self._browsers_lock:
            found = self._browsers.get(sid)
            if found is not None and found.expires < time.monotonic():
                del self._browsers[sid]
                return None
            return found

    def _mcp_session(self, ctx: Any) -> Session:
        request = getattr(getattr(ctx, "request_context", None), "request", None)
        caller = request.scope.get("llm_wiki.caller") if request is not None else None
        if not isinstance(caller, Caller):  # fail closed: no proven reader, no session
            raise WikiError("not signed in: present a token (Authorization: Bearer TOKEN).")
        return ServedSession(self.wiki, caller.viewer)

    # -- the browser

    def _same_origin(self, scope: Scope) -> bool:
        headers = _headers(scope)
        origin = headers.get(b"origin")
        if origin is None or origin == b"null":
            return origin is None
        host = headers.get(b"host", b"")
        return origin.split(b"://", 1)[-1] == host

    async def _login(
        self, scope: Scope, method: str, body: bytes, caller: Caller | None, send: Send
    ) -> None:
        if method in ("GET", "HEAD"):
            if caller is not None and caller.browser is not None:
                await _page(send, 200, "Signed in", _signed_in(caller))
            else:
                await _page(send, 200, "Sign in", _sign_in_form())
            return
        if method != "POST":
            await _text(send, 405, "405: use GET or POST.\n")
            return
        if not self._same_origin(scope):
            await _text(send, 403, "403: a sign-in must come from this site's own page.\n")
            return
        token = _form(body).get("token", "")
        record = await anyio.to_thread.run_sync(self.tokens.lookup, token.strip())
        if record is None:
            await _page(send, 401, "Sign in", _sign_in_form("That token is not valid."))
            return
        try:
            resolve_viewer(self.wiki, record.reader)
        except WikiError:
            await _text(
                send, 403, f"403: reader {record.reader!r} is not allowed in by access.yaml now.\n"
            )
            return
        sid = secrets.token_urlsafe(32)
        with self._browsers_lock:
            clock = time.monotonic()
            for key in [k for k, b in self._browsers.items() if b.expires < clock]:
                del self._browsers[key]
            if len(self._browsers) >= MAX_SESSIONS:
                oldest = min(self._browsers, key=lambda k: self._browsers[k].expires)
                del self._browsers[oldest]
            self._browsers[sid] = _Browser(
                record.id, record.reader, secrets.token_urlsafe(24), clock + SESSION_SECONDS
            )
        secure = "; Secure" if scope.get("scheme") == "https" else ""
        cookie = (
            f"{COOKIE}={sid}; Path=/; HttpOnly; SameSite=Strict; Max-Age={SESSION_SECONDS}{secure}"
        )
        await _redirect(send, "/", [(b"set-cookie", cookie.encode())])

    def _check_csrf(self, scope: Scope, body: bytes, caller: Caller) -> bool:
        if caller.browser is None:
            return True  # a bearer token is not sent by a browser on its own: no CSRF to fear
        sent = _form(body).get("csrf", "")
        return self._same_origin(scope) and secrets.compare_digest(sent, caller.browser.csrf)

    async def _logout(
        self, scope: Scope, method: str, body: bytes, caller: Caller, send: Send
    ) -> None:
        if method != "POST":
            await _text(send, 405, "405: sign out with POST (the button on /login).\n")
            return
        if not self._check_csrf(scope, body, caller):
            await _text(send, 403, "403: missing or wrong CSRF token; reload the page and retry.\n")
            return
        if caller.browser is not None:
            with self._browsers_lock:
                for key in [k for k, b in self._browsers.items() if b is caller.browser]:
                    del self._browsers[key]
        cookie = f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
        await _redirect(send, "/login", [(b"set-cookie", cookie.encode())])

    async def _ask(
        self, scope: Scope, method: str, body: bytes, caller: Caller, send: Send
    ) -> None:
        if method in ("GET", "HEAD"):
            await _page(send, 200, "Ask", _ask_form(caller))
            return
        if method != "POST":
            await _text(send, 405, "405: use GET or POST.\n")
            return
        if not self._check_csrf(scope, body, caller):
            await _text(send, 403, "403: missing or wrong CSRF token; reload the page and retry.\n")
            return
        question = _form(body).get("question", "").strip()
        if not question:
            await _page(send, 400, "Ask", _ask_form(caller, error="Ask a question."))
            return
        session = ServedSession(self.wiki, caller.viewer)
        try:
            answer = await anyio.to_thread.run_sync(session.query, question)
        except budgets.BudgetSpent as exc:
            await _page(send, 429, "Ask", _ask_form(caller, error=exc.message))
            return
        except WikiError as exc:
            await _page(send, 400, "Ask", _ask_form(caller, error=exc.message))
            return
        await _page(send, 200, "Ask", _ask_form(caller, question=question, answer=answer))

    async def _site(self, path: str, method: str, caller: Caller, send: Send) -> None:
        rel = safe_relative(path)
        if rel is None:
            await _text(send, 404, NOT_FOUND)
            return
        found = await anyio.to_thread.run_sync(self._site_file, caller.viewer, rel)
        if found is None:
            await _text(send, 404, NOT_FOUND)
            return
        data, kind = found
        await _respond(send, 200, kind, b"" if method == "HEAD" else data, length=len(data))

    def _site_file(self, viewer: Viewer, rel: str) -> tuple[bytes, str] | None:
        folder = self.sites.folder(viewer)
        target = folder / rel
        try:
            if target.is_dir():
                target = target / "index.html"
            real = target.resolve(strict=True)
            if not real.is_relative_to(folder.resolve()) or not real.is_file():
                return None
            if real.name.startswith(".") or real.suffix in (".json", ".md"):
                return None  # the manifest and the Obsidian notes are not pages
            data = real.read_bytes()
        except (OSError, ValueError):
            return None
        kind = mimetypes.guess_type(real.name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind == "application/javascript":
            kind += "; charset=utf-8"
        return data, kind


# --------------------------------------------------------------------------- HTTP plumbing


class _TooLarge:
    pass


async def _read_body(scope: Scope, receive: Receive, limit: int) -> bytes | _TooLarge | None:
    """The whole request body, at most ``limit`` bytes (a longer one: _TooLarge, read no
    further); None when the client disconnected before sending all of it."""
    length = _headers(scope).get(b"content-length")
    if length is not None:
        try:
            if int(length) > limit:
                return _TooLarge()
        except ValueError:
            return _TooLarge()
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return _TooLarge()
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = [False]

    async def replay() -> dict[str, Any]:
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for the client to go away

    return replay


def _mcp_call(body: bytes) -> str:
    """The JSON-RPC method (and tool name) of an MCP request, for the access log."""
    try:
        data = json.loads(body) if len(body) < 65_536 else {}
        if isinstance(data, dict):
            method = str(data.get("method", ""))[:40]
            params = data.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            return f"{method} {str(name)[:40]}" if name else method
    except ValueError:
        pass
    return ""


def _form(body: bytes) -> dict[str, str]:
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=20)
    except (UnicodeDecodeError, ValueError):
        return {}
    return {k: v[0] for k, v in fields.items() if v}


def _www_authenticate(status: int) -> list[tuple[bytes, bytes]]:
    return [(b"www-authenticate", b'Bearer realm="llm-wiki"')] if status == 401 else []


async def _respond(
    send: Send,
    status: int,
    kind: str,
    data: bytes,
    extra: list[tuple[bytes, bytes]] | None = None,
    length: int | None = None,
) -> None:
    headers = [
        (b"content-type", kind.encode()),
        (b"content-length", str(len(data) if length is None else length).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


async def _text(
    send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    await _respond(send, status, "text/plain; charset=utf-8", text.encode(), extra)


async def _redirect(send: Send, where: str, extra: list[tuple[bytes, bytes]]) -> None:
    await _respond(
        send, 303, "text/plain; charset=utf-8", b"", [(b"location", where.encode()), *extra]
    )


async def _page(
    send: Send, status: int, title: str, inner: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    await _respond(send, status, "text/html; charset=utf-8", _html(title, inner).encode(), extra)


def _html(title: str, inner: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} · llm-wiki</title>"
        '<link rel="stylesheet" href="/assets/site.css"></head>'
        f'<body><main class="page">{inner}</main></body></html>\n'
    )


def _sign_in_form(error: str = "") -> str:
    message = f'<p class="error">{html.escape(error)}</p>' if error else ""
    return (
        f"<h1>Sign in</h1>{message}"
        '<form method="post" action="/login">'
        '<label>Token <input type="password" name="token" autocomplete="off" required></label> '
        '<button type="submit">Sign in</button></form>'
        "<p>Ask the wiki's admin for a token (<code>llm-wiki token add READER</code>).</p>"
    )


def _logout_form(caller: Caller) -> str:
    csrf = html.escape(caller.browser.csrf if caller.browser else "")
    return (
        '<form method="post" action="/logout">'
        f'<input type="hidden" name="csrf" value="{csrf}">'
        '<button type="submit">Sign out</button></form>'
    )


def _signed_in(caller: Caller) -> str:
    who = html.escape(caller.token.reader)
    return (
        f"<h1>Signed in as {who}</h1>"
        '<p><a href="/">The wiki</a> · <a href="/ask">Ask a question</a></p>' + _logout_form(caller)
    )


def _ask_form(caller: Caller, *, question: str = "", answer: Any = None, error: str = "") -> str:
    csrf = html.escape(caller.browser.csrf if caller.browser else "")
    out = [f"<h1>Ask the wiki</h1><p>Signed in as {html.escape(caller.token.reader)}.</p>"]
    if error:
        out.append(f'<p class="error">{html.escape(error)}</p>')
    out.append(
        '<form method="post" action="/ask">'
        f'<input type="hidden" name="csrf" value="{csrf}">'
        f'<label>Question <input type="text" name="question" value="{html.escape(question)}" '
        'required></label> <button type="submit">Ask</button></form>'
    )
    if answer is not None:
        out.append(f"<section><h2>Answer</h2><p>{html.escape(answer.answer)}</p><ul>")
        for cited in answer.cited:
            cid = html.escape(cited.id)
            out.append(f'<li><a href="/entries/{cid}.html">{cid}</a></li>')
        out.append("</ul></section>")
    out.append(_logout_form(caller))
    return "".join(out)


# --------------------------------------------------------------------------- running it


def serve(
    session: Session,
    *,
    host: str = HOST,
    port: int = PORT,
    allow_hosts: tuple[str, ...] = (),
    on_start: Callable[[str], None] | None = None,
) -> None:
    """Serve ``session``'s wiki to every reader with a token until Ctrl-C (or SIGTERM) on
    ``host``:``port``. It serves every scope, so like the disk commands it runs without a
    reader or as an admin (:func:`~llm_wiki.access.disk_viewer`)."""
    wiki = session.wiki
    disk_viewer(wiki, session.reader, "serve")
    check_bind(wiki, host)
    app = App(wiki, host=host, allow_hosts=allow_hosts)
    sock = bind(host, port)
    if on_start is not None:
        shown = f"[{host}]" if ":" in host else host
        on_start(f"http://{shown}:{sock.getsockname()[1]}/")
    import uvicorn  # deferred: the ASGI server, only for `llm-wiki serve`

    uvicorn.Server(uvicorn_config(app, host, port)).run(sockets=[sock])


def uvicorn_config(app: App, host: str, port: int) -> Any:
    """How uvicorn runs the app (the tests run it the same way)."""
    import uvicorn  # deferred: the ASGI server, only for `llm-wiki serve`

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        access_log=False,  # ours names the reader and drops query strings
        log_level="warning",
        server_header=False,
        proxy_headers=True,  # X-Forwarded-Proto from a proxy on 127.0.0.1 (Secure cookies)
        forwarded_allow_ips="127.0.0.1",
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=16_384,  # request line and headers: 16 KB at most
        limit_concurrency=MAX_CONNECTIONS,  # beyond it: 503, so memory stays bounded
        lifespan="on",
    )


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (``port`` 0: any free one), or a one-line error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise WikiError(
            f"cannot serve on {host}:{port}: {exc.strerror or exc}; pass another --port "
            "(or --host)."
        ) from None
    sock.set_inheritable(True)
    return sock
