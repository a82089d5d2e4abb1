"""Foundation benchmarks (issue 2): write, full index build, re-index after one entry.

Each figure is a ratio against a baseline measured in the same run:
- `write` on a 10,000-entry wiki vs `python -c 'import click'` (the floor of any click command): ≤ 2×
- full index build of 10,000 entries vs reading every file and parsing its frontmatter with
  yaml's CSafeLoader: ≤ 2.5×; peak memory of the build ≤ 300 MB, and of `index --check` ≤ 1.5×
  the build's (it held every entry and an in-memory FTS index: 392 MB at 30,000 entries)
- re-index after one new entry vs the full build: ≤ 5%

Run: pytest tests/bench/test_bench_foundation.py -s
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

import pytest

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from wikigen import make_entries, write_wiki  # noqa: E402

from conftest import subprocess_env  # noqa: E402

N = int(os.environ.get("LLM_WIKI_BENCH_ENTRIES", "10000"))

FLOOR = """
import os, sys, yaml
root = sys.argv[1]
n = 0
for dirpath, _, files in os.walk(os.path.join(root, "entries")):
    for name in files:
        with open(os.path.join(dirpath, name), "rb") as fh:
            text = fh.read().decode()
        head = text[4:text.index("\\n---\\n", 4)]
        yaml.load(head, Loader=yaml.CSafeLoader)
        n += 1
print(n)
"""


CPU: dict[str, list[float]] = {}


def timed(cmd, env, runs=1, label=None):
    """Wall times of ``runs`` runs; the children's CPU time (user + sys) goes to CPU[label]."""
    times = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if label:
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            CPU.setdefault(label, []).append(cpu)
        assert proc.returncode == 0, proc.stderr
    return times


def peak_rss_mb(cmd, env):
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *cmd], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return int(proc.stderr.strip().splitlines()[-1]) / 1024


@pytest.fixture(scope="module")
def big_wiki(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench") / "wiki"
    write_wiki(root, make_entries(N))
    return root


def test_bench_foundation(big_wiki):
    env = subprocess_env(LLM_WIKI_DIR=str(big_wiki))
    py = sys.executable
    index_cmd = [py, "-m", "llm_wiki", "index"]

    # full index build vs the parse floor (best of 3 each, alternating)
    full, floor = [], []
    for _ in range(3):
        shutil.rmtree(big_wiki / ".llm-wiki", ignore_errors=True)
        shutil.rmtree(big_wiki / "index", ignore_errors=True)
        full += timed(index_cmd, env, label="full")
        floor += timed([py, "-c", FLOOR, str(big_wiki)], env, label="floor")
    shutil.rmtree(big_wiki / ".llm-wiki", ignore_errors=True)
    peak = peak_rss_mb(index_cmd, env)
    check_peak = peak_rss_mb([*index_cmd, "--check"], env)  # streams too: no wiki in memory

    # re-index after one new entry, against the full build: an entry written with the tool,
    # then, five times, one added behind its back (as git would), each followed by `index`
    subprocess.run(
        [
            py,
            "-m",
            "llm_wiki",
            "write",
            "--type",
            "incident",
            "--domain",
            "ops",
            "--summary",
            "One more entry for the re-index figure",
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    reindex = timed(index_cmd, env, label="reindex")
    for i in range(5):
        new = big_wiki / f"entries/2099/01/2099-01-0{i + 1}-added-behind-the-tools-back-abc{i}.md"
        new.parent.mkdir(parents=True, exist_ok=True)
        new.write_text(
            f"---\nid: {new.stem}\ntype: incident\ndate: 2099-01-0{i + 1}\n"
            "summary: Added behind the tool's back\ndomain: ops\n---\nbody\n"
        )
        reindex += timed(index_cmd, env, label="reindex")
    unchanged = timed(index_cmd, env, runs=4)  # nothing changed: the scan alone

    # write on the 10k wiki vs the click import floor (alternating, 15 runs each)
    click_floor, writes = [], []
    write_cmd = [
        py,
        "-c",
        "from llm_wiki.cli import main; main()",
        "write",
    ]  # as the console script
    for i in range(25):
        click_floor += timed([py, "-c", "import click"], env, label="click")
        writes += timed(
            [
                *write_cmd,
                "--type",
                "incident",
                "--domain",
                "ops",
                "--summary",
                f"Benchmark write number {i}",
                "--tag",
                "bench",
            ],
            env,
            label="write",
        )

    # best-of-N wall times: the least disturbed run of each, since other load only adds time
    f_full, f_floor = min(full), min(floor)
    f_write, f_click = min(writes), min(click_floor)
    cpu = {k: min(v) for k, v in CPU.items()}
    print(f"\n== foundation benchmarks ({N} entries, python {sys.version.split()[0]}) ==")
    print(
        f"full index build: {f_full * 1000:.0f} ms; floor (read + CSafeLoader): {f_floor * 1000:.0f} ms; ratio {f_full / f_floor:.2f}x (target <= 2.5x); CPU ratio {cpu['full'] / cpu['floor']:.2f}x"
    )
    print(f"peak memory of the full build: {peak:.0f} MB (target <= 300 MB)")
    print(f"peak memory of index --check: {check_peak:.0f} MB ({check_peak / peak:.2f}x the build)")
    assert check_peak <= 1.5 * peak
    print(
        f"re-index after one new entry: best {min(reindex) * 1000:.0f} ms of {len(reindex)} (median {statistics.median(reindex) * 1000:.0f}) = {100 * min(reindex) / f_full:.1f}% of the full build (target <= 5%); CPU {100 * cpu['reindex'] / cpu['full']:.1f}%; unchanged re-index {min(unchanged) * 1000:.0f} ms"
    )
    print(
        f"write at {N} entries: best {f_write * 1000:.0f} ms (median {statistics.median(writes) * 1000:.0f}); import click: best {f_click * 1000:.0f} ms (median {statistics.median(click_floor) * 1000:.0f}); ratio {f_write / f_click:.2f}x (target <= 2x); CPU ratio {cpu['write'] / cpu['click']:.2f}x"
    )
    verify = subprocess.run(
        [py, "-m", "llm_wiki", "verify"], env=env, capture_output=True, text=True
    )
    assert verify.returncode == 1 and "unlogged" in verify.stdout  # the file added by hand
