"""The service templates for `llm-wiki serve` (deploy/): they parse, run the real command with
flags it has, bind loopback, restart on failure; the README tells how to put it behind TLS."""

from __future__ import annotations

import plistlib
import shlex

from conftest import REPO

DEPLOY = REPO / "deploy"


def serve_argv_ok(argv: list[str]) -> dict:
    """The flags after `serve`, parsed by the CLI itself (an unknown flag fails here)."""
    from llm_wiki.cli import cli

    assert argv[1:4] == ["-m", "llm_wiki", "serve"], argv
    context = cli.commands["serve"].make_context("serve", argv[4:])
    return context.params


def test_the_systemd_unit_runs_serve_on_loopback_and_restarts_on_failure():
    text = (DEPLOY / "llm-wiki-serve.service").read_text()
    lines = dict(
        ln.split("=", 1) for ln in text.splitlines() if "=" in ln and not ln.startswith("#")
    )
    params = serve_argv_ok(shlex.split(lines["ExecStart"]))
    assert params["host"] == "127.0.0.1" and params["port"] == 8765
    assert params["wiki_path"] == lines["WorkingDirectory"]
    assert lines["Restart"] == "on-failure" and lines["Type"] == "simple"
    assert lines["EnvironmentFile"].startswith("-")  # optional: the key lives there, not here
    assert "[Install]" in text and "token" not in lines["ExecStart"].lower()


def test_the_launchd_plist_runs_serve_on_loopback_and_keeps_it_alive():
    plist = plistlib.loads((DEPLOY / "com.llm-wiki.serve.plist").read_bytes())
    assert plist["Label"] == "com.llm-wiki.serve"
    params = serve_argv_ok(plist["ProgramArguments"])
    assert params["host"] == "127.0.0.1"
    assert params["wiki_path"] == plist["WorkingDirectory"]
    assert plist["KeepAlive"] == {"SuccessfulExit": False} and plist["RunAtLoad"] is True
    assert plist["Umask"] == 0o077


def test_the_readme_says_how_to_serve_a_team_behind_a_tls_proxy():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## A team server", 1)[1].split("\n## ", 1)[0]
    for needed in (
        "llm-wiki token add",
        "claude mcp add --transport http",
        "reverse_proxy 127.0.0.1:8765",
        "proxy_pass http://127.0.0.1:8765",
        "X-Forwarded-Proto",
        "--allow-host",
        "deploy/llm-wiki-serve.service",
        "deploy/com.llm-wiki.serve.plist",
        "queries_per_day",
    ):
        assert needed in section, needed
