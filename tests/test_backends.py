"""LLM backends: anthropic against a loopback Messages API, claude-cli against a fake `claude`,
and the call log every call goes through. No test touches the network."""

from __future__ import annotations

import json
import stat

import pytest

from conftest import run_module, subprocess_env, write_args
from loopback import MessagesAPI


@pytest.fixture
def api(monkeypatch):
    server = MessagesAPI()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("LLM_WIKI_MAX_RETRIES", "2")
    yield server
    server.close()


def backend(wiki, name="anthropic", model=None):
    from llm_wiki.backends import get_backend

    return get_backend(wiki, name, model)


def test_anthropic_sends_one_messages_request_and_logs_it(wiki, api):
    from llm_wiki.backends import call, read_calls

    api.reply("Use Postgres.", tokens_in=42, tokens_out=5)
    result = call(wiki, backend(wiki), "Which DB?", purpose="test", scope="shared", system="sys")
    assert (result.text, result.tokens_in, result.tokens_out) == ("Use Postgres.", 42, 5)
    (request,) = api.requests
    assert request["path"] == "/v1/messages"
    assert request["headers"]["authorization"] == "Bearer test-key"  # SDK 2.x sends a bearer
    assert request["body"]["model"] == "claude-haiku-5-5"
    assert request["body"]["system"] == "sys"
    assert request["body"]["messages"] == [{"role": "user", "content": "Which DB?"}]
    (logged,) = read_calls(wiki)
    assert logged["backend"] == "anthropic" and logged["purpose"] == "test"
    assert logged["ok"] is True and logged["tokens_in"] == 42 and logged["tokens_out"] == 5
    assert set(logged) >= {"time", "scope", "model", "ms"}


def test_prompt_tokens_served_from_the_cache_count_too(wiki, api):
    """llama-server (like Anthropic) reports cached prompt tokens apart from input_tokens."""
    from llm_wiki.backends import call, read_calls

    body = json.loads(api.message("ok"))
    body["usage"] = {"input_tokens": 1, "cache_read_input_tokens": 25, "output_tokens": 8}
    api.script.append((200, {}, json.dumps(body).encode(), 0))
    assert call(wiki, backend(wiki), "q", purpose="t", scope="s").tokens_in == 26
    assert read_calls(wiki)[-1]["tokens_in"] == 26


def test_model_comes_from_flag_then_env(wiki, api, monkeypatch):
    from llm_wiki.backends import call

    monkeypatch.setenv("LLM_WIKI_MODEL", "claude-sonnet-5")
    call(wiki, backend(wiki), "q", purpose="t", scope="s")
    call(wiki, backend(wiki, model="claude-opus-5"), "q", purpose="t", scope="s")
    assert [r["body"]["model"] for r in api.requests] == ["claude-sonnet-5", "claude-opus-5"]


@pytest.mark.parametrize(
    "payload",
    [b"{not json", b'{"type": "message", "content": "nope"}', b'{"type": "message"}'],
)
def test_malformed_body_fails_cleanly(wiki, api, payload):
    from llm_wiki.backends import call
    from llm_wiki.errors import BackendFailed

    api.script.append((200, {}, payload, 0))
    with pytest.raises(BackendFailed) as info:
        call(wiki, backend(wiki), "q", purpose="t", scope="s")
    assert "\n" not in info.value.message


def test_no_key_is_one_line_with_the_fix(cli, wiki_path):
    cli(*write_args())
    result = cli("query", "Which database?", "--backend", "anthropic", code=1)
    assert result.stderr.strip() == (
        "Error: No API key for the anthropic backend: set ANTHROPIC_API_KEY (for scheduled "
        "jobs, in ~/.config/llm-wiki/env), or choose another --backend (offline needs no key)."
    )


def test_query_through_anthropic_end_to_end(cli, wiki_path, api):
    written = cli.json(*write_args("Use Postgres for the ledger"))
    api.reply(json.dumps({"ids": [written["id"]]}), tokens_in=100, tokens_out=10)
    api.reply(f"The ledger is in Postgres [{written['id']}].", tokens_in=200, tokens_out=20)
    out = cli.json("query", "Which database holds the ledger?", "--backend", "anthropic")
    assert out["mode"] == "llm" and out["backend"] == "anthropic"
    assert (out["tokens_in"], out["tokens_out"]) == (300, 30)
    assert [c["id"] for c in out["cited"]] == [written["id"]]
    assert [r["body"]["max_tokens"] for r in api.requests] == [300, 1024]


