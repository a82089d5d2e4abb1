"""LLM backends: one small class each, one method (prompt in, text and token counts out).

The backend is chosen by ``--backend`` > ``LLM_WIKI_BACKEND`` > settings.yaml ``backend`` >
``offline`` (:func:`resolve`, which also says where the name came from); only the front door
(:mod:`llm_wiki.session`) and the adapters handle names, the flows take a :class:`Backend`. Every call goes through :func:`call`, which appends one line to
``.llm-wiki/llm-calls.jsonl`` (time, purpose, scope, backend, model, tokens, ms, ok), so cost is
always visible. Heavy SDKs are imported inside the backend that needs them, never at start-up.

Token counts for budgets use one estimator, :func:`estimate_tokens` (UTF-8 bytes / 3, rounded
up), unless a backend reports real counts.

**Per-model limits** (:func:`limits`): each model has a context window and an output cap, from
settings.yaml ``models.<model>`` (``context_window``, ``max_output``) or the backend's defaults.
:func:`call` sends every request its own ``max_tokens`` (what the caller asked, cut to the output
cap and to what the context window leaves after the prompt), because local servers apply no cap
of their own; the flows shrink their prompt budgets to fit (:meth:`Limits.prompt_room`). Both
numbers go into the call log.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import llm_wiki.clock as clock
import llm_wiki.progress as progress
from llm_wiki.errors import BackendFailed, BackendUnavailable, InvalidInput, WikiError
from llm_wiki.records import record
from llm_wiki.wiki import Settings, Wiki
from llm_wiki.yaml_input import load_yaml

if TYPE_CHECKING:
    from pathlib import Path

ENV_BACKEND = "LLM_WIKI_BACKEND"
ENV_MODEL = "LLM_WIKI_MODEL"
ENV_MOCK_FILE = "LLM_WIKI_MOCK_FILE"
ENV_MOCK_LOG = "LLM_WIKI_MOCK_LOG"
DEFAULT_BACKEND = "offline"
CALL_LOG = "llm-calls.jsonl"


def estimate_tokens(text: str) -> int:
    """The one token estimator: UTF-8 bytes / 3, rounded up (conservative for English)."""
    return -(-len(text.encode("utf-8")) // 3)


@record
class Completion:
    text: str
    tokens_in: int
    tokens_out: int
    model: str
    stop: str = ""  # why generation stopped, when the API says ("length": cut at max_tokens)


PROMPT_MARGIN = 32  # tokens kept free for the chat template's own framing of the messages
MIN_REPLY = 64  # a call whose prompt leaves less room than this for the reply is not sent


@record
class Limits:
    """What one model can take: tokens it reads and writes in one call, and the most it writes.
    ``source``: "settings" (settings.yaml ``models.<model>``) or "default" (the backend's)."""

    context_window: int
    max_output: int
    source: str = "default"

    def reply_tokens(self, wanted: int) -> int:
        """The reply a caller wanting ``wanted`` tokens gets: at most the output cap, and never
        more than half the context window (the prompt needs the rest)."""
        return max(1, min(wanted, self.max_output, self.context_window // 2))

    def prompt_room(self, wanted_reply: int, budget: int | None = None) -> int:
        """The largest prompt (system text included) that leaves room for the reply in the
        context window; ``budget``: the caller's own cap, kept when it is smaller."""
        room = self.context_window - self.reply_tokens(wanted_reply) - PROMPT_MARGIN
        return room if budget is None else min(budget, room)

    def to_dict(self) -> dict[str, Any]:
        return {
            "context_window": self.context_window,
            "max_output": self.max_output,
            "source": self.source,
        }


class Backend:
    """Base class. Subclasses set ``name`` and implement :meth:`complete`."""

    name: ClassVar[str] = ""
    is_llm: ClassVar[bool] = True  # False: no text generation (offline)
    needs_key: ClassVar[bool] = False
    key_env_var: ClassVar[str | None] = None
    default_model: ClassVar[str] = ""
    context_window: ClassVar[int] = 200_000  # defaults for the backend's models (see limits())
    max_output: ClassVar[int] = 8192
    timeout_s: ClassVar[float] = 60.0  # per call, unless LLM_WIKI_TIMEOUT says otherwise
    max_retries: ClassVar[int] = 2  # HTTP backends, unless LLM_WIKI_MAX_RETRIES says otherwise

    def __init__(self, model: str | None = None, settings: Settings | None = None) -> None:
        self.model = model or self.default_model
        self.settings = settings or Settings({})  # the wiki's, for backend options (base URL)

    def check(self) -> None:
        """Raise BackendUnavailable (with the fix) if this backend cannot run here."""
        if self.needs_key and self.key_env_var and not os.environ.get(self.key_env_var):
            raise BackendUnavailable(
                f"No API key for the {self.name} backend: set {self.key_env_var} (for scheduled "
                "jobs, in ~/.config/llm-wiki/env), or choose another --backend (offline needs no key)."
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
    return cls(picked or None, wiki.settings if wiki is not None else None), source


def limits(wiki: Wiki | None, backend: Backend) -> Limits:
    """The model's limits: settings.yaml ``models.<model>.context_window`` / ``max_output``
    (either may be given alone), else the backend's defaults. Model names may hold dots, so the
    ``models`` mapping is read whole rather than by dotted path."""
    table = wiki.settings.get("models", {}) if wiki is not None else {}
    own = table.get(backend.model) if isinstance(table, dict) else None
    if not isinstance(own, dict):
        return Limits(backend.context_window, backend.max_output, "default")
    values = []
    for key, default in (
        ("context_window", backend.context_window),
        ("max_output", backend.max_output),
    ):
        raw = own.get(key, default)
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
            raise InvalidInput(
                f"settings.yaml models.{backend.model}.{key} is {raw!r}; set it to a whole number "
                "of tokens, e.g. 4096."
            )
        values.append(raw)
    window, output = values
    if window < 2 * MIN_REPLY + PROMPT_MARGIN:
        raise InvalidInput(
            f"settings.yaml models.{backend.model}.context_window {window} is too small; use at "
            "least 1024 tokens."
        )
    return Limits(window, output, "settings")


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
    fit = limits(wiki, backend)
    prompt_tokens = estimate_tokens(system + prompt) if system else estimate_tokens(prompt)
    room = fit.context_window - prompt_tokens - PROMPT_MARGIN
    send = min(max_tokens, fit.max_output, max(0, room))
    record: dict[str, Any] = {
        "time": clock.stamp(),
        "purpose": purpose,
        "scope": scope,
        "backend": backend.name,
        "model": backend.model,
        "max_tokens": send,
        "context_window": fit.context_window,
    }
    try:
        if send < min(max_tokens, MIN_REPLY):
            raise BackendFailed(
                f"the prompt (about {prompt_tokens} tokens) leaves no room for a reply in the "
                f"{fit.context_window}-token context window of {backend.model}; raise "
                f"models.{backend.model}.context_window in settings.yaml if the model takes more."
            )
        result = backend.complete(prompt, system=system, max_tokens=send, purpose=purpose)
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
    if result.stop:
        record["stop"] = result.stop
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
        from pathlib import Path  # deferred: start-up (an offline query loads no pathlib)

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


def _http_limits(backend: Backend) -> tuple[float, int]:
    """(timeout in seconds, retries) for one call of an HTTP backend: the environment
    (``LLM_WIKI_TIMEOUT``, ``LLM_WIKI_MAX_RETRIES``) over the backend's defaults."""
    timeout = _env_number(ENV_TIMEOUT, backend.timeout_s)
    return timeout, int(_env_number(ENV_RETRIES, backend.max_retries))


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

    def check(self) -> None:
        if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
            super().check()

    def complete(
        self, prompt: str, *, system: str = "", max_tokens: int = 1024, purpose: str = ""
    ) -> Completion:
        self.check()
        timeout, retries = _http_limits(self)
        try:
            import anthropic  # deferred: the SDK costs seconds to import; only this backend needs it
        except ImportError:  # pragma: no cover - a dependency of the package
            raise BackendUnavailable(
                "the anthropic SDK is not installed: pip install anthropic, or use "
                "--backend offline."
            ) from None
        key = os.environ.get("ANTHROPIC_API_KEY")
        token = None if key else os.environ.get("ANTHROPIC_AUTH_TOKEN")
        base_url = os.environ.get("ANTHROPIC_BASE_URL") or None
        client = anthropic.Anthropic(
            api_key=key,
            auth_token=token,
            base_url=base_url,
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
        message = _sdk_call(
            anthropic,
            anthropic.AnthropicError,
            lambda: client.messages.create(**kwargs),
            where=base_url or "the Anthropic API",  # a local server is named by its URL
            timeout=timeout,
            retries=retries,
            key_env="ANTHROPIC_API_KEY",
            reach_hint="check the network or ANTHROPIC_BASE_URL",
        )
        return _message_completion(message, self.model)


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line (whitespace runs folded), cut to ``limit`` characters with "…"."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sdk_call(
    sdk: Any,
    base_error: type[Exception],
    call: Callable[[], Any],
    *,
    where: str,
    timeout: float,
    retries: int,
    key_env: str,
    reach_hint: str,
) -> Any:
    """``call()``, with the errors the anthropic and openai SDKs share (they name their exception
    classes alike) turned into one-line messages that say what to do."""
    try:
        return call()
    except sdk.APITimeoutError:
        raise BackendFailed(
            f"{where} did not answer within {timeout:g} s (after {retries} retries); try "
            f"again, or raise {ENV_TIMEOUT}."
        ) from None
    except sdk.AuthenticationError:
        raise BackendUnavailable(f"{where} refused the key (401); check {key_env}.") from None
    except sdk.APIStatusError as exc:
        raise BackendFailed(
            f"{where} answered HTTP {exc.status_code} (after {retries} retries): "
            f"{one_line(exc.message)}; try again later or use --backend offline."
        ) from None
    except sdk.APIConnectionError as exc:
        raise BackendFailed(f"cannot reach {where} ({one_line(str(exc))}); {reach_hint}.") from None
    except (base_error, ValueError) as exc:  # malformed body, bad JSON
        raise BackendFailed(
            f"{where} sent a response that could not be read ({one_line(str(exc))}); try again."
        ) from None


def _message_completion(message: Any, model: str) -> Completion:
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise BackendFailed("the Anthropic API response has no content; try again.")
    parts = [getattr(block, "text", None) for block in content]
    texts = [p for p in parts if isinstance(p, str)]
    if not texts:
        raise BackendFailed("the Anthropic API response holds no text; try again.")
    usage = getattr(message, "usage", None)
    # the prompt's size: input_tokens counts only what the prompt cache did not serve
    counts = [
        getattr(usage, key, None)
        for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    ]
    tokens_in = sum(c for c in counts if isinstance(c, int))
    tokens_out = getattr(usage, "output_tokens", None)
    text = "".join(texts)
    return Completion(
        text=text,
        tokens_in=tokens_in,
        tokens_out=int(tokens_out) if isinstance(tokens_out, int) else estimate_tokens(text),
        model=str(getattr(message, "model", "") or model),
        stop="max_tokens" if getattr(message, "stop_reason", None) == "max_tokens" else "",
    )


# --------------------------------------------------------------------------- openai

OPENAI_HOSTED = "https://api.openai.com/v1"


class OpenAIBackend(Backend):
    """Any OpenAI-compatible Chat Completions endpoint (OpenAI itself, Ollama, llama.cpp's
    servers, vLLM, LM Studio) through the official ``openai`` SDK, imported only when a call is
    made.

    Endpoint: ``OPENAI_BASE_URL`` > settings.yaml ``openai.base_url`` > OpenAI's own. Key:
    ``OPENAI_API_KEY`` > settings.yaml ``openai.api_key``; a server of your own needs none (a
    placeholder is sent). The reply cap goes out as ``max_tokens``, which every local server
    reads (llama-cpp-python ignores ``max_completion_tokens`` and then writes until the context
    is full); OpenAI's own endpoint gets ``max_completion_tokens``, which its newer models
    require. settings.yaml ``openai.max_tokens_field`` overrides the choice. Timeout and retries
    as for anthropic (``LLM_WIKI_TIMEOUT``, ``LLM_WIKI_MAX_RETRIES``).

    The default limits are a small local model's (8,192-token window, 2,048-token replies), so
    budgets stay safe on any server; set ``models.<model>`` in settings.yaml for a larger one.
    """

    name = "openai"
    key_env_var = "OPENAI_API_KEY"
    default_model = "gpt-5.4-mini"  # a small model the installed SDK (3.57) names
    context_window = 8192
    max_output = 2048

    @property
    def base_url(self) -> str:
        return str(
            os.environ.get("OPENAI_BASE_URL") or self.settings.get("openai.base_url") or ""
        ).rstrip("/")

    def _key(self) -> str:
        return str(os.environ.get("OPENAI_API_KEY") or self.settings.get("openai.api_key") or "")

    def check(self) -> None:
        hosted = self.base_url in ("", OPENAI_HOSTED)
        if hosted and not self._key():
            raise BackendUnavailable(
                "No API key for the openai backend: set OPENAI_API_KEY, or point "
                "OPENAI_BASE_URL (settings.yaml openai.base_url) at a local server such as "
                "http://127.0.0.1:11434/v1 (Ollama)."
            )

    def _max_tokens_field(self) -> str:
        field = self.settings.get("openai.max_tokens_field")
        if field is None:
            return "max_completion_tokens" if self.base_url in ("", OPENAI_HOSTED) else "max_tokens"
        if field not in ("max_tokens", "max_completion_tokens"):
            raise InvalidInput(
                f"settings.yaml openai.max_tokens_field is {field!r}; use max_tokens or "
                "max_completion_tokens."
            )
        return str(field)

    def complete(
        self, prompt: str, *, system: str = "", max_tokens: int = 1024, purpose: str = ""
    ) -> Completion:
        self.check()
        timeout, retries = _http_limits(self)
        field = self._max_tokens_field()
        where = self.base_url or OPENAI_HOSTED
        try:
            import openai  # deferred: the SDK costs about a second to import
        except ImportError:  # pragma: no cover - a dependency of the package
            raise BackendUnavailable(
                "the openai SDK is not installed: pip install openai, or use --backend offline."
            ) from None
        client = openai.OpenAI(
            api_key=self._key() or "not-needed",  # a local server takes any key; the SDK wants one
            base_url=self.base_url or None,
            timeout=timeout,
            max_retries=retries,
        )
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, field: max_tokens}
        reply = _sdk_call(
            openai,
            openai.OpenAIError,
            lambda: client.chat.completions.create(**kwargs),
            where=where,
            timeout=timeout,
            retries=retries,
            key_env="OPENAI_API_KEY",
            reach_hint="is the server running? Check OPENAI_BASE_URL",
        )
        return _chat_completion(reply, self.model, where)


def _chat_completion(reply: Any, model: str, where: str) -> Completion:
    """A Chat Completions reply as a Completion; a reply without a message's text fails."""
    choices = getattr(reply, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise BackendFailed(f"the reply from {where} has no choices; try again.")
    message = getattr(choices[0], "message", None)
    text = getattr(message, "content", None)
    if not isinstance(text, str):
        raise BackendFailed(f"the reply from {where} holds no text; try again.")
    usage = getattr(reply, "usage", None)
    tokens_in = getattr(usage, "prompt_tokens", None)
    tokens_out = getattr(usage, "completion_tokens", None)
    stop = getattr(choices[0], "finish_reason", None)
    return Completion(
        text=text,
        tokens_in=tokens_in if isinstance(tokens_in, int) else 0,
        tokens_out=tokens_out if isinstance(tokens_out, int) else estimate_tokens(text),
        model=str(getattr(reply, "model", "") or model),
        stop=stop if isinstance(stop, str) and stop != "stop" else "",
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
register("openai", OpenAIBackend)
