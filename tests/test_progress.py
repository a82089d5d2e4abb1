"""Progress on long work, -q and -v: what a user sees on stderr.

On a terminal (a pty here) the long commands draw one line, rewritten in place and cleared at
the end; with --json, or when stderr is not a terminal, nothing extra; -v keeps a line per
step (terminal or not) and says what the command took; -q silences notes. From Python, the
Session methods take ``progress=`` and are told each stage, item, LLM call and token.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys

import click
import pytest

import llm_wiki
from conftest import REPO, subprocess_env, write_args
from llm_wiki.progress import Progress, TerminalProgress

CLEAR = "\r\x1b[K"


@pytest.fixture
def three_domains(cli, wiki_path):
    """Two decisions sharing a tag in each of three domains (lint --with-llm asks of each)."""
    for domain in ("billing", "ledger", "payments"):
        for n in (1, 2):
            cli(*write_args(f"Keep {domain} rule {n} in Postgres", domain=domain, tag="db"))
    return wiki_path


def lint_mock(tmp_path):
    rules = tmp_path / "mock.json"
    rules.write_text(json.dumps([{"purpose": "lint", "response": '{"contradictions": []}'}]))
    return str(rules)


def run_on_a_terminal(args, env, timeout=120):
    """``llm-wiki ARGS`` with stderr on a pty (a terminal) and stdout on a pipe."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llm_wiki", *args],
        stdout=subprocess.PIPE,
        stderr=follower,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], timeout)
        if not ready:
            proc.kill()
            raise AssertionError(f"no output for {timeout} s: {seen!r}")
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    out = proc.stdout.read().decode()
    proc.wait(timeout=timeout)
    os.close(leader)
    return proc.returncode, out, seen.decode()


def test_long_commands_draw_one_line_on_a_terminal_and_clear_it(three_domains, tmp_path):
    env = subprocess_env(LLM_WIKI_DIR=str(three_domains), LLM_WIKI_MOCK_FILE=lint_mock(tmp_path))
    code, out, err = run_on_a_terminal(["consolidate"], env)
    assert code == 0 and out.startswith("written")
    assert f"{CLEAR}consolidate billing (1/3)" in err
    assert f"{CLEAR}consolidate payments (3/3)" in err
    assert err.endswith(CLEAR)  # the line is gone: the terminal shows the result only

    code, out, err = run_on_a_terminal(["lint", "--with-llm", "--backend", "mock"], env)
    assert code == 0 and "Linted" in out
    assert f"{CLEAR}lint --with-llm billing #db (1/3)" in err
    assert f"{CLEAR}lint --with-llm payments #db (3/3) · 2 LLM calls, " in err  # so far
    assert " tokens" in err
    assert err.endswith(CLEAR)

    code, out, err = run_on_a_terminal(["index"], env)
    assert code == 0 and f"{CLEAR}index: writing INDEX.md and index/" in err