# --------------------------------------------------------------------------- claude-cli


FAKE_CLAUDE = """#!/bin/sh
# A stand-in for Claude Code: records its argv and stdin, answers like `--output-format json`.
printf '%s\\n' "$*" > "$FAKE_CLAUDE_DIR/argv"
cat > "$FAKE_CLAUDE_DIR/stdin"
if [ -n "$FAKE_CLAUDE_FAIL" ]; then echo "not logged in" >&2; exit 3; fi
cat "$FAKE_CLAUDE_DIR/reply"
"""


@pytest.fixture
def fake_claude(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "claude"
    exe.write_text(FAKE_CLAUDE)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_CLAUDE_DIR", str(bin_dir))

    def reply(result: str, is_error: bool = False) -> None:
        (bin_dir / "reply").write_text(
            json.dumps(
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": is_error,
                    "result": result,
                    "usage": {"input_tokens": 7, "cache_read_input_tokens": 3, "output_tokens": 2},
                }
            )
        )

    reply.dir = bin_dir  # type: ignore[attr-defined]
    return reply


def test_claude_cli_runs_print_mode_with_haiku(wiki, fake_claude):
    from llm_wiki.backends import call, read_calls

    fake_claude("Use Postgres.")
    result = call(
        wiki, backend(wiki, "claude-cli"), "Which DB?", purpose="t", scope="s", system="S"
    )
    assert (result.text, result.tokens_in, result.tokens_out) == ("Use Postgres.", 10, 2)
    assert (fake_claude.dir / "argv").read_text().split() == [
        "-p",
        "--model",
        "haiku",
        "--output-format",
        "json",
    ]
    assert (fake_claude.dir / "stdin").read_text() == "S\n\nWhich DB?"
    assert read_calls(wiki)[-1]["backend"] == "claude-cli"


def test_claude_cli_failures_are_one_line(wiki, fake_claude, monkeypatch):
    from llm_wiki.backends import call
    from llm_wiki.errors import BackendFailed

    fake_claude("rate limited", is_error=True)
    with pytest.raises(BackendFailed, match="reported an error: rate limited"):
        call(wiki, backend(wiki, "claude-cli"), "q", purpose="t", scope="s")
    monkeypatch.setenv("FAKE_CLAUDE_FAIL", "1")
    with pytest.raises(BackendFailed, match=r"failed \(exit 3\): not logged in"):
        call(wiki, backend(wiki, "claude-cli"), "q", purpose="t", scope="s")


def test_claude_cli_missing_is_backend_unavailable(cli, wiki_path, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    cli(*write_args())
    result = cli("query", "Which database?", "--backend", "claude-cli", code=1)
    assert result.stderr.startswith("Error: No `claude` executable on PATH")
    assert result.stderr.count("\n") == 1


def test_backend_is_chosen_by_flag_env_settings(wiki, monkeypatch):
    from llm_wiki.backends import get_backend

    assert get_backend(wiki).name == "offline"
    monkeypatch.setenv("LLM_WIKI_BACKEND", "claude-cli")
    assert get_backend(wiki).name == "claude-cli"
    assert get_backend(wiki, "anthropic").name == "anthropic"
    assert get_backend(wiki, "anthropic").model == "claude-haiku-5-5"


def test_offline_query_never_loads_an_sdk(wiki_path):
    env = subprocess_env(LLM_WIKI_DIR=str(wiki_path))
    proc = run_module(*write_args(), env=env)
    assert proc.returncode == 0, proc.stderr
    probe = (
        "import sys, runpy; sys.argv = ['llm-wiki', 'query', 'What holds the ledger?']\n"
        "try:\n    runpy.run_module('llm_wiki', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in ('anthropic', 'mcp', 'httpx', 'httpx2', 'jinja2') "
        "if m in sys.modules), file=sys.stderr)\n"
    )
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert "Use Postgres" in out.stdout
    assert out.stderr.strip().splitlines()[-1] == "[]"
