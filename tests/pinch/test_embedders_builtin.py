"""The builtin embedder's parts: tokenizer, identifier split, blend, data, fallbacks."""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinch.embedders import BuiltinEmbedder, EmbeddingError, builtin
from pinch.embedders.wordpiece import WordPiece, basic_words, basic_words_exact

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "conversations"


@pytest.fixture(scope="module")
def hybrid():
    return BuiltinEmbedder()


@pytest.fixture(scope="module")
def wordpiece(hybrid):
    return hybrid.table.tokenizer


def tokens(wordpiece: WordPiece, text: str) -> list[str]:
    by_id = {i: t for t, i in wordpiece.ids.items()}
    return [by_id[i] for i in wordpiece.encode(text)]


# Expected cuts are what the tokenizers library (0.22) gives for MiniLM's vocabulary.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("unaffable", ["una", "##ffa", "##ble"]),
        ("Hello, World!", ["hello", ",", "world", "!"]),
        ("snake_case_name", ["snake", "_", "case", "_", "name"]),
        ("Café naïve", ["cafe", "naive"]),
        ("a" * 101, ["[UNK]"]),
        ("日本", ["日", "本"]),
        ("ab\x01cd", ["abc", "##d"]),
    ],
)
def test_wordpiece_cuts_like_bert(wordpiece, text, expected):
    assert tokens(wordpiece, text) == expected


def test_basic_words_split_punctuation_and_lowercase():
    assert basic_words("GET /api/v1?q=x") == ["get", "/", "api", "/", "v1", "?", "q", "=", "x"]
    assert basic_words("Ünïcode — text") == ["unicode", "—", "text"]


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_the_fast_paths_split_any_text_as_the_reference_does(text):
    assert basic_words(text) == basic_words_exact(text)


def test_the_fast_ascii_path_matches_bert_words_exactly(hybrid):
    samples = [
        "def parse_config(path):\n    return Config(**yaml.safe_load(open(path)))",
        "FAILED tests/test_x.py::TestThing::test_it - AssertionError: 1 != 2",
        "ERROR\x1b[31m red \x1b[0m\tTabs\x0bvertical ctrl\x01char __dunder__",
    ]
    if CORPUS.is_dir():
        for name in sorted(glob.glob(str(CORPUS / "*.json")))[:6]:
            for m in json.loads(Path(name).read_text())["messages"]:
                if m.get("role") == "tool" and isinstance(m.get("content"), str):
                    samples.append(m["content"][:2000])
    width = hybrid.table.dim
    for text, feature in zip(samples, hybrid.featurize(samples)):
        fast = np.frombuffer(feature[-4 * width :], dtype="<f4")
        exact = hybrid.table.vector(text)
        assert float(fast @ exact) == pytest.approx(1.0, abs=1e-5), text[:80]


def test_identifiers_match_across_camel_case_snake_case_and_paths():
    embedder = BuiltinEmbedder(static=False)
    vectors = embedder.embed(
        [
            "UsernameValidator allows a trailing newline",
            "./django/contrib/auth/username_validator.py",
            "$ df -h /\nFilesystem Size Used Avail",
        ]
    )
    assert vectors[1] @ vectors[0] > 0.2
    assert vectors[2] @ vectors[0] == pytest.approx(0.0, abs=0.05)


def test_the_blend_is_the_weighted_sum_of_the_two_cosines(hybrid):
    vectors = hybrid.embed(["the invoice total is wrong", "compute_total in invoice.py", "ls"])
    hashed, static = vectors[:, : builtin.HASH_DIM], vectors[:, builtin.HASH_DIM :]
    w = builtin.STATIC_WEIGHT
    cos_h = (hashed[1] @ hashed[0]) / (1 - w)
    cos_s = (static[1] @ static[0]) / w
    blended = vectors[1] @ vectors[0] / (np.linalg.norm(vectors[1]) * np.linalg.norm(vectors[0]))
    assert blended == pytest.approx((1 - w) * cos_h + w * cos_s, abs=1e-5)