def test_nothing_extra_with_json_or_off_a_terminal(three_domains, tmp_path):
    env = subprocess_env(LLM_WIKI_DIR=str(three_domains), LLM_WIKI_MOCK_FILE=lint_mock(tmp_path))
    code, out, err = run_on_a_terminal(["consolidate", "--json"], env)
    assert code == 0 and json.loads(out)["domains"] and err == ""
    code, out, err = run_on_a_terminal(["-q", "lint", "--with-llm", "--backend", "mock"], env)
    assert code == 0 and err == ""
    piped = subprocess.run(
        [sys.executable, "-m", "llm_wiki", "consolidate", "--all"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.returncode == 0 and piped.stderr == ""  # a job's log gets the result only


def test_verbose_keeps_a_line_per_step_and_says_what_it_took(cli, three_domains, tmp_path):
    err = cli("consolidate", "-v").stderr.splitlines()  # CliRunner: not a terminal
    assert err[:3] == ["consolidate billing (1/3)", "consolidate ledger (2/3)",
                       "consolidate payments (3/3)"]  # fmt: skip
    assert err[3].startswith("consolidate: 3 of 3, ") and err[3].endswith(" s")
    assert err[4].startswith("llm-wiki consolidate: ") and err[4].endswith(" s of CPU)")
    err = cli("-v", "list").stderr.splitlines()  # every command: what it took
    assert len(err) == 1 and err[0].startswith("llm-wiki list: ")
    env = {"LLM_WIKI_MOCK_FILE": lint_mock(tmp_path)}
    err = cli("lint", "--with-llm", "--backend", "mock", "-v", env=env).stderr
    assert "lint --with-llm payments #db (3/3) · 2 LLM calls, " in err  # the third is running
    assert "\nlint --with-llm: 3 of 3, 3 LLM calls, " in err


def test_quiet_silences_notes_and_warnings(cli):
    noisy = cli(*write_args("Try a dry run"), "--dry-run")
    assert "(dry run: would write entries/" in noisy.stderr
    quiet = cli(*write_args("Try a dry run"), "--dry-run", "-q")
    assert quiet.stderr == "" and quiet.stdout == noisy.stdout  # the result is unchanged
    assert cli("-q", "show", "2000-01-01-none-0000", code=1).stderr.startswith("Error: ")


def test_every_command_takes_quiet_and_verbose():
    from llm_wiki.cli import cli

    def commands(group, path):
        yield path, group
        for name, sub in getattr(group, "commands", {}).items():
            yield from commands(sub, f"{path} {name}")

    seen = 0
    for path, command in commands(cli, "llm-wiki"):
        flags = {opt for p in command.params if isinstance(p, click.Option) for opt in p.opts}
        assert {"-q", "--quiet", "-v", "--verbose"} <= flags, path
        seen += 1
    assert seen >= 30  # every command and group


class Recorder(Progress):
    """What a Python caller passing ``progress=`` is told."""

    def __init__(self):
        super().__init__()
        self.events = []

    def task(self, name, total=None):
        super().task(name, total)
        self.events.append(("task", name, total))

    def item(self, what):
        super().item(what)
        self.events.append(("item", what))

    def ended(self, *, final):
        self.events.append(("end", self.name, self.count, final))

    def stages(self):
        return [e[1] for e in self.events if e[0] == "task"]

    def items(self):
        return [e[1] for e in self.events if e[0] == "item"]


def test_session_methods_report_to_the_progress_they_are_given(three_domains, tmp_path, cli):
    from llm_wiki.backends import MockBackend

    session = llm_wiki.open(three_domains)
    seen = Recorder()
    session.consolidate(progress=seen)
    assert seen.stages() == ["consolidate"] and seen.items() == ["billing", "ledger", "payments"]
    assert seen.events[-1] == ("end", "consolidate", 3, True)

    seen = Recorder()
    MockBackend.enqueue(*['{"contradictions": []}'] * 3)
    session.lint(with_llm=True, backend="mock", progress=seen)
    assert seen.stages() == ["lint --with-llm"] and seen.calls == 3 and seen.tokens > 100

    seen = Recorder()
    cli("index")
    (three_domains / ".llm-wiki" / "catalog.sqlite3").unlink()  # a full build
    session.index(progress=seen)
    assert seen.stages() == ["index: reading entries", "index: writing INDEX.md and index/"]
    assert ("end", "index: reading entries", 9, False) in seen.events  # 6 + 3 syntheses

    seen = Recorder()
    result = session.site(tmp_path / "site", progress=seen)
    assert seen.stages() == ["site"] and seen.events[-1] == ("end", "site", result.pages, True)

    adr = tmp_path / "adr"
    adr.mkdir()
    for n in (1, 2):
        (adr / f"000{n}-use-thing-{n}.md").write_text(
            f"# {n}. Use thing {n}\n\nDate: 2026-01-0{n}\n\n## Status\n\nAccepted\n\n"
            f"## Context\n\nWe need a thing.\n\n## Decision\n\nWe use thing {n}.\n"
        )
    seen = Recorder()
    session.import_adr(adr, domain="platform", progress=seen)
    assert seen.stages() == ["import-adr"] and len(seen.items()) == 2

    old = session.write(type="decision", domain="ops", summary="Rotate logs weekly",
                        alternatives=["never: disks fill"], date="2025-01-01")  # fmt: skip
    session.write(type="decision", domain="ops", summary="Rotate logs daily",
                  alternatives=["weekly: too big"], supersedes=[old.id], date="2025-02-01")  # fmt: skip
    seen = Recorder()
    done = session.archive(older_than=30, progress=seen)
    assert done.ids == (old.id,)
    (stage,) = seen.stages()
    assert stage.startswith("archive 20") and seen.items() == [old.id]  # archive YYYY-MM


def test_ingest_reports_the_parts_and_the_calls(cli, wiki_path, tmp_path):
    from llm_wiki.backends import MockBackend

    sys.path.insert(0, str(REPO / "tests"))
    import mock_ingest

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    chat = REPO / "tests" / "data" / "ingest" / "team-chat.txt"
    (inbox / "chat.txt").write_bytes(chat.read_bytes())
    (inbox / "notes.txt").write_text("Nothing worth keeping here.\n")
    MockBackend.enqueue(*[mock_ingest.respond] * 20)
    seen = Recorder()
    llm_wiki.open(wiki_path).ingest_inbox(inbox, quiet_minutes=0, backend="mock", progress=seen)
    assert seen.stages() == ["ingest --inbox"] and seen.items() == ["chat.txt", "notes.txt"]
    assert seen.calls >= 2 and seen.events[-1] == ("end", "ingest --inbox", 2, True)
    MockBackend.reset()


def test_terminal_progress_draws_at_most_ten_times_a_second_and_never_fails(monkeypatch):
    import io

    import llm_wiki.progress as progress

    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    stream = io.StringIO()
    shown = TerminalProgress(stream)
    shown.task("index: reading entries", total=1000)
    for n in range(1000):
        shown.item(f"entries/{n}.md")
        shown.done()
        now[0] += 0.001  # a second for the thousand
    shown.finish()
    drawn = stream.getvalue()
    assert 5 <= drawn.count(CLEAR) <= 13 and drawn.endswith(CLEAR)

    class Broken(io.StringIO):
        def write(self, text):
            raise OSError("stderr is gone")

    broken = TerminalProgress(Broken(), verbose=True)
    broken.task("consolidate", total=1)
    broken.item("billing")
    broken.finish()  # no exception: a broken stderr never fails the run
