"""Speed benchmarks (issue 12): each command against the floor of the work it does.

Every figure is the CPU time (user + sys) of a child process, best of several runs, as a ratio
to a baseline measured in the same run, runs of the two alternating (the machine may be shared:
other load adds wall time, and much less CPU time). Targets:

- `write`, `show`, `list` ≤ 1.5× `python -c 'import click'` (the floor of any click command),
  flat from 1k to N entries, into a domain of a few entries and into one holding every entry
- full build (`index` from scratch) ≤ 1.5× reading every file and parsing its frontmatter with
  yaml's CSafeLoader
- `verify` ≤ 1.5× reading and sha256-hashing every file, peak memory ≤ 50 MiB
- `index` with nothing changed ≤ 0.2 s of CPU
- `index --check` ≤ 2× the full build
- offline `query` ≤ 130 ms of CPU per process

Each test prints its figures and fails when its target is missed.

Run: LLM_WIKI_BENCH_ENTRIES=100000 pytest tests/bench/test_speed_bench.py -s
(default 10,000 entries). LLM_WIKI_BENCH_CACHE=DIR keeps the generated wikis in DIR and reuses
them on the next run (they are rebuilt if the generator's output would differ in size).
"""

from __future__ import annotations

import ast
import compileall
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from wikigen import make_entries, write_wiki  # noqa: E402

from conftest import SRC, subprocess_env  # noqa: E402

N = int(os.environ.get("LLM_WIKI_BENCH_ENTRIES", "10000"))
SMALL = 1000
PY = sys.executable
CLI = [PY, "-c", "from llm_wiki.cli import main; main()"]  # as the console script runs it

YAML_FLOOR = """
import os, sys, yaml
n = 0
for dirpath, _, files in os.walk(os.path.join(sys.argv[1], "entries")):
    for name in files:
        with open(os.path.join(dirpath, name), "rb") as fh:
            text = fh.read().decode()
        yaml.load(text[4:text.index("\\n---\\n", 4)], Loader=yaml.CSafeLoader)
        n += 1
print(n)
"""

SHA_FLOOR = """
import hashlib, os, sys
n = 0
for dirpath, _, files in os.walk(os.path.join(sys.argv[1], "entries")):
    for name in files:
        with open(os.path.join(dirpath, name), "rb") as fh:
            hashlib.sha256(fh.read()).hexdigest()
        n += 1
print(n)
"""


@dataclasses.dataclass
class Run:
    cpu: float  # seconds, user + sys
    rss_mib: float
    stdout: str


# Starts the command and reports its rusage. Linux carries a process's peak RSS across fork and
# exec (the child's ru_maxrss starts at its parent's), so a child of this pytest process, which
# may hold a 100k-entry wiki it just generated, would report the parent's size as its own; a
# small launcher's child starts from the launcher's ~10 MB instead.
LAUNCH = """
import os, sys
fd = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    os.close(fd)
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
os.write(fd, repr((os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime,
                  usage.ru_maxrss)).encode())
"""


def run(cmd: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> Run:
    """One child: its CPU time and peak memory, from wait4 (its own, not its parent's)."""
    read, write = os.pipe()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [PY, "-c", LAUNCH, str(write), shutil.which(cmd[0]) or cmd[0], *cmd[1:]],
            env=env, stdout=out, stderr=err, pass_fds=(write,),
        )  # fmt: skip
        os.close(write)
        with os.fdopen(read, "rb") as fh:
            report = fh.read()
        proc.wait()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    code, cpu, maxrss = ast.literal_eval(report.decode())
    assert code in ok, (cmd, code, stderr)
    return Run(cpu, maxrss / 1024, stdout)


def best(cmds: dict[str, list[str]], env: dict[str, str], rounds: int) -> dict[str, Run]:
    """Each command's least-CPU run of ``rounds``, the commands alternating round by round."""
    out: dict[str, Run] = {}
    for _ in range(rounds):
        for label, cmd in cmds.items():
            got = run(cmd, env)
            if label not in out or got.cpu < out[label].cpu:
                out[label] = got
    return out


@pytest.fixture(scope="module", autouse=True)
def compiled():
    """Byte-compile the package first, as an install does: else every run compiles it again
    (when the environment says not to write .pyc files) and the figures are the compiler's."""
    compileall.compile_dir(str(SRC / "llm_wiki"), quiet=1)


def _wiki(tmp_path_factory, n: int, one_domain: bool = False) -> Path:
    cache = os.environ.get("LLM_WIKI_BENCH_CACHE")
    name = f"wiki-{n}{'-one-domain' if one_domain else ''}"
    root = Path(cache) / name if cache else tmp_path_factory.mktemp("speed") / name
    done = root / ".llm-wiki" / "bench-built"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    entries = make_entries(n)
    if one_domain:
        entries = [dataclasses.replace(e, domain="platform") for e in entries]
    write_wiki(root, entries)
    run([*CLI, "index"], subprocess_env(LLM_WIKI_DIR=str(root)))
    done.write_text("")
    return root


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    return _wiki(tmp_path_factory, N)


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    return _wiki(tmp_path_factory, SMALL)


@pytest.fixture(scope="module")
def one_domain(tmp_path_factory) -> Path:
    return _wiki(tmp_path_factory, N, one_domain=True)


