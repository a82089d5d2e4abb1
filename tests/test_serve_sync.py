"""More than one machine: two `llm-wiki serve` servers on two clones of one bare repository,
written to through both and replicated by `llm-wiki sync` — both end with every entry."""

from __future__ import annotations

import json

import pytest

from conftest import Cli, git, write_args
from serve_world import ACCESS, rpc, server_thread

pytestmark = pytest.mark.usefixtures("git_identity")  # commits need an author (conftest)


def site(tmp_path, bare, name):
    """One site's server folder: a clone with its own walls and its own tokens."""
    path = tmp_path / name
    git(tmp_path, "clone", "--quiet", str(bare), str(path))
    (path / "access.yaml").write_text(ACCESS)
    cli = Cli(path)
    cli("index")
    return path, {r: cli("token", "add", r).stdout.strip() for r in ("root", "alice", "bob")}


def write(running, token, summary, scope):
    arguments = {"type": "incident", "domain": "ops", "summary": summary, "scope": scope}
    got = rpc(running, token, "tools/call", {"name": "wiki_write", "arguments": arguments})
    result = json.loads(got.text)["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]["id"]


def listed(running, token):
    got = rpc(running, token, "tools/call", {"name": "wiki_list", "arguments": {"limit": 100}})
    return sorted(e["id"] for e in json.loads(got.text)["result"]["structuredContent"]["entries"])


def test_two_servers_on_two_clones_replicate_through_sync(tmp_path):
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(bare))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "--quiet", str(bare), str(seed))
    Cli(None)("init", str(seed))
    first = Cli(seed).json(*write_args("Start the team wiki", scope="shared"))["id"]
    git(seed, "add", "-A")
    git(seed, "commit", "--quiet", "-m", "Start the wiki")
    git(seed, "push", "--quiet", "origin", "main")

    east, east_tokens = site(tmp_path, bare, "east")
    west, west_tokens = site(tmp_path, bare, "west")
    with server_thread(east) as e, server_thread(west) as w:
        ids = [first]
        ids += [
            write(e, east_tokens["alice"], f"East incident {n}", "matter-kestrel") for n in range(3)
        ]
        ids += [
            write(w, west_tokens["bob"], f"West incident {n}", "matter-osprey") for n in range(3)
        ]
        ids.append(write(w, west_tokens["alice"], "West shared note", "shared"))
        for path in (east, west, east):  # each pushes what it has and pulls the other's
            out = Cli(path)("sync").stdout
            assert "Pushed to origin/main." in out or "Nothing to push" in out, out
        # both servers, without a restart, serve every entry (as an admin) ...
        assert listed(e, east_tokens["root"]) == listed(w, west_tokens["root"]) == sorted(ids)
        # ... and the walls hold on both
        for running, tokens in ((e, east_tokens), (w, west_tokens)):
            bobs = listed(running, tokens["bob"])
            assert len(bobs) == 5 and not any("east-incident" in i for i in bobs)
    for path in (east, west):
        result = Cli(path).json("--as", "root", "verify")
        assert result["ok"] and result["checked"] == len(ids), result
        tracked = git(path, "ls-files")
        assert "access-tokens.json" not in tracked and "access.yaml" not in tracked
