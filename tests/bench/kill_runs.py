"""Kill runs (issue 13's figure): SIGKILL write, archive, index, consolidate and sync at a random
moment, then count entries lost or altered.

    nice -n 10 .venv/bin/python tests/bench/kill_runs.py [RUNS] [SEED]

One wiki in git with a bare remote. Each run picks an operation (in turn), starts it as
``python -m llm_wiki`` in a subprocess, kills it after a random delay drawn from 0 to 1.5 times
that operation's measured duration, then runs the recovery a user would run (the same command
again; for sync, sync again). Afterwards, every entry logged before the kill must still be
readable (in entries/ or an archive) with exactly the bytes its log line's sha256 names, the
remote's copy too after sync; verify must be clean (a killed write may leave one "unlogged"
file, which its retry finishes, so it is retried); ``index --check`` must be clean.
Prints one line per operation: runs, killed mid-way (vs finished before the kill), entries lost,
entries altered, other invariant failures.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "_system"
sys.path.insert(0, str(SRC))

from llm_wiki import store  # noqa: E402
from llm_wiki.archive_file import iter_path  # noqa: E402
from llm_wiki.wiki import Wiki  # noqa: E402

OPS = ("write", "archive", "index", "consolidate", "sync")


def env(now: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": str(SRC),
        "LC_ALL": "C.UTF-8",
        "LLM_WIKI_NOW": now,
        "GIT_AUTHOR_NAME": "k",
        "GIT_AUTHOR_EMAIL": "k@example.org",
        "GIT_COMMITTER_NAME": "k",
        "GIT_COMMITTER_EMAIL": "k@example.org",
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env("2026-01-01")
    ).stdout


class World:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.bare = root / "origin.git"
        self.wiki = root / "w"
        self.n = 0
        self.day = 0
        git(root, "init", "--quiet", "--bare", "-b", "main", str(self.bare))
        git(root, "clone", "--quiet", str(self.bare), str(self.wiki))
        self.cli("init", str(self.wiki), check=True)
        git(self.wiki, "add", "-A")
        git(self.wiki, "commit", "--quiet", "-m", "start")
        for _ in range(40):
            self.cli(*self.write_args(), check=True)
        self.cli("sync", check=True)

    def now(self) -> str:
        return f"2026-{1 + (self.day // 28) % 12:02d}-{1 + self.day % 28:02d}T12:00:00Z"

    def write_args(self) -> list[str]:
        self.n += 1
        self.day += 1
        args = ["write", "--type", "decision", "--domain", f"d{self.n % 4}",
                "--summary", f"Decision number {self.n} about the ledger",
                "--alt", "other: worse", "--tag", "ledger"]  # fmt: skip
        active = self.active()
        if active and self.n % 3 == 0:
            args += ["--supersedes", random.choice(active)]
        return args

    def active(self) -> list[str]:
        out = self.cli("list", "--status", "active", "--type", "decision", "--limit", "1000",
                       "--json")  # fmt: skip
        try:
            return [e["id"] for e in json.loads(out.stdout)["entries"]]
        except (ValueError, KeyError):
            return []

    def argv(self, op: str) -> tuple[list[str], str]:
        if op == "write":
            return self.write_args(), self.now()
        if op == "archive":
            return ["archive", "--older-than", "1d"], "2027-06-01T00:00:00Z"
        if op == "index":
            return ["index", "--full"], self.now()
        if op == "consolidate":
            return ["consolidate", "--all", "--backend", "offline"], self.now()
        return ["sync"], self.now()

    def cli(self, *args: str, now: str | None = None, check: bool = False):
        proc = subprocess.run(
            [sys.executable, "-m", "llm_wiki", "--wiki", str(self.wiki), *args]
            if args[0] != "init"
            else [sys.executable, "-m", "llm_wiki", *args],
            env=env(now or self.now()),
            capture_output=True,
            text=True,
        )
        if check and proc.returncode != 0:
            raise SystemExit(f"{args}: {proc.stderr}")
        return proc

    def start(self, argv: list[str], now: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "llm_wiki", "--wiki", str(self.wiki), *argv],
            env=env(now),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # git children die with it
        )


def logged(root: Path) -> dict[str, tuple[str, str]]:
    """id -> (sha256, path) of every write line in ``root``'s log.md."""
    out = {}
    for _, line in store.read_log(Wiki(root)):
        if line.op == "write" and line.subject:
            out[line.subject] = (line.fields.get("sha256", ""), line.fields.get("path", ""))
    return out


