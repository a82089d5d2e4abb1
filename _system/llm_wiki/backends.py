"""LLM backends: one small class each, one method (prompt in, text and token counts out).

The backend is chosen by ``--backend`` > ``LLM_WIKI_BACKEND`` > settings.yaml ``backend`` >
``offline``. Every call goes through :func:`call`, which appends one line to
``.llm-wiki/llm-calls.jsonl`` (time, purpose, scope, backend, model, tokens, ms, ok), so cost is
always visible. Heavy SDKs are imported inside the backend that needs them, never at start-up.

Token counts for budgets use one estimator, :func:`estimate_tokens` (UTF-8 bytes / 3, rounded
up), unless a backend reports real counts.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from llm_wiki import clock
from llm_wiki.errors import BackendFailed, BackendUnavailable, InvalidInput, WikiError
from llm_wiki.wiki import Wiki

ENV_BACKEND = "LLM_WIKI_BACKEND"
ENV_MODEL = "LLM_WIKI_MODEL"
ENV_MOCK_FILE = "LLM_WIKI_MOCK_FILE"
ENV_MOCK_LOG = "LLM_WIKI_MOCK_LOG"
DEFAULT_BACKEND = "offline"
CALL_LOG = "llm-calls.jsonl"


def estimate_tokens(text: str) -> int:
    """The one token estimator: UTF-8 bytes / 3, rounded up (conservative for English)."""
    return -(-len(text.encode("utf-8")) // 3)


@dataclass(frozen=True)
class Completion:
    text: str
    tokens_in: int
    tokens_out: int
    model: str


class Backend:
    """Base class. Subclasses set ``name`` and implement :meth:`complete`."""

    name: ClassVar[str] = ""
    is_llm: ClassVar[bool] = True  # False: no text generation (offline)
    needs_key: ClassVar[bool] = False
    key_env_var: ClassVar[str | None] = None
    default_model: ClassVar[str] = ""

    def __init__(self, model: str | None = None) -> None:
        self.model = model or self.default_model

    def check(self) -> None:
        """Raise BackendUnavailable (with the fix) if this backend cannot run here."""
        if self.needs_key and self.key_env_var and not os.environ.get(self.key_env_var):
            raise BackendUnavailable(
                f"No API key for the {self.name} backend: set {self.key_env_var} (for scheduled "
                "jobs, in ~/.config/llm-wiki/env), or use --backend offline."
            )

    def complete(
        self, prompt: str, *, system: str = "", max_tokens: int = 1024, purpose: str = ""
    ) -> Completion:
        raise NotImplementedError


# name -> class, or "module:Class" for backends whose import is deferred until used
_REGISTRY: dict[str, type[Backend] | str] = {}


def register(name: str, target: type[Backend] | str) -> None:
    _REGISTRY[name] = target


def backend_names() -> list[str]:
    return sorted(_REGISTRY)


def backend_class(name: str) -> type[Backend]:
    target = _REGISTRY.get(name)
    if target is None:
        raise InvalidInput(f"unknown backend {name!r}; choose one of {', '.join(backend_names())}.")
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
        _REGISTRY[name] = target
    return target


def choose_backend_name(wiki: Wiki | None, name: str | None = None) -> str:
    """``--backend`` > ``LLM_WIKI_BACKEND`` > settings.yaml > offline."""
    chosen = name or os.environ.get(ENV_BACKEND)
    if not chosen and wiki is not None:
        chosen = wiki.settings.get("backend")
    return str(chosen or DEFAULT_BACKEND)


def get_backend(wiki: Wiki | None, name: str | None = None, model: str | None = None) -> Backend:
    """The backend for this invocation, with its model: ``--model`` > ``LLM_WIKI_MODEL`` >
    settings.yaml ``model`` > the backend's default."""
    chosen = choose_backend_name(wiki, name)
    cls = backend_class(chosen)
    picked = model or os.environ.get(ENV_MODEL)
    if not picked and wiki is not None and not name and not os.environ.get(ENV_BACKEND):
        picked = wiki.settings.get("model")  # the settings' model goes with the settings' backend
    return cls(picked or None)


