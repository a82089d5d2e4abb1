"""LLM backends: one small class each, one method (prompt in, text and token counts out).

The backend is chosen by ``--backend`` > ``LLM_WIKI_BACKEND`` > settings.yaml ``backend`` >
``offline`` (:func:`resolve`, which also says where the name came from); only the front door
(:mod:`llm_wiki.session`) and the adapters handle names, the flows take a :class:`Backend`. Every call goes through :func:`call`, which appends one line to
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

import llm_wiki.clock as clock
import llm_wiki.progress as progress
from llm_wiki.entries import load_yaml
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
_UNLISTED: set[str] = set()  # registered and usable, but not offered to users (the test double)

SOURCES = ("flag", "env", "settings", "default")  # where the backend's name came from


def register(name: str, target: type[Backend] | str, *, listed: bool = True) -> None:
    _REGISTRY[name] = target
    if listed:
        _UNLISTED.discard(name)
    else:
        _UNLISTED.add(name)


def backend_names(*, llm_only: bool = False) -> list[str]:
    """The backends a user may choose (``--backend`` help, error messages); ``llm_only``: those
    that generate text. The test double ``mock`` works but is not listed."""
    names = sorted(n for n in _REGISTRY if n not in _UNLISTED)
    return [n for n in names if backend_class(n).is_llm] if llm_only else names


def backend_class(name: str) -> type[Backend]:
    target = _REGISTRY.get(name)
    if target is None:
        raise InvalidInput(f"unknown backend {name!r}; choose one of {', '.join(backend_names())}.")
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
        _REGISTRY[name] = target
    return target


def resolve(
    wiki: Wiki | None, name: str | None = None, model: str | None = None
) -> tuple[Backend, str]:
    """The backend for this invocation and where its name came from (one of :data:`SOURCES`):
    ``--backend`` ("flag") > ``LLM_WIKI_BACKEND`` ("env") > settings.yaml ``backend``
    ("settings") > ``offline`` ("default"). Its model: ``--model`` > ``LLM_WIKI_MODEL`` >
    settings.yaml ``model`` (only with the settings' or the default backend) > the backend's
    own default."""
    env = os.environ.get(ENV_BACKEND)
    configured = wiki.settings.get("backend") if wiki is not None else None
    if name:
        chosen, source = name, "flag"
    elif env:
        chosen, source = env, "env"
    elif configured:
        chosen, source = str(configured), "settings"
    else:
        chosen, source = DEFAULT_BACKEND, "default"
    cls = backend_class(chosen)
    picked = model or os.environ.get(ENV_MODEL)
    if not picked and wiki is not None and source in ("settings", "default"):
        picked = wiki.settings.get("model")  # the settings' model goes with the settings' backend
    return cls(picked or None), source


def get_backend(wiki: Wiki | None, name: str | None = None, model: str | None = None) -> Backend:
    """:func:`resolve` without the source."""
    return resolve(wiki, name, model)[0]


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
    """Run one completion and log it (even when it fails) to .llm-wiki/llm-calls.jsonl.

    ``scope`` names the scope(s) whose entries the prompt holds (``a,b`` for several, see
    :func:`llm_wiki.access.scope_field`): every line of the call log carries it, so cost is
    counted per scope and a reader sees only the calls made over scopes they may read.
    """
    if not scope:
        raise ValueError("every LLM call must name the scope(s) its prompt holds")
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
        progress.current().called(record["tokens_in"])
        raise
    record.update(
        model=result.model or backend.model,
        tokens_in=result.tokens_in,
        tokens_out=result.tokens_out,
        ms=round((time.perf_counter() - start) * 1000),
        ok=True,
    )
    _log_call(wiki, record)
    progress.current().called(result.tokens_in + result.tokens_out)
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
    rules = json.loads(text) if path.suffix == ".json" else load_yaml(text, str(path))
    for rule in rules or []:
        if isinstance(rule, str):
            return rule
        if rule.get("purpose") and rule["purpose"] != purpose:
            continue
        if rule.get("match") and not re.search(rule["match"], prompt):
            continue
        return str(rule.get("response", ""))
    raise BackendFailed(f"no rule in {path} answers purpose {purpose!r}; add one.")


# --------------------------------------------------------------------------- anthropic

ENV_TIMEOUT = "LLM_WIKI_TIMEOUT"
ENV_RETRIES = "LLM_WIKI_MAX_RETRIES"


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"{name}={raw!r} is not a number; set it to e.g. 60.") from None
    if value < 0:
        raise InvalidInput(f"{name}={raw!r} must not be negative.")
    return value


class AnthropicBackend(Backend):
    """The Messages API through the official SDK (imported only when a call is made).

    The key comes from ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``), the endpoint from
    ``ANTHROPIC_BASE_URL`` when set. Each request has an explicit timeout (``LLM_WIKI_TIMEOUT``,
    default 60 s) and is retried by the SDK on 408/409/429/5xx and connection errors
    (``LLM_WIKI_MAX_RETRIES``, default 2), with backoff and ``retry-after``.
    """

    name = "anthropic"
    needs_key = True
    key_env_var = "ANTHROPIC_API_KEY"
    default_model = "claude-haiku-5-5"  # the newest Haiku the installed SDK (2.14) names
    timeout_s: ClassVar[float] = 60.0
    max_retries: ClassVar[int] = 2

    def check(self) -> None:
        if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
            super().check()

    def complete(
        self, prompt: str, *, system: str = "", max_tokens: int = 1024, purpose: str = ""
    ) -> Completion:
        self.check()
        timeout = _env_number(ENV_TIMEOUT, self.timeout_s)
        retries = int(_env_number(ENV_RETRIES, self.max_retries))
        try:
            import anthropic  # deferred: the SDK costs seconds to import; only this backend needs it
        except ImportError:  # pragma: no cover - a dependency of the package
            raise BackendUnavailable(
                "the anthropic SDK is not installed: pip install anthropic, or use "
                "--backend offline."
            ) from None
        key = os.environ.get("ANTHROPIC_API_KEY")
        token = None if key else os.environ.get("ANTHROPIC_AUTH_TOKEN")
        client = anthropic.Anthropic(
            api_key=key,
            auth_token=token,
            base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
            timeout=timeout,
            max_retries=retries,
        )
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": prompt}],
        }
        if system:
            kwargs["system"] = system
        try:
            message = client.messages.create(**kwargs)
        except anthropic.APITimeoutError:
            raise BackendFailed(
                f"the Anthropic API did not answer within {timeout:g} s (after {retries} "
                f"retries); try again, or raise {ENV_TIMEOUT}."
            ) from None
        except anthropic.AuthenticationError:
            raise BackendUnavailable(
                "the Anthropic API refused the key (401); check ANTHROPIC_API_KEY."
            ) from None
        except anthropic.APIStatusError as exc:
            raise BackendFailed(
                f"the Anthropic API answered HTTP {exc.status_code} (after {retries} retries): "
                f"{one_line(exc.message)}; try again later or use --backend offline."
            ) from None
        except anthropic.APIConnectionError as exc:
            raise BackendFailed(
                f"cannot reach the Anthropic API ({one_line(str(exc))}); check the network "
                "or ANTHROPIC_BASE_URL."
            ) from None
        except (anthropic.AnthropicError, ValueError) as exc:  # malformed body, bad JSON
            raise BackendFailed(
                f"the Anthropic API sent a response that could not be read "
                f"({one_line(str(exc))}); try again."
            ) from None
        return _message_completion(message, self.model)


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line (whitespace runs folded), cut to ``limit`` characters with "…"."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _message_completion(message: Any, model: str) -> Completion:
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise BackendFailed("the Anthropic API response has no content; try again.")
    parts = [getattr(block, "text", None) for block in content]
    texts = [p for p in parts if isinstance(p, str)]
    if not texts:
        raise BackendFailed("the Anthropic API response holds no text; try again.")
    usage = getattr(message, "usage", None)
    tokens_in = getattr(usage, "input_tokens", None)
    tokens_out = getattr(usage, "output_tokens", None)
    text = "".join(texts)
    return Completion(
        text=text,
        tokens_in=int(tokens_in) if isinstance(tokens_in, int) else 0,
        tokens_out=int(tokens_out) if isinstance(tokens_out, int) else estimate_tokens(text),
        model=str(getattr(message, "model", "") or model),
    )


# --------------------------------------------------------------------------- claude-cli


class ClaudeCliBackend(Backend):
    """Claude Code's own login: ``claude -p --model haiku --output-format json``, prompt on stdin.

    The system text is put ahead of the prompt. The timeout is ``LLM_WIKI_TIMEOUT`` (default
    120 s: the CLI starts slower than an API call).
    """

    name = "claude-cli"
    default_model = "haiku"
    executable: ClassVar[str] = "claude"
    timeout_s: ClassVar[float] = 120.0

    def check(self) -> None:
        import shutil  # deferred: only the claude-cli backend looks for an executable

        if shutil.which(self.executable) is None:
            raise BackendUnavailable(
                "No `claude` executable on PATH for the claude-cli backend: install Claude Code "
                "(and log in), or use --backend anthropic or offline."
            )

    def complete(
        self, prompt: str, *, system: str = "", max_tokens: int = 1024, purpose: str = ""
    ) -> Completion:
        import subprocess  # deferred: only the claude-cli backend runs a process

        self.check()
        timeout = _env_number(ENV_TIMEOUT, self.timeout_s)
        text_in = f"{system}\n\n{prompt}" if system else prompt
        argv = [self.executable, "-p", "--model", self.model, "--output-format", "json"]
        try:
            proc = subprocess.run(
                argv,
                input=text_in.encode(),
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise BackendFailed(
                f"`claude -p` did not finish within {timeout:g} s; try again, or raise "
                f"{ENV_TIMEOUT}."
            ) from None
        except OSError as exc:
            raise BackendUnavailable(f"cannot run `claude`: {exc.strerror}.") from None
        out = proc.stdout.decode("utf-8", "replace")
        try:
            data = json.loads(out)
        except json.JSONDecodeError:
            data = None
        if proc.returncode != 0 or not isinstance(data, dict):
            detail = one_line(proc.stderr.decode("utf-8", "replace") or out) or "no output"
            raise BackendFailed(
                f"`claude -p` failed (exit {proc.returncode}): {detail}; run `claude` once to "
                "log in, or use another backend."
            )
        if data.get("is_error") or not isinstance(data.get("result"), str):
            raise BackendFailed(
                f"`claude -p` reported an error: {one_line(str(data.get('result') or data))}."
            )
        usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
        tokens_in = sum(
            int(usage.get(key) or 0)
            for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        text = data["result"]
        return Completion(
            text=text,
            tokens_in=tokens_in or estimate_tokens(text_in),
            tokens_out=int(usage.get("output_tokens") or 0) or estimate_tokens(text),
            model=self.model,
        )


register("offline", OfflineBackend)
register("mock", MockBackend, listed=False)  # tests only: not offered in help or errors
register("anthropic", AnthropicBackend)
register("claude-cli", ClaudeCliBackend)