def test_idf_is_over_the_batch():
    embedder = BuiltinEmbedder(static=False)
    common = "error line self "
    small = embedder.embed([common + "alpha", common + "alpha beta"])
    large = embedder.embed([common + "alpha", common + "alpha beta"] + [common] * 5)
    # "error line self" is in every text of the larger batch, so it weighs less
    # there and the shared rarer word "alpha" decides more.
    assert large[1] @ large[0] != pytest.approx(small[1] @ small[0])


def test_without_the_data_files_it_falls_back_to_hashed_and_logs_once(
    tmp_path, caplog, monkeypatch
):
    monkeypatch.setattr(builtin, "_missing_data_logged", False)
    with caplog.at_level(logging.WARNING, logger="pinch.relevance.embedders"):
        first = BuiltinEmbedder(data_dir=tmp_path)
        second = BuiltinEmbedder(data_dir=tmp_path)
    assert first.table is None and second.table is None
    assert first.identity.endswith(":hashed")
    assert first.embed(["a query", "a result"]).shape == (2, builtin.HASH_DIM)
    warnings = [r for r in caplog.records if "static embedding table unavailable" in r.message]
    assert len(warnings) == 1


def test_a_truncated_table_is_treated_as_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(builtin, "_missing_data_logged", True)
    for name in ("static_scales.npy", "static_vocab.txt", "static_meta.json"):
        (tmp_path / name).write_bytes((builtin.DATA_DIR / name).read_bytes())
    (tmp_path / "static_embeddings.npy").write_bytes(b"\x93NUMPY garbage")
    assert BuiltinEmbedder(data_dir=tmp_path).table is None


def test_unreadable_features_are_an_embedding_error(hybrid):
    good = hybrid.featurize(["some text"])[0]
    with pytest.raises(EmbeddingError):
        hybrid.finish([good[:-3]])
    with pytest.raises(EmbeddingError):
        hybrid.finish([b"\x01"])
    hashed_only = BuiltinEmbedder(static=False).featurize(["some text"])[0]
    with pytest.raises(EmbeddingError, match="another table"):
        hybrid.finish([hashed_only])


def test_forgetting_runs_at_the_limit_changes_nothing(monkeypatch):
    texts = [f"module_{i}.py imports helper{i % 3} and FooBar{i}" for i in range(40)]
    expected = BuiltinEmbedder().featurize(texts)
    monkeypatch.setattr(builtin, "_RUN_LIMIT", 25)
    embedder = BuiltinEmbedder()
    assert embedder.featurize(texts) == expected
    assert embedder.featurize(texts[::-1]) == expected[::-1]


def test_threads_share_one_embedder_safely():
    embedder = BuiltinEmbedder()
    texts = [f"file_{i}.py: def handler_{i}(request): return Response{i}()" for i in range(60)]
    expected = BuiltinEmbedder().featurize(texts)
    results: list[list[bytes]] = []

    def work(offset: int) -> None:
        chunk = texts[offset:] + texts[:offset]
        results.append(embedder.featurize(chunk)[len(texts) - offset :])

    threads = [threading.Thread(target=work, args=(k * 7,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got in results:
        assert got == expected[: len(got)]


def test_the_shipped_table_matches_its_metadata_and_carries_its_licence():
    data = builtin.DATA_DIR
    meta = json.loads((data / "static_meta.json").read_text())
    table = np.load(data / "static_embeddings.npy")
    assert table.dtype == np.int8 and table.shape == (meta["vocab_size"], meta["pca_dims"])
    assert hashlib.sha256(table.tobytes()).hexdigest() == meta["table_sha256"]
    assert "Apache License" in (data / "LICENSE-all-MiniLM-L6-v2").read_text()
    assert "all-MiniLM-L6-v2" in (data / "NOTICE").read_text()


def test_two_hundred_candidates_embed_in_well_under_a_second(hybrid):
    # A coarse guard against an accidental slowdown by orders of magnitude;
    # the real figures come from bench/bench_embedders.py.
    texts = [
        f"result {i}: " + "def handler(request): return render(request, 'x.html') " * 36
        for i in range(201)
    ]
    started = time.monotonic()
    BuiltinEmbedder().embed(texts)
    assert time.monotonic() - started < 1.5
