"""Site benchmarks (issue 16): full build, rebuild after one write, peak memory, sizes.

On a 10,000-entry wiki (tests/bench/wikigen.py; ``LLM_WIKI_BENCH_ENTRIES`` changes it):
- full `llm-wiki site` build vs `llm-wiki index` from scratch on the same wiki, CPU time (user +
  sys of the child): target <= 3x
- rebuild after one `write` (a decision superseding another, with a tag and an actor) as a share
  of the full build, CPU time: target <= 5%
- peak memory (max RSS) of the full build: target <= 300 MB
- size of the site and of its search data (search/*.js) per 1,000 entries

The test fails when a target is missed, after printing every figure.

Run: pytest tests/bench/test_site_bench.py -s   (CPU-heavy: prefix with nice)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_bench_foundation import CPU, peak_rss_mb, timed  # noqa: E402
from wikigen import make_entries, write_wiki  # noqa: E402

from conftest import subprocess_env  # noqa: E402

N = int(os.environ.get("LLM_WIKI_BENCH_ENTRIES", "10000"))


@pytest.fixture(scope="module")
def big_wiki(tmp_path_factory):
    root = tmp_path_factory.mktemp("site-bench") / "wiki"
    write_wiki(root, make_entries(N))
    return root


def run_cpu(cmd, env, label):
    """Run ``cmd``; its CPU time (user + sys) goes to CPU[label]; return its stdout."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stderr
    CPU.setdefault(label, []).append(
        (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    )
    return proc.stdout


def folder_bytes(path, pattern="*"):
    return sum(p.stat().st_size for p in path.rglob(pattern) if p.is_file())


def test_bench_site(big_wiki, tmp_path):
    env = subprocess_env(LLM_WIKI_DIR=str(big_wiki))
    py = sys.executable
    index_cmd = [py, "-m", "llm_wiki", "index"]
    out = tmp_path / "site"
    site_cmd = [py, "-m", "llm_wiki", "site", "--out", str(out), "--json"]
    CPU.clear()
    for _ in range(2):  # best of two, alternating: the least disturbed run of each
        shutil.rmtree(big_wiki / ".llm-wiki", ignore_errors=True)
        shutil.rmtree(big_wiki / "index", ignore_errors=True)
        timed(index_cmd, env, label="index")
        shutil.rmtree(out, ignore_errors=True)
        timed(site_cmd, env, label="site")
    shutil.rmtree(out, ignore_errors=True)
    peak = peak_rss_mb(site_cmd, env)
    pages = sum(1 for p in out.rglob("*") if p.is_file())
    size, search = folder_bytes(out), folder_bytes(out / "search")

    old = json.loads(
        subprocess.run(
            [py, "-m", "llm_wiki", "list", "--type", "decision", "--limit", "1", "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )["entries"][0]
    written = []
    for i in range(3):
        subprocess.run(
            [
                py, "-m", "llm_wiki", "write", "--type", "decision", "--domain", old["domain"],
                "--summary", f"Rebuild figure decision number {i}", "--alt", "keep: slower",
                "--tag", "cache", "--actor", "maria", *(["--supersedes", old["id"]] if i == 0 else []),
            ],
            env=env,
            check=True,
            capture_output=True,
        )  # fmt: skip
        written.append(len(json.loads(run_cpu(site_cmd, env, "rebuild"))["written"]))
        run_cpu(site_cmd, env, "unchanged")

    cpu = {k: min(v) for k, v in CPU.items()}
    per_k = 1000 / N
    print(f"\n== site benchmarks ({N} entries, {pages} files, python {sys.version.split()[0]}) ==")
    print(
        f"full site build: CPU {cpu['site']:.2f} s; `llm-wiki index` from scratch: CPU "
        f"{cpu['index']:.2f} s; ratio {cpu['site'] / cpu['index']:.2f}x (target <= 3x)"
    )
    print(
        f"rebuild after one write: CPU {cpu['rebuild']:.2f} s = "
        f"{100 * cpu['rebuild'] / cpu['site']:.1f}% of the full build (target <= 5%); pages "
        f"rewritten per write: {written}; nothing changed: CPU {cpu['unchanged']:.2f} s"
    )
    print(f"peak memory of the full build: {peak:.0f} MB (target <= 300 MB)")
    print(
        f"size: site {size / 1e6:.1f} MB ({size * per_k / 1e6:.2f} MB per 1k entries); search "
        f"data {search / 1e6:.1f} MB ({search * per_k / 1e6:.2f} MB per 1k entries)"
    )
    missed = [
        what
        for what, ok in (
            ("full build over 3x index", cpu["site"] <= 3 * cpu["index"]),
            ("rebuild after one write over 5% of the full build", cpu["rebuild"] <= 0.05 * cpu["site"]),
            ("peak memory over 300 MB", peak <= 300),
        )
        if not ok
    ]  # fmt: skip
    assert not missed, missed  # every figure printed first: the note quotes them all
