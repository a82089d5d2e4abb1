"""The openai backend against a loopback Chat Completions server (429, 500, timeout, a body that
is not JSON, a reply without `choices`), per-model limits and the max_tokens every call sends.
No test touches the network."""

from __future__ import annotations

import json

import pytest

from conftest import run_module, subprocess_env, write_args
from loopback import ChatAPI


@pytest.fixture
def api(monkeypatch):
    server = ChatAPI()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("LLM_WIKI_MAX_RETRIES", "2")
    yield server
    server.close()


def backend(wiki, name="openai", model="smollm2"):
    from llm_wiki.backends import get_backend

    return get_backend(wiki, name, model)


def set_limits(wiki, model: str, **limits: int) -> None:
    import yaml

    data = yaml.safe_load(wiki.settings_path.read_text()) or {}
    data.setdefault("models", {})[model] = limits
    wiki.settings_path.write_text(yaml.safe_dump(data))


def test_one_chat_request_with_system_and_max_tokens_is_logged(wiki, api):
    from llm_wiki.backends import call, read_calls

    api.reply("Use Postgres.", tokens_in=42, tokens_out=5)
    result = call(wiki, backend(wiki), "Which DB?", purpose="test", scope="shared", system="sys")
    assert (result.text, result.tokens_in, result.tokens_out) == ("Use Postgres.", 42, 5)
    (request,) = api.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == "Bearer not-needed"  # a local server: no key
    assert request["body"]["model"] == "smollm2"
    assert request["body"]["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Which DB?"},
    ]
    assert request["body"]["max_tokens"] == 1024  # local servers read max_tokens, nothing else
    assert "max_completion_tokens" not in request["body"]
    (logged,) = read_calls(wiki)
    assert logged["backend"] == "openai" and logged["model"] == "smollm2"
    assert logged["ok"] is True and (logged["tokens_in"], logged["tokens_out"]) == (42, 5)
    assert (logged["max_tokens"], logged["context_window"]) == (1024, 8192)


def test_key_and_base_url_from_settings(wiki, api, monkeypatch):
    import yaml

    from llm_wiki.backends import call

    monkeypatch.delenv("OPENAI_BASE_URL")
    data = yaml.safe_load(wiki.settings_path.read_text()) or {}
    data["openai"] = {"base_url": api.url, "api_key": "sk-from-settings"}
    wiki.settings_path.write_text(yaml.safe_dump(data))
    call(wiki, backend(wiki), "q", purpose="t", scope="s")
    assert api.requests[0]["headers"]["authorization"] == "Bearer sk-from-settings"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")  # the environment wins
    call(wiki, backend(wiki), "q", purpose="t", scope="s")
    assert api.requests[1]["headers"]["authorization"] == "Bearer sk-env"


@pytest.mark.parametrize(
    "payload",
    [
        b"{not json",
        b'{"id": "x", "object": "chat.completion", "model": "m"}',  # no choices
        b'{"id": "x", "choices": []}',
        b'{"id": "x", "choices": [{"index": 0, "message": {"role": "assistant"}}]}',  # no text
        b'{"id": "x", "choices": "nope"}',
    ],
    ids=["not-json", "no-choices", "empty-choices", "no-content", "choices-not-a-list"],
)
def test_malformed_body_fails_cleanly(wiki, api, payload):
    from llm_wiki.backends import call, read_calls
    from llm_wiki.errors import BackendFailed

    api.script.append((200, {}, payload, 0))
    with pytest.raises(BackendFailed) as info:
        call(wiki, backend(wiki), "q", purpose="t", scope="s")
    assert "\n" not in info.value.message and "try again" in info.value.message
    assert read_calls(wiki)[-1]["ok"] is False


def test_unreachable_server_says_so(wiki, monkeypatch):
    import socket

    from llm_wiki.backends import call
    from llm_wiki.errors import BackendFailed

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("LLM_WIKI_MAX_RETRIES", "0")
    with pytest.raises(BackendFailed) as info:
        call(wiki, backend(wiki), "q", purpose="t", scope="s")
    assert "is the server running? Check OPENAI_BASE_URL" in info.value.message