def _ratio_line(label: str, got: float, floor: float, target: float) -> str:
    ok = "met" if got <= target * floor else "NOT MET"
    return (
        f"{label}: {got * 1000:.0f} ms CPU, floor {floor * 1000:.0f} ms, "
        f"{got / floor:.2f}x (target <= {target}x): {ok}"
    )


def test_write_show_list_are_flat_and_near_import_click(small, big, one_domain):
    rounds = int(os.environ.get("LLM_WIKI_BENCH_ROUNDS", "12"))
    missed = []
    print()
    for wiki, domain, what in (
        (small, "platform", f"{SMALL} entries, a domain of ~{SMALL // 20}"),
        (big, "platform", f"{N} entries, a domain of ~{N // 20}"),
        (big, "a-new-domain", f"{N} entries, a domain of a few"),
        (one_domain, "platform", f"{N} entries, all in the one domain"),
    ):
        env = subprocess_env(LLM_WIKI_DIR=str(wiki))
        listed = run([*CLI, "list", "--limit", "1", "--offset", "50", "--json"], env)
        shown = json.loads(listed.stdout)["entries"][0]["id"]
        cmds = {
            "click": [PY, "-c", "import click"],
            "write": [
                *CLI,
                "write",
                "--type",
                "incident",
                "--domain",
                domain,
                "--summary",
                "A benchmark write",  # identical writes are one entry: made unique below
                "--tag",
                "bench",
            ],
            "show": [*CLI, "show", shown],
            "list": [*CLI, "list"],
        }
        out: dict[str, Run] = {}
        for r in range(rounds):
            for label, cmd in cmds.items():
                if label == "write":
                    cmd = [*cmd[:-3], f"A benchmark write {os.getpid()} {r}", *cmd[-2:]]
                got = run(cmd, env)
                if label not in out or got.cpu < out[label].cpu:
                    out[label] = got
        floor = out["click"].cpu
        for label in ("write", "show", "list"):
            line = _ratio_line(f"{label} ({what})", out[label].cpu, floor, 1.5)
            print(line)
            if "NOT" in line:
                missed.append(line)
    assert not missed, missed


def test_full_build_near_the_read_and_parse_floor(big):
    env = subprocess_env(LLM_WIKI_DIR=str(big))
    builds, floors = [], []
    for _ in range(2):
        for derived in (".llm-wiki", "index"):
            shutil.rmtree(big / derived, ignore_errors=True)
        (big / "INDEX.md").unlink(missing_ok=True)
        builds.append(run([*CLI, "index"], env).cpu)
        floors.append(run([PY, "-c", YAML_FLOOR, str(big)], env).cpu)
    (big / ".llm-wiki" / "bench-built").write_text("")
    line = _ratio_line(f"full build of {N}", min(builds), min(floors), 1.5)
    print("\n" + line)
    assert "NOT" not in line


def test_verify_near_the_sha256_floor_in_little_memory(big):
    env = subprocess_env(LLM_WIKI_DIR=str(big))
    out = best({"verify": [*CLI, "verify"], "floor": [PY, "-c", SHA_FLOOR, str(big)]}, env, 3)
    line = _ratio_line(f"verify of {N}", out["verify"].cpu, out["floor"].cpu, 1.5)
    print(f"\n{line}; peak memory {out['verify'].rss_mib:.0f} MiB (target <= 50)")
    assert "clean" in out["verify"].stdout
    assert "NOT" not in line and out["verify"].rss_mib <= 50


def test_index_with_nothing_changed(big):
    env = subprocess_env(LLM_WIKI_DIR=str(big))
    run([*CLI, "index"], env)
    out = best({"index": [*CLI, "index"], "click": [PY, "-c", "import click"]}, env, 5)
    got = out["index"].cpu
    print(
        f"\nindex with nothing changed at {N}: {got * 1000:.0f} ms CPU (target <= 200 ms); "
        f"import click {out['click'].cpu * 1000:.0f} ms"
    )
    assert "re-parsed 0" in out["index"].stdout
    assert got <= 0.2


def test_index_check_within_twice_a_full_build(big):
    env = subprocess_env(LLM_WIKI_DIR=str(big))
    check = run([*CLI, "index", "--check"], env).cpu
    for derived in (".llm-wiki", "index"):
        shutil.rmtree(big / derived, ignore_errors=True)
    build = run([*CLI, "index"], env).cpu
    (big / ".llm-wiki" / "bench-built").write_text("")
    check = min(check, run([*CLI, "index", "--check"], env).cpu)
    line = _ratio_line(f"index --check of {N}", check, build, 2.0)
    print("\n" + line.replace("floor", "full build"))
    assert "NOT" not in line


def test_offline_query_cpu(big):
    env = subprocess_env(LLM_WIKI_DIR=str(big))
    question = "Why do we use Kafka for the queue?"
    out = best(
        {
            "query": [*CLI, "query", "--backend", "offline", question],
            "click": [PY, "-c", "import click"],
        },
        env,
        5,
    )
    got = out["query"].cpu
    print(
        f"\noffline query at {N}: {got * 1000:.0f} ms CPU (target <= 130 ms); "
        f"import click {out['click'].cpu * 1000:.0f} ms"
    )
    assert "Kafka" in out["query"].stdout
    assert got <= 0.13