def call(
    wiki: Wiki,
    backend: Backend,
    prompt: str,
    *,
    purpose: str,
    scope: str,
    system: str = "",
    max_tokens: int = 1024,
) -> Completion:
    """Run one completion and log it (even when it fails) to .llm-wiki/llm-calls.jsonl."""
    start = time.perf_counter()
    record: dict[str, Any] = {
        "time": clock.stamp(),
        "purpose": purpose,
        "scope": scope,
        "backend": backend.name,
        "model": backend.model,
    }
    try:
        result = backend.complete(prompt, system=system, max_tokens=max_tokens, purpose=purpose)
    except WikiError as exc:
        record.update(
            tokens_in=estimate_tokens(system + prompt),
            tokens_out=0,
            ms=round((time.perf_counter() - start) * 1000),
            ok=False,
            error=exc.message[:300],
        )
        _log_call(wiki, record)
        raise
    record.update(
        model=result.model or backend.model,
        tokens_in=result.tokens_in,
        tokens_out=result.tokens_out,
        ms=round((time.perf_counter() - start) * 1000),
        ok=True,
    )
    _log_call(wiki, record)
    return result


def _log_call(wiki: Wiki, record: dict[str, Any]) -> None:
    line = json.dumps(record, ensure_ascii=False) + "\n"
    try:
        with open(wiki.state_path(CALL_LOG), "a", encoding="utf-8") as fh:
            fh.write(line)
    except OSError:
        pass  # cost history is best-effort local state; never fail a call over it


def read_calls(wiki: Wiki) -> list[dict[str, Any]]:
    path = wiki.state_dir / CALL_LOG
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


# --------------------------------------------------------------------------- offline


class OfflineBackend(Backend):
    """No network, no key: callers rank lexically and answer extractively instead of asking."""

    name = "offline"
    is_llm = False
    default_model = "extractive"

    def complete(
        self, prompt: str, *, system: str = "", max_tokens: int = 1024, purpose: str = ""
    ) -> Completion:
        raise BackendFailed(
            "the offline backend does not generate text; use --backend anthropic or claude-cli."
        )


# --------------------------------------------------------------------------- mock


Responder = Callable[[str, str], str]


class MockBackend(Backend):
    """Scripted responses for tests, through the real registry.

    In-process: ``MockBackend.enqueue("text", ...)`` queues responses (a callable
    ``(prompt, purpose) -> text`` may stand in for one); ``MockBackend.history`` records every
    (purpose, prompt). From the CLI: ``LLM_WIKI_MOCK_FILE`` names either a ``.py`` file defining
    ``respond(prompt, purpose) -> str``, or a JSON/YAML list of rules
    ``{purpose?, match? (regex), response}`` where the first matching rule answers. With
    ``LLM_WIKI_MOCK_LOG`` set, each prompt is appended there as a JSON line.
    """

    name = "mock"
    default_model = "mock-1"
    queue: ClassVar[list[str | Responder]] = []
    history: ClassVar[list[tuple[str, str]]] = []

    @classmethod
    def enqueue(cls, *responses: str | Responder) -> None:
        cls.queue.extend(responses)

    @classmethod
    def reset(cls) -> None:
        cls.queue.clear()
        cls.history.clear()

    def complete(
        self, prompt: str, *, system: str = "", max_tokens: int = 1024, purpose: str = ""
    ) -> Completion:
        full = f"{system}\n\n{prompt}" if system else prompt
        type(self).history.append((purpose, full))
        log = os.environ.get(ENV_MOCK_LOG)
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(
                    json.dumps({"purpose": purpose, "prompt": full}, ensure_ascii=False) + "\n"
                )
        text = self._respond(full, purpose)
        if isinstance(text, BaseException):
            raise text
        return Completion(text, estimate_tokens(full), estimate_tokens(text), self.model)

    def _respond(self, prompt: str, purpose: str) -> Any:
        if type(self).queue:
            item = type(self).queue.pop(0)
            return item(prompt, purpose) if callable(item) else item
        path = os.environ.get(ENV_MOCK_FILE)
        if not path:
            raise BackendFailed(
                "the mock backend has no scripted response; enqueue one or set LLM_WIKI_MOCK_FILE."
            )
        return _mock_file_response(Path(path), prompt, purpose)


def _mock_file_response(path: Path, prompt: str, purpose: str) -> str:
    if path.suffix == ".py":
        namespace: dict[str, Any] = {"__file__": str(path)}
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)  # noqa: S102 - test scripts only
        return str(namespace["respond"](prompt, purpose))
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        rules = json.loads(text)
    else:
        from llm_wiki.entries import load_yaml

        rules = load_yaml(text, str(path))
    for rule in rules or []:
        if isinstance(rule, str):
            return rule
        if rule.get("purpose") and rule["purpose"] != purpose:
            continue
        if rule.get("match") and not re.search(rule["match"], prompt):
            continue
        return str(rule.get("response", ""))
    raise BackendFailed(f"no rule in {path} answers purpose {purpose!r}; add one.")


register("offline", OfflineBackend)
register("mock", MockBackend)