def test_hosted_openai_needs_a_key(cli, wiki_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    cli(*write_args())
    result = cli("query", "Which database?", "--backend", "openai", code=1)
    assert result.stderr.strip().startswith(
        "Error: No API key for the openai backend: set OPENAI_API_KEY"
    )


def test_hosted_openai_gets_max_completion_tokens(wiki, api, monkeypatch):
    """api.openai.com's newer models refuse max_tokens; a settings switch says which to send."""
    import yaml

    from llm_wiki.backends import call

    data = yaml.safe_load(wiki.settings_path.read_text()) or {}
    data["openai"] = {"max_tokens_field": "max_completion_tokens"}
    wiki.settings_path.write_text(yaml.safe_dump(data))
    call(wiki, backend(wiki), "q", purpose="t", scope="s", max_tokens=300)
    assert api.requests[0]["body"]["max_completion_tokens"] == 300
    assert "max_tokens" not in api.requests[0]["body"]


# --------------------------------------------------------------------------- per-model limits


def test_every_call_sends_its_own_max_tokens_within_the_limits(wiki, api):
    from llm_wiki.backends import call, read_calls

    set_limits(wiki, "smollm2", context_window=2048, max_output=256)
    call(wiki, backend(wiki), "q", purpose="t", scope="s", max_tokens=1024)  # capped to 256
    call(wiki, backend(wiki), "q", purpose="t", scope="s", max_tokens=100)  # its own
    long_prompt = "word " * 2100  # about 3,500 tokens by the estimator: over the window
    from llm_wiki.errors import BackendFailed

    with pytest.raises(BackendFailed) as info:
        call(wiki, backend(wiki), long_prompt, purpose="t", scope="s")
    assert "2048-token context window of smollm2" in info.value.message
    assert "models.smollm2.context_window" in info.value.message
    assert [r["body"]["max_tokens"] for r in api.requests] == [256, 100]  # the third never sent
    logged = read_calls(wiki)
    assert [(c["max_tokens"], c["context_window"], c["ok"]) for c in logged] == [
        (256, 2048, True),
        (100, 2048, True),
        (0, 2048, False),
    ]


def test_a_reply_cut_at_max_tokens_is_marked_in_the_call_log(wiki, api):
    from llm_wiki.backends import call, read_calls

    api.reply("The ledger is in", finish="length")
    call(wiki, backend(wiki), "q", purpose="t", scope="s")
    assert read_calls(wiki)[-1]["stop"] == "length"


def test_bad_limits_in_settings_are_one_line(cli, wiki_path, api):
    cli(*write_args())
    settings = wiki_path / "settings.yaml"
    settings.write_text(settings.read_text() + "\nmodels:\n  smollm2:\n    context_window: lots\n")
    result = cli("query", "Which database?", "--backend", "openai", "--model", "smollm2", code=2)
    assert "models.smollm2.context_window is 'lots'" in result.stderr


def test_model_names_with_dots_have_limits(wiki):
    from llm_wiki.backends import limits

    set_limits(wiki, "qwen2.5:0.5b", context_window=4096)
    got = limits(wiki, backend(wiki, model="qwen2.5:0.5b"))
    assert (got.context_window, got.max_output, got.source) == (4096, 2048, "settings")
    assert limits(wiki, backend(wiki, model="other")).source == "default"


def test_query_through_openai_end_to_end(cli, wiki_path, api):
    written = cli.json(*write_args("Use Postgres for the ledger"))
    api.reply(json.dumps({"ids": [written["id"]]}), tokens_in=100, tokens_out=10)
    api.reply(f"The ledger is in Postgres [{written['id']}].", tokens_in=200, tokens_out=20)
    out = cli.json(
        "query", "Which database holds the ledger?", "--backend", "openai", "--model", "smollm2"
    )
    assert out["mode"] == "llm" and out["backend"] == "openai"
    assert (out["tokens_in"], out["tokens_out"]) == (300, 30)
    assert [c["id"] for c in out["cited"]] == [written["id"]]
    assert [r["body"]["max_tokens"] for r in api.requests] == [300, 1024]


def test_offline_and_write_never_load_the_openai_sdk(wiki_path):
    env = subprocess_env(LLM_WIKI_DIR=str(wiki_path))
    proc = run_module(*write_args(), env=env)
    assert proc.returncode == 0, proc.stderr
    probe = (
        "import sys, runpy; sys.argv = ['llm-wiki', 'query', 'What holds the ledger?']\n"
        "try:\n    runpy.run_module('llm_wiki', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in ('openai', 'httpx2') if m in sys.modules), file=sys.stderr)\n"
    )
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert "Use Postgres" in out.stdout
    assert out.stderr.strip().splitlines()[-1] == "[]"


def test_stats_show_the_limits_and_the_call_log_the_budgets(cli, wiki_path, api):
    import yaml

    data = yaml.safe_load((wiki_path / "settings.yaml").read_text())
    data.update(backend="openai", model="smollm2")
    data["models"] = {"smollm2": {"context_window": 4096, "max_output": 512}}
    (wiki_path / "settings.yaml").write_text(yaml.safe_dump(data))
    written = cli.json(*write_args("Use Postgres for the ledger"))
    api.reply(json.dumps({"ids": [written["id"]]}), tokens_in=100, tokens_out=10)
    api.reply(f"The ledger is in Postgres [{written['id']}].", tokens_in=200, tokens_out=20)
    out = cli.json("query", "Which database holds the ledger?")
    assert out["budget"]["prompt_tokens"] == 4096 - 512 - 32
    assert [r["body"]["max_tokens"] for r in api.requests] == [300, 512]
    stats = cli.json("stats")["llm"]
    assert stats["limits"] == {
        "backend": "openai",
        "model": "smollm2",
        "context_window": 4096,
        "max_output": 512,
        "source": "settings",
    }
    model = stats["by_model"]["openai/smollm2"]
    assert (model["calls"], model["context_window"], model["max_tokens"]) == (2, 4096, 512)
    text = cli("stats").stdout
    assert "openai/smollm2: 2 calls, 4,096-token window, replies up to 512 tokens" in text
    assert (
        "model limits (openai/smollm2, from settings): 4,096-token context window, replies up "
        "to 512 tokens" in text
    )
