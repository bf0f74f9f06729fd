"""The embedding model: the real shipped model, loaded offline, no mocks."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from sidecar.ingest.embed import (
    COMPOSITE_FILE,
    DEFAULT_MODEL_DIR,
    DEFAULT_MODEL_NAME,
    QUERY_CACHE,
    Embedder,
    ModelUnavailable,
)

MODELS = DEFAULT_MODEL_DIR.parent
ENGLISH = MODELS / "minilm-l6-m2v-256-int8"  # the shipped parts of the default, each a Model2Vec folder
MULTILINGUAL = MODELS / "use-m3-m2v-256-int8"
PARTS = (ENGLISH, MULTILINGUAL)
DIM = 512  # the default: both parts side by side
PART_DIM = 256


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Offline mode plus a tripwire: any attempt to open a connection fails the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    yield


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_default_model_loads_offline(no_network: None) -> None:
    model = Embedder.load()
    assert model.name == DEFAULT_MODEL_NAME
    assert model.dim == DIM
    assert model.encode(["offline check"]).shape == (1, DIM)


def test_rows_are_unit_norm_float32(embedder: Embedder) -> None:
    texts = ["Obsidian vault backup", "a longer paragraph about syncing notes between devices " * 5, "x"]
    vectors = embedder.encode(texts)
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, DIM)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_batching_does_not_change_results(embedder: Embedder) -> None:
    texts = [f"note number {i} about topic {i % 7}" for i in range(50)]
    np.testing.assert_allclose(embedder.encode(texts, batch_size=7), embedder.encode(texts), atol=1e-6)


def test_an_unsaved_buffers_sections_are_encoded_once(embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """The related pane sends the buffer at every pause in typing; only the section being written changes."""
    sections = ["# Trip\n\nTrain to Porto", "## Food\n\nFrancesinha and port wine", "## Budget\n\n300 euros"]
    first = embedder.encode_recent(sections)
    np.testing.assert_array_equal(first, embedder.encode(sections))  # the same rows as without the cache
    encoded: list[list[str]] = []
    plain = Embedder.encode
    monkeypatch.setattr(Embedder, "encode", lambda self, texts, batch_size=1024: encoded.append(list(texts))
                        or plain(self, texts, batch_size))
    typed = [*sections[:2], sections[2] + " for the week"]
    np.testing.assert_array_equal(embedder.encode_recent(typed), plain(embedder, typed))
    assert encoded == [[typed[2]]]  # only the changed section was encoded
    with pytest.raises(TypeError):
        embedder.encode_recent("one string")


def test_paraphrase_is_closer_than_unrelated(embedder: Embedder) -> None:
    query, paraphrase, unrelated = embedder.encode(
        [
            "how do I reset my router password",
            "changing the admin login of the wifi box",
            "a recipe for cheese bread",
        ]
    )
    assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.1


def test_text_without_known_tokens_gives_zero_row(embedder: Embedder) -> None:
    vectors = embedder.encode(["", "real words here"])
    assert not np.any(vectors[0])
    assert np.isfinite(vectors).all()
    assert np.linalg.norm(vectors[1]) == pytest.approx(1.0, abs=1e-5)


def test_empty_input_gives_empty_matrix(embedder: Embedder) -> None:
    vectors = embedder.encode([])
    assert vectors.shape == (0, DIM)
    assert vectors.dtype == np.float32


def test_single_string_is_rejected(embedder: Embedder) -> None:
    with pytest.raises(TypeError, match="sequence of texts"):
        embedder.encode("not a list")


def test_fingerprint_is_stable_across_loads(embedder: Embedder) -> None:
    again = Embedder.load(str(DEFAULT_MODEL_DIR))
    assert len(embedder.fingerprint) == 16
    int(embedder.fingerprint, 16)  # hex
    assert again.fingerprint == embedder.fingerprint


def test_fingerprint_changes_with_the_weights(embedder: Embedder, tmp_path: Path) -> None:
    altered = tmp_path / "altered"
    shutil.copytree(ENGLISH, altered)
    # Nudge a single int8 weight: the smallest change that makes a different model.
    tensors = load_file(altered / "model.safetensors")
    tensors["embeddings"][100, 0] ^= 1
    save_file(tensors, altered / "model.safetensors")
    other = Embedder.load(str(altered))
    assert other.dim == PART_DIM
    assert other.name == "altered"
    assert other.fingerprint != Embedder.load(str(ENGLISH)).fingerprint


def test_fingerprint_ignores_documentation(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(ENGLISH, copy)
    (copy / "README.md").write_text("edited\n")
    assert Embedder.load(str(copy)).fingerprint == Embedder.load(str(ENGLISH)).fingerprint


@pytest.mark.parametrize("folder", PARTS, ids=lambda p: p.name)
def test_sha256sums_match_shipped_files(folder: Path) -> None:
    lines = (folder / "SHA256SUMS").read_text().splitlines()
    listed = {name: digest for digest, name in (line.split("  ", 1) for line in lines)}
    shipped = {p.name for p in folder.iterdir() if p.is_file() and p.name != "SHA256SUMS"}
    assert set(listed) == shipped
    assert {"model.safetensors", "tokenizer.json", "config.json", "LICENSE", "NOTICE", "README.md"} <= shipped
    for name, digest in listed.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.parametrize("folder", [*PARTS, DEFAULT_MODEL_DIR], ids=lambda p: p.name)
def test_shipped_files_hold_no_absolute_path(folder: Path) -> None:
    for name in ("config.json", "README.md", "modules.json", COMPOSITE_FILE):
        if not (folder / name).exists():
            continue
        text = (folder / name).read_text()
        for marker in ("/tmp/", "/home/", "/root/", "site-packages", "C:\\"):
            assert marker not in text, f"{name} contains {marker!r}"


def test_the_english_part_is_minilm() -> None:
    config = json.loads((ENGLISH / "config.json").read_text())
    assert config["tokenizer_name"] == "sentence-transformers/all-MiniLM-L6-v2"


@pytest.mark.parametrize("folder", PARTS, ids=lambda p: p.name)
def test_shipped_license_is_apache(folder: Path) -> None:
    readme = (folder / "README.md").read_text()
    assert "license: apache-2.0" in readme.lower()
    assert "Apache License" in (folder / "LICENSE").read_text()


def test_the_default_is_both_parts_side_by_side(embedder: Embedder) -> None:
    spec = json.loads((DEFAULT_MODEL_DIR / COMPOSITE_FILE).read_text())
    assert [(DEFAULT_MODEL_DIR / p["folder"]).resolve() for p in spec["parts"]] == [p.resolve() for p in PARTS]
    english, multilingual = Embedder.load(str(ENGLISH)), Embedder.load(str(MULTILINGUAL))
    a, b = "export a note as a PDF", "save my page as a printable document"
    pair = embedder.encode([a, b])
    mean = (float(english.encode([a])[0] @ english.encode([b])[0]) +
            float(multilingual.encode([a])[0] @ multilingual.encode([b])[0])) / 2
    assert float(pair[0] @ pair[1]) == pytest.approx(mean, abs=1e-4)  # equal weights: the mean of the cosines


def test_a_part_that_cannot_read_the_query_is_left_out(embedder: Embedder) -> None:
    query = embedder.encode_query("如何申请退款")
    assert not np.any(query[:PART_DIM])  # the English part knows no piece of it
    assert np.linalg.norm(query[PART_DIM:]) == pytest.approx(1.0, abs=1e-5)
    english = embedder.encode_query("how do I get a refund")
    assert np.any(english[:PART_DIM]) and np.any(english[PART_DIM:])


def test_a_query_asked_again_reuses_its_vector_read_only(embedder: Embedder) -> None:
    first = embedder.encode_query("daily note template ideas")
    again = embedder.encode_query("daily note template ideas")
    assert again is first and not again.flags.writeable  # a caller cannot change what the next search gets
    assert np.array_equal(first, embedder._encode(["daily note template ideas"], 1, query=True)[0])
    for i in range(QUERY_CACHE):  # the oldest goes once the cache is full: memory stays bounded
        embedder.encode_query(f"another query {i}")
    assert embedder.encode_query("daily note template ideas") is not first


def test_the_bands_read_the_multilingual_part(embedder: Embedder, tmp_path: Path) -> None:
    """It reads every language as words; the English part reads Hangul a letter a piece."""
    assert embedder.band_slice == slice(PART_DIM, 2 * PART_DIM)
    assert Embedder.load(str(ENGLISH)).band_slice == slice(0, PART_DIM)  # one model: all of it
    parts = [{"folder": str(p), "bands": True} for p in PARTS]
    (tmp_path / COMPOSITE_FILE).write_text(json.dumps({"parts": parts}))
    with pytest.raises(ModelUnavailable, match="more than one part"):
        Embedder.load(str(tmp_path))


def test_a_broken_parts_file_is_explained(tmp_path: Path) -> None:
    (tmp_path / COMPOSITE_FILE).write_text('{"parts": [{"weight": 1}]}')
    with pytest.raises(ModelUnavailable, match="not a valid list of model parts"):
        Embedder.load(str(tmp_path))


def test_missing_local_path_is_explained(no_network: None, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelUnavailable) as caught:
        Embedder.load(str(missing))
    message = str(caught.value)
    assert str(missing) in message
    assert "model.safetensors" in message
    assert DEFAULT_MODEL_NAME in message


def test_folder_without_model_is_explained(no_network: None, tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match=r"Model2Vec model folder"):
        Embedder.load(str(tmp_path))


def test_unreachable_hub_id_is_explained(no_network: None) -> None:
    with pytest.raises(ModelUnavailable) as caught:
        Embedder.load("example-owner/model-that-is-not-cached")
    message = str(caught.value)
    assert "example-owner/model-that-is-not-cached" in message
    assert "Hugging Face hub" in message
    assert "local folder path" in message


def test_hub_id_loads_from_the_local_hub_cache(embedder: Embedder, tmp_path: Path) -> None:
    # A subprocess, because huggingface_hub reads HF_HUB_CACHE and HF_HUB_OFFLINE once, at import.
    snapshot = tmp_path / "hub" / "models--example-owner--cached-model" / "snapshots" / "0123abc"
    shutil.copytree(ENGLISH, snapshot)
    script = (
        "from sidecar.ingest.embed import Embedder\n"
        "m = Embedder.load('example-owner/cached-model')\n"
        "print(m.name, m.dim, m.fingerprint)\n"
    )
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.split() == ["example-owner/cached-model", str(PART_DIM), Embedder.load(str(ENGLISH)).fingerprint]
