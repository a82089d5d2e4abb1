"""Per-model limits on a big wiki: a query on 10,000 entries with a 4,096-token model setting.

Prints the budgets the query used (the prompt budget after the answer's reply, the pick and
answer prompts' sizes, each call's max_tokens) beside the same query with no limits set, and
asserts that every prompt plus its reply fits the window. The mock backend answers by default;
with the real-model runtime present (tests/bench/setup_real_model.sh) the same query also runs
through SmolLM2-135M on llama-cpp-python's server, 4,096-token window.

Run: nice -n 10 .venv/bin/pytest tests/bench/test_model_limits_bench.py -s -p no:cacheprovider
(``LLM_WIKI_BENCH_ENTRIES`` changes the size.)
"""

from __future__ import annotations

import json
import os
import re
import sys

import pytest
import yaml

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from wikigen import make_entries, write_wiki  # noqa: E402

from conftest import Cli  # noqa: E402

N = int(os.environ.get("LLM_WIKI_BENCH_ENTRIES", "10000"))
WINDOW, OUTPUT = 4096, 512
QUESTION = "Which queue do we use for payment events, and why?"


@pytest.fixture(scope="module")
def big_wiki(tmp_path_factory):
    root = tmp_path_factory.mktemp("limits-bench") / "wiki"
    write_wiki(root, make_entries(N))
    proc = Cli(root)("index", code=None)
    assert proc.exit_code == 0, proc.stderr
    return root


def set_limits(root, model: str, **limits: int) -> None:
    data = yaml.safe_load((root / "settings.yaml").read_text()) or {}
    data["models"] = {model: limits} if limits else {}
    (root / "settings.yaml").write_text(yaml.safe_dump(data))


def respond(prompt: str, purpose: str) -> str:
    """Pick the first index line shown; answer citing the first entry opened."""
    ids = re.findall(r"\[(\d{4}-\d{2}-\d{2}-[a-z0-9-]+)\]", prompt)
    if purpose == "query.pick":
        return json.dumps({"ids": ids[:1]})
    opened = re.findall(r"^id: (\S+)$", prompt, re.M) or ids
    return f"The decision is recorded [{opened[0]}]."


def show(label: str, out: dict, calls: list[dict]) -> None:
    budget = out["budget"]
    print(f"\n{label}: {N:,} entries")
    print(f"  budget: {json.dumps(budget)}")
    for call in calls:
        print(
            f"  call {call['purpose']}: prompt {call['tokens_in']:,} tokens (as counted), "
            f"max_tokens {call['max_tokens']}, window {call['context_window']:,}, "
            f"{call['ms']} ms, ok {call['ok']}"
        )
    print(f"  picked_by {out['picked_by']}, mode {out['mode']}, llm_outcome {out['llm_outcome']}")


def read_calls(root) -> list[dict]:
    path = root / ".llm-wiki" / "llm-calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_query_budgets_on_a_big_wiki_with_a_4k_window(big_wiki):
    from llm_wiki.backends import MockBackend

    cli = Cli(big_wiki)
    rows = []
    for label, limits in (
        ("no limits set (mock backend defaults: 200,000-token window)", {}),
        (f"models.mock-1: {WINDOW:,}-token window, {OUTPUT}-token replies",
         {"context_window": WINDOW, "max_output": OUTPUT}),
    ):  # fmt: skip
        set_limits(big_wiki, "mock-1", **limits)
        before = len(read_calls(big_wiki))
        MockBackend.reset()
        MockBackend.enqueue(respond, respond)
        out = cli.json("query", QUESTION, "--backend", "mock")
        calls = read_calls(big_wiki)[before:]
        show(label, out, calls)
        rows.append((out, calls, [p for _, p in MockBackend.history]))
    (_, _, _), (small, calls, prompts) = rows
    assert small["budget"]["prompt_tokens"] == WINDOW - OUTPUT - 32
    from llm_wiki.backends import estimate_tokens

    for call, prompt in zip(calls, prompts, strict=True):
        assert estimate_tokens(prompt) + call["max_tokens"] <= WINDOW, call
    assert rows[0][0]["budget"]["prompt_tokens"] == 8000  # the setting, when the window allows


def test_the_same_query_through_the_real_model(big_wiki, tmp_path):
    import test_real_model as real

    env = real.runtime()
    server = real.start("openai", env)
    try:
        set_limits(big_wiki, real.MODEL, context_window=WINDOW, max_output=OUTPUT)
        before = len(read_calls(big_wiki))
        cpu = server.cpu()
        proc = real.cli(
            big_wiki,
            {"OPENAI_BASE_URL": server.base + "/v1"},
            "query", QUESTION, "--backend", "openai", "--model", real.MODEL, "--json",
        )  # fmt: skip
        cpu = server.cpu() - cpu
    finally:
        server.stop()
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1), proc.stderr
    out = json.loads(proc.stdout)
    calls = read_calls(big_wiki)[before:]
    show(f"SmolLM2-135M via llama-cpp-python, {WINDOW:,}-token window", out, calls)
    print(f"  server CPU {cpu:.1f} s for {len(calls)} calls")
    assert all(c["max_tokens"] <= OUTPUT and c["context_window"] == WINDOW for c in calls)
    assert all(c["tokens_in"] + c["max_tokens"] <= WINDOW for c in calls if c["ok"]), calls
