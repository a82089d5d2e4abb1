"""`llm-wiki ingest`: raw sources stored once, proposals checked against their quoted lines,
updates superseding, grown transcripts read from their new part, the inbox by the one clock.
LLM steps run on the scripted mock backend (tests/mock_ingest.py reads the prompt's lines)."""

from __future__ import annotations

import json
import os
import re
import stat

import pytest

import mock_ingest
from conftest import REPO, write_args

DATA = REPO / "tests" / "data" / "ingest"
CHAT = DATA / "team-chat.txt"
DAY2 = DATA / "team-chat-day2.txt"
DAY1_LINES = len(CHAT.read_text().splitlines())


@pytest.fixture
def mock():
    from llm_wiki.backends import MockBackend

    return MockBackend


@pytest.fixture(autouse=True)
def day_one(monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-04-14T15:00:00Z")


def raw_files(wiki_path):
    raw = wiki_path / "raw"
    return sorted(p.name for p in raw.iterdir()) if raw.is_dir() else []


def entries(cli, *args):
    return cli.json("list", *args)["entries"]


def ingest_lines(wiki_path):
    return [ln for ln in (wiki_path / "log.md").read_text().splitlines() if " ingest raw/" in ln]


def grown_chat(tmp_path):
    path = tmp_path / "team-chat.txt"
    path.write_bytes(CHAT.read_bytes() + DAY2.read_bytes())
    return path


def one(proposal):
    """A responder proposing just ``proposal`` (a callable of the prompt, or a dict)."""

    def respond(prompt, purpose):
        item = proposal(prompt) if callable(proposal) else proposal
        return json.dumps({"entries": [item]})

    return respond


# --------------------------------------------------------------------------- the sample


def test_sample_conversation_becomes_cited_entries(cli, wiki_path, mock):
    from llm_wiki.citations import find_quote, parse_line_ref

    mock.enqueue(mock_ingest.respond)
    out = cli.json("ingest", CHAT, "--backend", "mock")
    assert out["status"] == "ingested" and out["kind"] == "conversation"
    assert out["lines"] == [1, DAY1_LINES] and out["calls"] == 1 and out["parts"] == 1
    assert [w["type"] for w in out["written"]] == ["decision", "incident"]
    assert out["rejected"] == [] and out["quotes_checked"] == 2

    # The raw source: content-addressed, immutable, logged.
    sha = out["sha256"]
    assert out["raw"] == f"raw/{sha}.txt" and raw_files(wiki_path) == [f"{sha}.txt"]
    raw = wiki_path / out["raw"]
    assert raw.read_bytes() == CHAT.read_bytes()
    assert stat.S_IMODE(raw.stat().st_mode) == 0o444
    (line,) = ingest_lines(wiki_path)
    assert f"sha256={sha}" in line and f"bytes={len(CHAT.read_bytes())}" in line
    assert "kind=conversation scope=shared lines=1-22" in line
    assert all(w["id"] in line for w in out["written"])

    # The prompt: the schema's rule, every line numbered, nothing else of the wiki.
    ((purpose, prompt),) = mock.history
    assert purpose == "ingest"
    assert "A real decision was made" in prompt and "chatter that will not be" in prompt
    assert "L1: # #payments-eng" in prompt and "L22: [2026-04-14 14:06] maria" in prompt
    assert "This scope has no entries yet." in prompt

    # The entries: ingested, citing lines whose text holds the quote, findable in other words.
    text = CHAT.read_text()
    for written in out["written"]:
        shown = cli.json("show", written["id"])
        assert shown["origin"] == "ingested" and shown["scope"] == "shared"
        assert shown["aliases"] and shown["questions"]
        (source,) = shown["sources"]
        path, start, end = parse_line_ref(source)
        assert path == out["raw"]
        quote = re.search(r"^> (.*)$", shown["body"], re.M).group(1)
        assert find_quote(quote, text, start, end)
    decision = cli.json("show", out["written"][0]["id"])
    assert [a["id"] for a in decision["alternatives_considered"]] == ["kafka", "postgres-polling"]
    assert "Auszahlungs-Warteschlange" in decision["aliases"]
    assert cli.json("verify") == {"ok": True, "checked": 2, "findings": []}
    assert "raw-uncited" not in cli("lint").stdout


def test_invented_quote_is_rejected_and_the_rest_written(cli, wiki_path, mock):
    mock.enqueue(mock_ingest.respond_inventing)
    result = cli("ingest", CHAT, "--backend", "mock")
    assert "2 entries written, 1 proposal rejected, 2 quotes checked." in result.stdout
    assert "rejected: Payments move to Kafka next quarter." in result.stdout
    assert "quote-not-found: the quote is not in lines 1-22 of raw/" in result.stdout
    summaries = [e["summary"] for e in entries(cli)]
    assert len(summaries) == 2 and not any("Kafka next quarter" in s for s in summaries)
    assert "rejected=1" in ingest_lines(wiki_path)[0]


@pytest.mark.parametrize(
    "change, kind",
    [
        ({"summary": "Payout events go through SQS FIFO at 900 events/s."}, "unsupported-number"),
        ({"date": "2026-03-01"}, "unsupported-date"),
        ({"cites": [{"lines": "L5-L99", "quote": "Kafka is overkill"}]}, "bad-lines"),
        ({"cites": [{"lines": "L6", "quote": "Kafka"}]}, "short-quote"),
        ({"cites": [{"lines": "L2-L3", "quote": "Kafka is overkill for ~200 events/s"}]}, "quote-not-found"),
        ({"cites": []}, "uncited"),
        ({"supersedes": ["2026-01-01-made-up-0000"]}, "supersedes"),
        ({"domain": 7, "type": ["decision"]}, "malformed"),
        ({"type": "memo"}, "schema"),
    ],
)  # fmt: skip
def test_each_check_fails_its_proposal_closed(cli, wiki_path, mock, change, kind):
    def proposal(prompt):
        item = mock_ingest.proposals(prompt)[0]
        item.update(change)
        return item

    mock.enqueue(one(proposal))
    result = cli("ingest", CHAT, "--backend", "mock", "--json", code=1)  # its one proposal failed
    out = json.loads(result.stdout)
    assert out["written"] == [] and out["llm_outcome"] == {"ok": 0, "failed": 1}
    assert result.stderr.startswith("Error: every entry the LLM proposed failed the checks")
    (rejected,) = out["rejected"]
    assert kind in [p["kind"] for p in rejected["problems"]], rejected
    assert entries(cli) == []


def test_a_near_duplicate_of_a_listed_entry_is_rejected(cli, mock):
    cli(
        *write_args(
            "Payout events go through SQS FIFO, one message group per merchant", domain="payments"
        )
    )
    mock.enqueue(one(lambda prompt: mock_ingest.proposals(prompt)[0]))
    out = cli.json("ingest", CHAT, "--backend", "mock")
    (rejected,) = out["rejected"]
    assert rejected["problems"][0]["kind"] == "near-duplicate"
    assert len(entries(cli)) == 1


def test_a_decision_without_alternatives_in_its_source_gets_none(cli, mock):
    """Alternatives come only from the source: none given, none invented (lint then says so)."""

    def proposal(prompt):
        item = mock_ingest.proposals(prompt)[0]
        item["alternatives_considered"] = []
        return item

    mock.enqueue(one(proposal))
    out = cli.json("ingest", CHAT, "--backend", "mock")
    shown = cli.json("show", out["written"][0]["id"])
    assert shown["alternatives_considered"] == []


# --------------------------------------------------------------------------- the same, grown


def test_reingesting_the_same_content_does_nothing(cli, wiki_path, mock, tmp_path):
    mock.enqueue(mock_ingest.respond)
    first = cli.json("ingest", CHAT, "--backend", "mock")
    log = (wiki_path / "log.md").read_bytes()
    calls = (wiki_path / ".llm-wiki/llm-calls.jsonl").read_bytes()
    again = cli.json("ingest", CHAT, "--backend", "mock")
    assert again["status"] == "unchanged" and again["raw"] == first["raw"]
    assert again["written"] == [] and again["calls"] == 0
    copy = tmp_path / "renamed.md"  # same bytes, other name, through stdin too
    copy.write_bytes(CHAT.read_bytes())
    assert cli.json("ingest", copy, "--backend", "mock")["status"] == "unchanged"
    piped = cli("ingest", "-", "--backend", "mock", input=CHAT.read_bytes())
    assert piped.stdout.startswith(f"Nothing new: {first['raw']} was already ingested")
    assert len(mock.history) == 1  # no LLM call after the first
    assert (wiki_path / "log.md").read_bytes() == log
    assert (wiki_path / ".llm-wiki/llm-calls.jsonl").read_bytes() == calls
    assert raw_files(wiki_path) == [first["raw"][4:]] and len(entries(cli)) == 2


def test_grown_transcript_is_read_from_its_new_part_and_supersedes(
    cli, wiki_path, mock, tmp_path, monkeypatch
):
    mock.enqueue(mock_ingest.respond, mock_ingest.respond)
    first = cli.json("ingest", CHAT, "--backend", "mock")
    fifo = first["written"][0]["id"]
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-04-21T15:00:00Z")
    out = cli.json("ingest", grown_chat(tmp_path), "--backend", "mock")
    assert out["status"] == "ingested" and out["previous"] == first["raw"]
    assert out["lines"] == [DAY1_LINES + 1, DAY1_LINES + 5]
    (_, prompt) = mock.history[1]
    assert f"Lines 1-{DAY1_LINES} were compiled before" in prompt
    assert f"L{DAY1_LINES + 1}: [2026-04-21 10:15]" in prompt
    assert f"L{DAY1_LINES}:" not in prompt and "morning all" not in prompt
    assert f"[{fifo}]" in prompt  # the related entry was listed
    (update,) = out["written"]
    assert update["supersedes"] == [fifo]
    assert update["sources"] == [f"{out['raw']}#L{DAY1_LINES + 1}-L{DAY1_LINES + 4}"]
    assert cli.json("show", fifo)["status"] == "superseded"
    assert len(raw_files(wiki_path)) == 2
    assert f"previous={first['raw']}" in ingest_lines(wiki_path)[1]
    # The whole grown file is kept, so its line numbers are the transcript's own.
    assert (wiki_path / out["raw"]).read_bytes() == CHAT.read_bytes() + DAY2.read_bytes()


def test_a_line_cut_by_the_earlier_ingest_is_read_again_whole(cli, wiki_path, mock, tmp_path):
    partial = tmp_path / "chat.txt"
    text = CHAT.read_text()
    partial.write_text(text + "[2026-04-21 10:15] maria: update on the payout")
    mock.enqueue(mock_ingest.respond, mock_ingest.respond)
    cli.json("ingest", partial, "--backend", "mock")
    partial.write_bytes(CHAT.read_bytes() + DAY2.read_bytes())
    out = cli.json("ingest", partial, "--backend", "mock")
    assert out["lines"][0] == DAY1_LINES + 1  # the cut line, whole
    assert len(out["written"]) == 1


def test_an_update_supersedes_an_existing_authored_entry(cli, mock):
    old = cli.json(
        *write_args(
            "Payout events go through SQS FIFO with one message group per merchant",
            domain="payments",
            alt="kafka: ops cost",
        )
    )["id"]
    mock.enqueue(mock_ingest.respond)
    out = cli.json("ingest", DAY2, "--backend", "mock")
    (update,) = out["written"]
    assert update["supersedes"] == [old]
    current = [e["id"] for e in entries(cli, "--status", "active")]
    assert current == [update["id"]]


def test_proposals_superseding_one_entry_twice_form_a_chain(cli, wiki_path, mock, tmp_path):
    """Two parts of one source both replace the same entry: the later replaces the earlier."""
    old = cli.json(*write_args("Payout events go through SQS FIFO", domain="payments"))["id"]
    settings = wiki_path / "settings.yaml"
    settings.write_text(settings.read_text().replace("chunk_tokens: 6000", "chunk_tokens: 150"))

    def replace_once(prompt):
        lines = mock_ingest.shown_lines(prompt)
        first, last = lines[0][0], lines[-1][0]
        return {
            "type": "decision",
            "domain": "payments",
            "summary": f"Payouts queue change noted in part with line {first}.",
            "supersedes": [old],
            "cites": [{"lines": f"L{first}-L{last}", "quote": lines[0][1][:40]}],
        }

    source = tmp_path / "doc.md"
    source.write_text(
        "".join(
            f"The payouts queue paragraph {n} says something long enough.\n" for n in range(1, 21)
        )
    )
    mock.enqueue(*[one(replace_once)] * 5)
    out = cli.json("ingest", source, "--backend", "mock", "--kind", "document")
    assert out["parts"] >= 2 and out["calls"] == out["parts"]
    first, second = out["written"][:2]
    assert first["supersedes"] == [old] and second["supersedes"] == [first["id"]]


# --------------------------------------------------------------------------- no LLM, no store


def test_without_a_usable_llm_nothing_is_stored(cli, wiki_path, mock):
    log = (wiki_path / "log.md").read_bytes()
    offline = cli("ingest", CHAT, code=1)
    assert offline.stderr.count("\n") == 1
    assert "ingest needs an LLM backend" in offline.stderr
    assert "anthropic or claude-cli" in offline.stderr
    no_key = cli("ingest", CHAT, "--backend", "anthropic", code=1)
    assert "ANTHROPIC_API_KEY" in no_key.stderr and "anthropic or claude-cli" in no_key.stderr
    assert "offline" not in no_key.stderr
    inbox = cli("ingest", "--inbox", DATA, code=1)
    assert "ingest needs an LLM backend" in inbox.stderr
    assert raw_files(wiki_path) == [] and entries(cli) == []
    assert (wiki_path / "log.md").read_bytes() == log and mock.history == []


def test_a_failing_backend_leaves_nothing_behind(cli, wiki_path, mock):
    from llm_wiki.errors import BackendFailed

    def down(prompt, purpose):
        raise BackendFailed("the Anthropic API answered HTTP 529; try again later.")

    mock.enqueue(down)
    result = cli("ingest", CHAT, "--backend", "mock", code=1)
    assert "HTTP 529" in result.stderr
    assert raw_files(wiki_path) == [] and entries(cli) == [] and ingest_lines(wiki_path) == []
    mock.enqueue(mock_ingest.respond)  # the next run does the whole job
    assert cli.json("ingest", CHAT, "--backend", "mock")["status"] == "ingested"


def test_an_unreadable_reply_gets_one_repair(cli, wiki_path, mock):
    mock.enqueue("Sure! Here are the entries I found.", mock_ingest.respond)
    out = cli.json("ingest", CHAT, "--backend", "mock")
    assert out["calls"] == 2 and len(out["written"]) == 2
    assert [p for p, _ in mock.history] == ["ingest", "ingest-repair"]
    assert "It could not be read: the reply holds no JSON object" in mock.history[1][1]
    mock.reset()
    mock.enqueue("no", '{"entries": "none"}')
    other = wiki_path.parent / "other.txt"
    other.write_text("maria: one\ndev: two\nlucas: three\n")
    result = cli("ingest", other, "--backend", "mock", code=1)
    assert "could not be read, twice" in result.stderr and len(raw_files(wiki_path)) == 1


def test_dry_run_writes_nothing(cli, wiki_path, mock):
    log = (wiki_path / "log.md").read_bytes()
    mock.enqueue(mock_ingest.respond)
    out = cli.json("ingest", CHAT, "--backend", "mock", "--dry-run")
    assert out["status"] == "dry-run" and len(out["written"]) == 2 and out["quotes_checked"] == 2
    assert raw_files(wiki_path) == [] and entries(cli) == []
    assert (wiki_path / "log.md").read_bytes() == log
    assert not list((wiki_path / "entries").rglob("*.md"))


def test_too_many_parts_are_refused_before_any_call(cli, wiki_path, mock, tmp_path):
    source = tmp_path / "long.md"
    source.write_text("A paragraph of a long design document about the payouts queue.\n" * 400)
    result = cli("ingest", source, "--backend", "mock", "--max-calls", "1", code=2)
    assert "needs 2 LLM calls" in result.stderr and "--max-calls 1" in result.stderr
    assert mock.history == [] and raw_files(wiki_path) == []


def test_empty_and_binary_sources_are_refused(cli, wiki_path, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    assert "is empty" in cli("ingest", empty, "--backend", "mock", code=2).stderr
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8" in cli("ingest", binary, "--backend", "mock", code=2).stderr
    assert "either PATH" in cli("ingest", "--backend", "mock", code=2).stderr
    assert raw_files(wiki_path) == []


def test_kinds_are_guessed_from_the_lines():
    from llm_wiki.ingest import detect_kind

    assert detect_kind(CHAT.read_text()) == "conversation"
    assert detect_kind("User: hi\nAssistant: hello\nUser: ok, decided\n") == "conversation"
    assert detect_kind((REPO / "README.md").read_text()) == "document"


# --------------------------------------------------------------------------- walls


def test_walls_prompt_and_supersedes_stay_inside_the_scope(cli, wiki_path, mock):
    (wiki_path / "access.yaml").write_text(
        "readers:\n  alice: {scopes: [team-a]}\n  bob: {scopes: [team-b]}\n"
    )
    secret = cli.json(
        *write_args(
            "Payout events go through SQS FIFO at Initech", domain="payments", scope="team-b"
        ),
        "--as",
        "bob",
    )["id"]

    def proposal(prompt):
        item = mock_ingest.proposals(prompt)[0]
        item["supersedes"] = [secret]
        return item

    mock.enqueue(one(proposal))
    out = cli.json(
        "--as", "alice", "ingest", CHAT, "--backend", "mock", "--scope", "team-a", code=1
    )  # fmt: skip
    (_, prompt) = mock.history[0]
    assert secret not in prompt and "Initech" not in prompt
    (rejected,) = out["rejected"]
    assert rejected["problems"][0]["kind"] == "supersedes"
    refused = cli("--as", "alice", "ingest", DAY2, "--backend", "mock", "--scope", "team-b", code=2)
    assert "may not write to scope 'team-b'" in refused.stderr
    # Ingested into team-a, the same bytes are new to team-b.
    mock.enqueue(mock_ingest.respond)
    again = cli.json("--as", "bob", "ingest", CHAT, "--backend", "mock", "--scope", "team-b")
    assert again["status"] == "ingested" and again["raw"] == out["raw"]


# --------------------------------------------------------------------------- the inbox


def test_inbox_waits_for_quiet_files_by_the_one_clock(cli, wiki_path, mock, tmp_path, monkeypatch):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    chat = inbox / "team-chat.txt"
    chat.write_bytes(CHAT.read_bytes())
    (inbox / ".team-chat.txt.swp").write_text("editor state")
    (inbox / "upload.part").write_text("half")
    stamp = 1776178800  # 2026-04-14T15:00:00Z
    os.utime(chat, (stamp, stamp))

    def at(moment):
        monkeypatch.setenv("LLM_WIKI_NOW", moment)
        return {
            i["name"]: i for i in cli.json("ingest", "--inbox", inbox, "--backend", "mock")["items"]
        }

    assert at("2026-04-14T15:09:00Z")["team-chat.txt"]["status"] == "waiting"
    assert mock.history == []
    mock.enqueue(mock_ingest.respond)
    items = at("2026-04-14T15:10:00Z")
    assert list(items) == ["team-chat.txt"]  # hidden and partial files are left alone
    assert items["team-chat.txt"]["status"] == "ingested"
    assert len(items["team-chat.txt"]["result"]["written"]) == 2
    assert at("2026-04-14T18:00:00Z")["team-chat.txt"]["status"] == "unchanged"
    assert len(mock.history) == 1

    chat.write_bytes(CHAT.read_bytes() + DAY2.read_bytes())  # new messages a week later
    later = stamp + 7 * 86400
    os.utime(chat, (later, later))
    assert at("2026-04-21T15:05:00Z")["team-chat.txt"]["status"] == "waiting"
    mock.enqueue(mock_ingest.respond)
    grown = at("2026-04-21T15:10:00Z")["team-chat.txt"]["result"]
    assert grown["lines"][0] == DAY1_LINES + 1 and len(grown["written"]) == 1
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-04-21T15:20:00Z")
    chat.write_text("maria: a fresh one\n")
    os.utime(chat, (later, later))
    slow = cli.json("ingest", "--inbox", inbox, "--backend", "mock", "--quiet-minutes", "30")
    assert slow["items"][0]["status"] == "waiting" and slow["quiet_minutes"] == 30


def test_inbox_reports_a_failing_file_and_goes_on(cli, wiki_path, mock, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a-binary.bin").write_bytes(b"\xff\xfe\x00")
    (inbox / "b-chat.txt").write_bytes(CHAT.read_bytes())
    for path in inbox.iterdir():
        os.utime(path, (1700000000, 1700000000))
    mock.enqueue(mock_ingest.respond)
    result = cli("ingest", "--inbox", inbox, "--backend", "mock", code=1)
    assert "a-binary.bin: failed (" in result.stdout and "not UTF-8" in result.stdout
    assert "b-chat.txt: Stored raw/" in result.stdout
    assert "2 files in" in result.stdout


def test_only_the_most_related_lines_go_with_a_part(cli, wiki_path, mock):
    topics = ["ledger rounding", "search reindex", "mobile release", "cache eviction", "sso login"]
    for n in range(40):
        topic = topics[n % len(topics)]
        cli(*write_args(f"Note {n} on {topic} for the platform team", domain="platform"))
    fifo = cli.json(
        *write_args("Payout events go through SQS FIFO per merchant", domain="payments")
    )["id"]
    settings = wiki_path / "settings.yaml"
    settings.write_text(settings.read_text().replace("index_tokens: 2000", "index_tokens: 500"))
    mock.enqueue(mock_ingest.respond)
    out = cli.json("ingest", DAY2, "--backend", "mock")
    (_, prompt) = mock.history[0]
    listed = re.findall(r"^- \d{4}-\d\d-\d\d .*$", prompt, re.M)
    assert f"[{fifo}]" in listed[0]  # the related entry comes first
    assert 0 < len(listed) < 41 and f"(the best {len(listed)} of 41" in prompt
    assert sum(len(line) for line in listed) // 3 <= 500
    assert out["written"][0]["supersedes"] == [fifo]


def test_an_inbox_sub_folder_named_like_a_scope_is_ingested_into_it(cli, wiki_path, mock, tmp_path):
    """The agent hooks file a walled session's transcript in <inbox>/<scope>/."""
    inbox = tmp_path / "inbox"
    for scope in ("team-a", "team-b"):
        (inbox / scope).mkdir(parents=True)
        (inbox / scope / "chat.txt").write_bytes(CHAT.read_bytes())
    (inbox / "Not A Scope").mkdir()
    (inbox / "Not A Scope" / "chat.txt").write_bytes(CHAT.read_bytes())
    for path in inbox.rglob("*"):
        os.utime(path, (1700000000, 1700000000))
    (wiki_path / "access.yaml").write_text(
        "readers:\n  alice:\n    scopes: [team-a]\n  root:\n    admin: true\n"
    )
    mock.enqueue(mock_ingest.respond)
    result = cli("--as", "alice", "ingest", "--inbox", inbox, "--backend", "mock", code=1)
    assert "team-a/chat.txt: Stored raw/" in result.stdout
    assert (
        "team-b/chat.txt: failed (reader 'alice' may not write to scope 'team-b'" in result.stdout
    )
    assert "Not A Scope" not in result.stdout
    mock.enqueue(mock_ingest.respond)
    items = cli.json("--as", "root", "ingest", "--inbox", inbox, "--backend", "mock")["items"]
    assert {i["name"]: i["status"] for i in items} == {
        "team-a/chat.txt": "unchanged",
        "team-b/chat.txt": "ingested",
    }
    scopes = {e["scope"] for e in cli.json("--as", "root", "list")["entries"]}
    assert scopes == {"team-a", "team-b"}


def test_parts_shrink_to_fit_a_small_context_window(cli, wiki_path, mock):
    """With a 2,560-token model the part and index budgets shrink (settings say 6,000 and
    2,000), the source is read in several parts, and no prompt plus its reply overflows."""
    import yaml

    from llm_wiki.backends import estimate_tokens, read_calls
    from llm_wiki.wiki import Wiki

    settings = wiki_path / "settings.yaml"
    data = yaml.safe_load(settings.read_text())
    data["models"] = {"mock-1": {"context_window": 2560, "max_output": 768}}
    settings.write_text(yaml.safe_dump(data))
    mock.enqueue(*[mock_ingest.respond] * 10)
    out = cli.json("ingest", CHAT, "--backend", "mock")
    limits = out["limits"]
    assert limits["shrunk"] is True and limits["context_window"] == 2560
    assert limits["chunk_tokens"] < 1000 and limits["index_tokens"] < 2000
    assert out["parts"] >= 2 and out["llm_outcome"]["failed"] == 0
    for purpose, prompt in mock.history:
        assert estimate_tokens(prompt) + limits["reply_tokens"] <= 2560, purpose
    calls = read_calls(Wiki(wiki_path))
    assert {(c["max_tokens"], c["context_window"]) for c in calls} == {(768, 2560)}


def test_inbox_counts_a_file_whose_every_proposal_failed_as_failed(cli, mock, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "team-chat.txt").write_bytes(CHAT.read_bytes())
    os.utime(inbox / "team-chat.txt", (1776178800, 1776178800))  # long quiet

    def invented(prompt):
        item = mock_ingest.proposals(prompt)[0]
        item["summary"] = "Payouts take 45 minutes to settle"  # a number the chat never says
        return item

    mock.enqueue(one(invented))
    result = cli("ingest", "--inbox", inbox, "--quiet-minutes", "0", "--backend", "mock", code=1)
    assert "Failed: every entry the LLM proposed failed the checks." in result.stdout
    mock.enqueue(one(invented))
    (inbox / "team-chat.txt").write_bytes(CHAT.read_bytes() + DAY2.read_bytes())
    os.utime(inbox / "team-chat.txt", (1776178800, 1776178800))
    out = cli.json("ingest", "--inbox", inbox, "--quiet-minutes", "0", "--backend", "mock", code=1)
    assert out["ok"] is False and out["llm_outcome"] == {"ok": 0, "failed": 1}
    assert out["items"][0]["status"] == "failed"


def test_an_unreadable_reply_still_prints_json_and_exits_1(cli, tmp_path, monkeypatch):
    mock = tmp_path / "bad.py"
    mock.write_text('def respond(prompt, purpose):\n    return "I am not JSON"\n')
    monkeypatch.setenv("LLM_WIKI_MOCK_FILE", str(mock))
    source = tmp_path / "file.txt"
    source.write_text("We chose Postgres over MySQL for the ledger.\n")
    out = cli.json("ingest", str(source), "--backend", "mock", code=1)
    assert out["llm_outcome"] == {"ok": 0, "failed": 2} and "could not be read" in out["error"]
    assert out["written"] == [] and out["calls"] == 2
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.txt").write_text("We chose Redis for the cache.\n")
    os.utime(inbox / "a.txt", (0, 0))
    args = ["--inbox", str(inbox), "--quiet-minutes", "0", "--backend", "mock"]
    out = cli.json("ingest", *args, code=1)
    assert out["items"][0]["status"] == "failed"
    assert out["llm_outcome"] == {"ok": 0, "failed": 2}