def holdings(root: Path) -> dict[str, set[str]]:
    """id -> sha256 of every copy of it: its file in entries/, its members in archive/."""
    out: dict[str, set[str]] = {}
    for path in (root / "entries").rglob("*.md"):
        out.setdefault(path.stem, set()).add(hashlib.sha256(path.read_bytes()).hexdigest())
    for path in sorted((root / "archive").glob("*.tar.zst")):
        try:
            for member in iter_path(path):
                stem = Path(member.rel).stem
                out.setdefault(stem, set()).add(hashlib.sha256(member.data).hexdigest())
        except Exception:  # noqa: BLE001 - an unreadable archive is counted by verify
            pass
    return out


def check(world: World, before: dict[str, tuple[str, str]], tally: Counter, op: str) -> None:
    have = holdings(world.wiki)
    for entry_id, (sha, _) in before.items():
        copies = have.get(entry_id)
        if not copies:
            tally[f"{op}:lost"] += 1
        elif sha not in copies or len(copies) > 1:
            tally[f"{op}:altered"] += 1
    verify = world.cli("verify", "--json")
    try:
        findings = json.loads(verify.stdout)["findings"]
    except (ValueError, KeyError):
        findings = [{"kind": f"verify-crashed: {verify.stderr.strip()[:200]}"}]
    for f in findings:
        tally[f"{op}:verify-{f['kind']}"] += 1
        print(f"  {op}: verify {f['kind']} {f.get('id', '')}", file=sys.stderr)
    idx = world.cli("index", "--check")
    if idx.returncode != 0:
        tally[f"{op}:index-stale"] += 1
        print(f"  {op}: index --check: {idx.stdout.strip()[:200]}", file=sys.stderr)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 13)
    root = Path(tempfile.mkdtemp(prefix="kill-runs-"))
    world = World(root)
    durations: dict[str, float] = {}
    for op in OPS:  # measure each operation once, un-killed
        argv, now = world.argv(op)
        t = time.monotonic()
        world.cli(*argv, now=now)
        durations[op] = time.monotonic() - t
    tally: Counter = Counter()
    cpu0 = os.times()
    for i in range(runs):
        op = OPS[i % len(OPS)]
        if op in ("archive", "consolidate", "sync"):  # give them work: a few new entries
            for _ in range(3):
                world.cli(*world.write_args(), check=True)
        before = logged(world.wiki)
        argv, now = world.argv(op)
        proc = world.start(argv, now)
        delay = random.uniform(0, durations[op] * 1.5)
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            tally[f"{op}:killed"] += 1
        else:
            tally[f"{op}:finished"] += 1
        proc.wait()
        tally[f"{op}:runs"] += 1
        # recovery: what a user (or the next scheduled run) does
        if op == "write":
            world.cli(*argv, now=now)  # the retry finishes a dead write
        else:
            rec = world.cli(*argv, now=now)
            if rec.returncode not in (0,):
                tally[f"{op}:recovery-exit-{rec.returncode}"] += 1
                print(f"  {op}: recovery exit {rec.returncode}: {rec.stderr.strip()[:300]}",
                      file=sys.stderr)  # fmt: skip
        check(world, before, tally, op)
        if op == "sync":  # the remote holds what the clone logged, byte for byte
            mirror = root / "mirror"
            shutil.rmtree(mirror, ignore_errors=True)
            git(root, "clone", "--quiet", str(world.bare), str(mirror))
            have = holdings(mirror)
            for entry_id, (sha, _) in logged(mirror).items():
                if sha not in have.get(entry_id, set()):
                    tally["sync:remote-lost-or-altered"] += 1
    cpu = os.times()
    print(f"kill runs: {runs} (seed {sys.argv[2] if len(sys.argv) > 2 else 13}); "
          f"child CPU {cpu.children_user - cpu0.children_user + cpu.children_system - cpu0.children_system:.0f} s")  # fmt: skip
    print(f"{'op':12} {'runs':>5} {'killed':>7} {'lost':>5} {'altered':>8}  other")
    for op in OPS:
        other = {
            k.split(":", 1)[1]: v
            for k, v in tally.items()
            if k.startswith(op + ":")
            and k.split(":", 1)[1] not in ("runs", "killed", "finished", "lost", "altered")
        }
        print(f"{op:12} {tally[op + ':runs']:>5} {tally[op + ':killed']:>7} "
              f"{tally[op + ':lost']:>5} {tally[op + ':altered']:>8}  {other or ''}")  # fmt: skip
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
