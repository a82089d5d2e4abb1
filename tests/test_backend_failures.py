"""What every HTTP backend does when its server fails: 429 and 500 retried, a persistent 500 and
a timeout each one line naming the fix and logged as a failed call. Run against both loopback
servers (Messages API for anthropic, Chat Completions for openai). No test touches the network."""

from __future__ import annotations

import importlib
import time

import pytest

from loopback import ChatAPI, MessagesAPI

SERVERS = {
    # backend: (fake server, env naming its URL, key env and value or None to unset, SDK, model)
    "anthropic": (MessagesAPI, "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "test-key", "anthropic", None),
    "openai": (ChatAPI, "OPENAI_BASE_URL", "OPENAI_API_KEY", None, "openai", "smollm2"),
}  # fmt: skip


@pytest.fixture(params=sorted(SERVERS))
def served(request, monkeypatch, wiki):
    """(backend, server) for each HTTP backend, its SDK pointed at a fresh loopback server."""
    from llm_wiki.backends import get_backend

    fake, url_env, key_env, key, sdk, model = SERVERS[request.param]
    server = fake()
    monkeypatch.setenv(url_env, server.url)
    if key is None:
        monkeypatch.delenv(key_env, raising=False)
    else:
        monkeypatch.setenv(key_env, key)
    monkeypatch.setenv("LLM_WIKI_MAX_RETRIES", "2")
    importlib.import_module(sdk)  # loaded first: the timeout test times the request, not this
    yield get_backend(wiki, request.param, model), server
    server.close()


def test_429_and_500_are_retried(wiki, served):
    from llm_wiki.backends import call

    backend, api = served
    api.error(429, "slow down", **{"retry-after-ms": "10"})
    api.error(500, "oops", **{"retry-after-ms": "10"})
    api.reply("fine")
    assert call(wiki, backend, "q", purpose="t", scope="s").text == "fine"
    assert len(api.requests) == 3


def test_persistent_500_fails_in_one_line_and_is_logged(wiki, served, monkeypatch):
    from llm_wiki.backends import call, read_calls
    from llm_wiki.errors import BackendFailed

    backend, api = served
    monkeypatch.setenv("LLM_WIKI_MAX_RETRIES", "1")
    for _ in range(2):
        api.error(500, "overloaded", **{"retry-after-ms": "10"})
    with pytest.raises(BackendFailed) as info:
        call(wiki, backend, "q", purpose="t", scope="s")
    assert "HTTP 500" in info.value.message and "overloaded" in info.value.message
    assert "\n" not in info.value.message and api.url in info.value.message
    assert len(api.requests) == 2
    assert read_calls(wiki)[-1]["ok"] is False


def test_timeout_fails_with_the_fix(wiki, served, monkeypatch):
    from llm_wiki.backends import call, read_calls
    from llm_wiki.errors import BackendFailed

    backend, api = served
    monkeypatch.setenv("LLM_WIKI_TIMEOUT", "0.3")
    monkeypatch.setenv("LLM_WIKI_MAX_RETRIES", "0")
    api.script.append((200, {}, api.ok("late"), 4))
    started = time.monotonic()
    with pytest.raises(BackendFailed) as info:
        call(wiki, backend, "q", purpose="t", scope="s")
    assert time.monotonic() - started < 3.5  # gave up long before the 4 s reply
    assert "did not answer within 0.3 s" in info.value.message
    assert "LLM_WIKI_TIMEOUT" in info.value.message
    assert read_calls(wiki)[-1]["ok"] is False
