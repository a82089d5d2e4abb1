"""``llm-wiki site --serve``: the built folder over HTTP on 127.0.0.1, rebuilt when the wiki changes.

For one person on their own machine: the server binds the loopback address only and serves the
output folder read-only (the standard library's file handler). A poll (no watcher dependency)
compares the stats of what a change touches — log.md (every write, archive, ingest, lint), the
config files, the entries/ month folders, archive/ and raw/, the LLM call log — and rebuilds when
they differ. The reader is resolved again before each rebuild: if access.yaml took scopes away,
the next build drops their pages; if the reader is gone, serving stops (fail closed).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from llm_wiki.access import resolve_viewer
from llm_wiki.errors import WikiError
from llm_wiki.site.build import SiteResult, build_site
from llm_wiki.wiki import Wiki

HOST = "127.0.0.1"


class _Handler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # a browsing person's requests are not worth a line each

    def list_directory(self, path: Any) -> None:
        """A folder without index.html is no page: 404, not a listing of the files in it."""
        self.send_error(404, "No such page")
        return None


def bind(out: str | Path, port: int) -> ThreadingHTTPServer:
    """The server of ``out`` on 127.0.0.1:``port``, bound (0: any free port); a port in use is
    a one-line error, found before anything is built."""
    handler = functools.partial(_Handler, directory=str(out))
    try:
        return ThreadingHTTPServer((HOST, port), handler)
    except OSError as exc:
        raise WikiError(
            f"cannot serve on {HOST}:{port}: {exc.strerror or exc}; pass another port, e.g. "
            "--serve 8765."
        ) from None


def wiki_state(wiki: Wiki) -> tuple[Any, ...]:
    """Stats that change when anything the site shows changes (cheap: a few dozen stats)."""
    out: list[Any] = []
    paths = [
        wiki.log_path,
        wiki.access_path,
        wiki.settings_path,
        wiki.schema_path,
        wiki.root / "synthesis-failures.md",
        wiki.state_dir / "llm-calls.jsonl",
        wiki.archive_dir,
        wiki.raw_dir,
        wiki.root / "synthesis-failures",
    ]
    if wiki.entries_dir.is_dir():
        for year in sorted(wiki.entries_dir.iterdir()):
            paths.append(year)
            if year.is_dir():
                paths += sorted(year.iterdir())
    for path in paths:
        try:
            st = os.stat(path)
            out.append((str(path), st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            out.append((str(path), None))
    return tuple(out)


def serve(
    wiki: Wiki,
    reader: str | None,
    out: str | Path,
    port: int,
    *,
    on_start: Callable[[str], None],
    on_rebuild: Callable[[SiteResult], None],
    poll_seconds: float = 1.0,
    stop: threading.Event | None = None,
    server: ThreadingHTTPServer | None = None,
) -> None:
    """Serve ``out`` on 127.0.0.1:``port`` (0: any free port; ``server``: already bound by
    :func:`bind`) until ``stop`` is set or Ctrl-C."""
    stop = stop or threading.Event()
    if server is None:
        server = bind(out, port)
    thread = threading.Thread(target=server.serve_forever, name="llm-wiki-site", daemon=True)
    thread.start()
    on_start(f"http://{HOST}:{server.server_address[1]}/")
    state = wiki_state(wiki)
    try:
        while not stop.wait(poll_seconds):
            now = wiki_state(wiki)
            if now == state:
                continue
            state = now
            viewer = resolve_viewer(wiki, reader)  # fail closed: a WikiError ends serving
            on_rebuild(build_site(wiki, viewer, out))
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
