"""A loopback HTTP server that answers POSTs from a script: what the LLM backends' tests talk to
instead of the network. A subclass says what an API's success and error bodies look like."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedAPI:
    """Answers each POST with the next scripted (status, headers, body, delay), else ``ok()``.

    Every request is kept in ``requests`` as {path, headers (lower-case names), body (JSON)}.
    """

    path = ""  # what the client's base URL ends with, e.g. "/v1"

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, str], bytes, float]] = []
        self.requests: list[dict] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                api.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": json.loads(body),
                    }
                )
                status, headers, payload, delay = (
                    api.script.pop(0) if api.script else (200, {}, api.ok("ok"), 0)
                )
                if delay:
                    time.sleep(delay)
                try:
                    self.send_response(status)
                    for key, value in {"content-type": "application/json", **headers}.items():
                        self.send_header(key, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}{self.path}"

    def ok(self, text: str, **kw) -> bytes:
        """The body of a successful reply carrying ``text``."""
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> dict:
        raise NotImplementedError

    def reply(self, text: str, **kw) -> None:
        self.script.append((200, {}, self.ok(text, **kw), 0))

    def error(self, status: int, message: str = "boom", **headers: str) -> None:
        body = json.dumps(self.error_body(status, message))
        self.script.append((status, headers, body.encode(), 0))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class MessagesAPI(ScriptedAPI):
    """A loopback server speaking enough of the Messages API, answering from a script."""

    @staticmethod
    def message(text: str, tokens_in: int = 11, tokens_out: int = 3) -> bytes:
        return json.dumps(
            {
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "model": "claude-haiku-5-5",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
            }
        ).encode()

    def ok(self, text: str, **kw) -> bytes:
        return self.message(text, **kw)

    def error_body(self, status: int, message: str) -> dict:
        return {"type": "error", "error": {"type": "api_error", "message": message}}


class ChatAPI(ScriptedAPI):
    """A loopback server speaking enough of the Chat Completions API, answering from a script."""

    path = "/v1"

    @staticmethod
    def completion(
        text: str, tokens_in: int = 11, tokens_out: int = 3, finish: str = "stop"
    ) -> bytes:
        return json.dumps(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 1796122198,
                "model": "smollm2",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": finish,
                    }
                ],
                "usage": {
                    "prompt_tokens": tokens_in,
                    "completion_tokens": tokens_out,
                    "total_tokens": tokens_in + tokens_out,
                },
            }
        ).encode()

    def ok(self, text: str, **kw) -> bytes:
        return self.completion(text, **kw)

    def error_body(self, status: int, message: str) -> dict:
        return {"error": {"message": message, "type": "server_error", "code": status}}
