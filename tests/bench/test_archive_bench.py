"""Archive figures: 10,000 superseded entries (wall time, peak memory), the compression ratio of
the real records, and `show` of an archived entry at 10,000 archived entries — each against a
baseline measured in the same run.

Run: /work/venv/bin/pytest tests/bench/test_archive_bench.py -s
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CORPORA, run_module, subprocess_env

OLD = 10_000
PER_NEW = 10  # each new entry supersedes this many old ones
NOW = "2026-03-01"


def build_wiki(root: Path, texts: list[str], old: int, per_new: int) -> tuple[list[str], list[str]]:
    """A wiki of ``old`` entries superseded ``per_new`` at a time, written straight to disk (files
    and log lines, as the writer would), then indexed once."""
    from llm_wiki.create import init_wiki
    from llm_wiki.entries import candidate_ids, draft, dump_entry
    from llm_wiki.store import format_log_line, sha256_bytes

    init_wiki(root)
    lines: list[str] = []

    def put(entry) -> str:
        entry_id = next(candidate_ids(entry))
        entry = dataclasses.replace(entry, id=entry_id)
        data = dump_entry(entry).encode()
        path = root / entry.relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o444)
        lines.append(
            format_log_line(
                "write", entry_id, sha256=sha256_bytes(data), scope="shared", path=entry.relpath
            )
        )
        return entry_id

    old_ids, new_ids = [], []
    for n in range(old):
        text = texts[n % len(texts)]
        title = text.splitlines()[0].lstrip("# ").strip() or "A decision"
        old_ids.append(
            put(
                draft(
                    type="decision",
                    domain=f"area-{n % 12}",
                    summary=f"{title} (variant {n})",
                    tag=[f"t{n % 40}", "adr"],
                    alt=[f"option-{n % 7}: rejected in review {n}"],
                    date=f"2025-{1 + n % 6:02d}-{1 + n % 28:02d}",
                    origin="imported",
                    body=f"{text}\n\nRecord {n}.\n",
                )
            )
        )
    for start in range(0, old, per_new):
        batch = old_ids[start : start + per_new]
        new_ids.append(
            put(
                draft(
                    type="decision",
                    domain="area-0",
                    summary=f"Replace decisions {start} to {start + len(batch) - 1}",
                    alt=["keep-them: outdated"],
                    supersedes=batch,
                    date="2025-07-01",
                    body="Superseded in bulk.\n",
                )
            )
        )
    with open(root / "log.md", "a") as fh:
        fh.write("\n".join(lines) + "\n")
    return old_ids, new_ids


def corpus_texts() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted(CORPORA.glob("*/*.md"))]


def timed_peak(
    args: list[str], env: dict[str, str]
) -> tuple[float, int, subprocess.CompletedProcess]:
    """Wall seconds and peak RSS (bytes) of one `python -m llm_wiki ARGS` process, measured by a
    parent that has no other child."""
    probe = (
        "import resource, subprocess, sys, time, json\n"
        "t = time.perf_counter()\n"
        f"p = subprocess.run([sys.executable, '-m', 'llm_wiki', *{args!r}], capture_output=True)\n"
        "wall = time.perf_counter() - t\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
        "sys.stdout.buffer.write(p.stdout)\n"
        "sys.stderr.buffer.write(p.stderr)\n"
        "print(json.dumps({'wall': wall, 'peak': peak, 'rc': p.returncode}), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    stats = json.loads(proc.stderr.strip().splitlines()[-1])
    assert stats["rc"] == 0, proc.stderr
    return stats["wall"], stats["peak"], proc


def per_process(args: list[str], env: dict[str, str], runs: int = 15) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = run_module(*args, env=env)
        times.append(time.perf_counter() - start)
        assert proc.returncode == 0, proc.stderr
    return statistics.median(times)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench") / "wiki"
    start = time.perf_counter()
    old_ids, new_ids = build_wiki(root, corpus_texts(), OLD, PER_NEW)
    built = time.perf_counter() - start
    env = subprocess_env(LLM_WIKI_DIR=str(root), LLM_WIKI_NOW=NOW)
    start = time.perf_counter()
    proc = run_module("index", env=env, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    print(
        f"\nbuilt {len(old_ids) + len(new_ids):,} entries in {built:.1f} s; "
        f"`index` {time.perf_counter() - start:.1f} s"
    )
    return root, env, old_ids, new_ids


def test_archive_10k_superseded_entries_time_and_peak_memory(big):
    root, env, old_ids, new_ids = big
    loose_bytes = sum(p.stat().st_size for p in (root / "entries").rglob("*.md"))
    # baselines in the same run: a process that only opens the catalog, and the system tools
    base_wall, base_peak, _ = timed_peak(["stats"], env)
    start = time.perf_counter()
    subprocess.run(
        f"tar -cf - entries | zstd -q -19 --single-thread -o {root}/.llm-wiki/baseline.tar.zst",
        shell=True,
        cwd=root,
        check=True,
    )
    tools_wall = time.perf_counter() - start
    tools_size = (root / ".llm-wiki/baseline.tar.zst").stat().st_size

    wall, peak, proc = timed_peak(["archive", "--json"], env)
    result = json.loads(proc.stdout)
    assert len(result["archived"]) == OLD
    size = (root / result["archive"]).stat().st_size
    print(
        f"\narchive {OLD:,} superseded entries ({result['entry_bytes'] / 1e6:.1f} MB of entry files, "
        f"{loose_bytes / 1e6:.1f} MB loose before): {wall:.1f} s wall, peak RSS "
        f"{peak / 2**20:.0f} MiB\n"
        f"  baseline `llm-wiki stats` on the same wiki: {base_wall:.2f} s, peak RSS "
        f"{base_peak / 2**20:.0f} MiB (archive/baseline memory {peak / base_peak:.2f}x)\n"
        f"  baseline `tar -cf - entries | zstd -19` of all {len(old_ids) + len(new_ids):,} files: "
        f"{tools_wall:.1f} s, {tools_size / 1e6:.2f} MB (archive/tools time {wall / tools_wall:.2f}x)\n"
        f"  archive file: {size / 1e6:.2f} MB ({result['entry_bytes'] / size:.1f}x smaller than "
        "its entries; synthetic bodies repeat the corpus, so this ratio flatters)"
    )
    assert peak <= 200 * 2**20
    proc = run_module("verify", env=env, timeout=1800)
    assert proc.returncode == 0, proc.stdout


def test_show_archived_entry_at_10k_archived(big):
    root, env, old_ids, new_ids = big
    archived = run_module("stats", "--json", env=env)
    assert json.loads(archived.stdout)["archived"] == OLD, "run after the archive benchmark"
    run_module("show", old_ids[0], env=env)  # warm the page cache for both
    run_module("show", new_ids[0], env=env)
    loose = per_process(["show", new_ids[len(new_ids) // 2]], env)
    packed = per_process(["show", old_ids[OLD // 2]], env)
    last = per_process(["show", old_ids[-1]], env)

    from llm_wiki.access import Viewer
    from llm_wiki.catalog import read_catalog
    from llm_wiki.reads import read_entry
    from llm_wiki.wiki import Wiki

    wiki = Wiki(root)
    with read_catalog(wiki) as catalog:
        row = catalog.get(old_ids[OLD // 2], Viewer.everyone())
    start = time.perf_counter()
    for _ in range(50):
        read_entry(wiki, row)
    one_read = (time.perf_counter() - start) / 50
    from llm_wiki.archive_file import read_member

    start = time.perf_counter()
    read_member(wiki, row.archive, row.path)  # no locator: the archive is read through
    through = time.perf_counter() - start
    print(
        f"\n`show` per process, median of 15 (wiki of {OLD + len(new_ids):,} entries, {OLD:,} "
        f"archived in one {(root / row.archive).stat().st_size / 1e6:.1f} MB archive):\n"
        f"  loose entry (baseline): {loose * 1000:.0f} ms\n"
        f"  archived entry, middle of the archive: {packed * 1000:.0f} ms "
        f"({packed / loose:.2f}x the baseline)\n"
        f"  archived entry, last in the archive: {last * 1000:.0f} ms ({last / loose:.2f}x)\n"
        f"  in-process read of one archived entry through its locator: {one_read * 1000:.2f} ms"
        f" (without it, reading the archive through to the entry: {through * 1000:.0f} ms)"
    )
    assert packed <= 0.200 and last <= 0.200


def test_compression_ratio_of_a_monthly_archive_of_the_real_records(tmp_path):
    texts = corpus_texts()
    root = tmp_path / "wiki"
    old_ids, _ = build_wiki(root, texts, len(texts), len(texts))
    env = subprocess_env(LLM_WIKI_DIR=str(root), LLM_WIKI_NOW=NOW)
    assert run_module("index", env=env).returncode == 0
    entry_files = sum(
        (root / p).stat().st_size for p in (root / "entries").rglob("*.md") if p.stem in old_ids
    )
    raw = sum(len(t.encode()) for t in texts)
    proc = run_module("archive", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    size = (root / result["archive"]).stat().st_size
    assert result["entry_bytes"] == entry_files
    baseline = subprocess.run(
        ["zstd", "-19", "-c", *[str(p) for p in sorted(CORPORA.glob("*/*.md"))]],
        capture_output=True,
        check=True,
    ).stdout
    ratio = entry_files / size
    print(
        f"\nmonthly archive of the {len(texts)} real records in tests/data/corpora "
        f"({raw:,} bytes of ADR text; {entry_files:,} bytes as entry files): {size:,} bytes, "
        f"ratio {ratio:.2f}x\n"
        f"  baseline `zstd -19` of the raw ADR files, each its own frame: "
        f"{raw / len(baseline):.2f}x"
    )
    assert ratio >= 2.5
