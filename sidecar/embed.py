"""Text -> vectors: the one embedding model the indexer and search share.

The default model ships inside the package (a static Model2Vec model; see
models/minilm-l6-m2v-256-int8/README.md), so indexing works offline, without
torch and without a GPU. Other models can be a local folder or, where the
Hugging Face hub is reachable, a hub id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path

import numpy as np
import numpy.typing as npt
from model2vec import StaticModel
from model2vec.persistence.hf import maybe_get_cached_model_path

DEFAULT_MODEL_NAME = "minilm-l6-m2v-256-int8"
DEFAULT_MODEL_DIR: Path = Path(__file__).resolve().parent / "models" / DEFAULT_MODEL_NAME

# The files that decide what a Model2Vec model computes, in hashing order.
# README, LICENSE and the like are left out: editing them changes no vector.
_FINGERPRINT_FILES = (
    "model.safetensors",
    "tokenizer.json",
    "config.json",
    "config_sentence_transformers.json",
    "0_StaticEmbedding/model.safetensors",
    "0_StaticEmbedding/tokenizer.json",
)
_FINGERPRINT_HEX_CHARS = 16
_MODEL_FILES_HINT = "a Model2Vec model folder (model.safetensors, tokenizer.json, config.json)"

Vectors = npt.NDArray[np.float32]


class ModelUnavailable(Exception):
    """The requested embedding model cannot be loaded; the message says what was tried and what to do."""


class Embedder:
    """A loaded embedding model: `encode` turns texts into unit-length float32 rows."""

    def __init__(self, model: StaticModel, name: str, folder: Path | None) -> None:
        # Use Embedder.load(); this takes an already loaded model2vec StaticModel.
        self._model = model
        self._folder = folder  # None when the files' location is unknown (hub model outside the cache)
        self.name = name

    @classmethod
    def load(cls, model: str | None = None) -> Embedder:
        """None -> the embedded default; an existing folder -> that folder; else a Hugging Face hub id."""
        if model is None:
            return cls._load_folder(DEFAULT_MODEL_DIR, DEFAULT_MODEL_NAME)
        path = Path(model).expanduser()
        if path.exists():
            return cls._load_folder(path.resolve(), path.resolve().name)
        if _looks_like_path(model):
            raise ModelUnavailable(
                f"No embedding model folder at {path}. Pass the path of {_MODEL_FILES_HINT}, "
                f"or leave the model unset to use the embedded default ({DEFAULT_MODEL_NAME})."
            )
        return cls._load_hub(model)

    @classmethod
    def _load_folder(cls, folder: Path, name: str) -> Embedder:
        if not folder.is_dir():
            raise ModelUnavailable(f"{folder} is not a folder. Pass the path of {_MODEL_FILES_HINT}.")
        try:
            # model2vec resolves an existing path locally and never asks the hub for it.
            static = StaticModel.from_pretrained(folder, force_download=False)
        except Exception as exc:  # safetensors, tokenizers and json each raise their own types
            raise ModelUnavailable(
                f"Could not load the embedding model in {folder} ({type(exc).__name__}: {exc}). "
                f"The folder must be {_MODEL_FILES_HINT}. If this is the embedded default, "
                "reinstall vault-sidecar or rebuild it with `python3 build.py model`."
            ) from exc
        return cls(static, name, folder)

    @classmethod
    def _load_hub(cls, model_id: str) -> Embedder:
        try:
            # force_download=False: a model already in the hub cache loads without the network.
            static = StaticModel.from_pretrained(model_id, force_download=False)
        except Exception as exc:  # the hub client raises many unrelated types (HTTP, offline, 404, OS)
            raise ModelUnavailable(
                f"Could not load embedding model {model_id!r}: there is no local folder by that name, "
                f"and fetching it as a Hugging Face hub id failed ({type(exc).__name__}: {exc}). "
                f"Download the model where the hub is reachable and pass its local folder path instead, "
                f"or leave the model unset to use the embedded default ({DEFAULT_MODEL_NAME})."
            ) from exc
        return cls(static, model_id, maybe_get_cached_model_path(model_id))

    @property
    def dim(self) -> int:
        return int(self._model.dim)

    @cached_property
    def fingerprint(self) -> str:
        """16 hex chars identifying the exact weights + tokenizer + config; stored with an index."""
        names = _fingerprint_files(self._folder) if self._folder is not None else []
        parts = _file_hashes(self._folder, names) if self._folder and names else _memory_parts(self._model)
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part)
        return digest.hexdigest()[:_FINGERPRINT_HEX_CHARS]

    def encode(self, texts: Sequence[str], batch_size: int = 1024) -> Vectors:
        """Shape (len(texts), dim), float32, rows of length 1 (a text with no known token gives zeros)."""
        if isinstance(texts, str):
            # A str is a Sequence[str] too; encoding it letter by letter is never what was meant.
            raise TypeError("encode() takes a sequence of texts, not a single string")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        # normalize=False: we normalise ourselves so the guarantee holds whatever a model's config says.
        raw = self._model.encode(
            list(texts), batch_size=batch_size, normalize=False, use_multiprocessing=False
        )
        return _unit_rows(np.asarray(raw, dtype=np.float32))


    def known_share(self, text: str) -> float:
        """Share of the text's word pieces the model has a vector for. `encode` drops unknown pieces, so
        a query mostly in a script the model never saw embeds to noise (or to nothing): say so."""
        encoding = self._model.tokenizer.encode(text, add_special_tokens=False)
        unk = self._model.unk_token_id
        pieces = [i for i, tok in zip(encoding.ids, encoding.tokens, strict=True) if tok.strip("▁ ")]
        if not pieces:
            return 0.0
        return sum(i != unk for i in pieces) / len(pieces)


def _looks_like_path(model: str) -> bool:
    # Hub ids are "name" or "owner/name"; anything else that is not an existing folder is a mistyped path.
    return Path(model).is_absolute() or model.startswith((".", "~")) or model.count("/") > 1 or "\\" in model


def _fingerprint_files(folder: Path) -> list[str]:
    return [name for name in _FINGERPRINT_FILES if (folder / name).is_file()]


def _file_hashes(folder: Path, names: list[str]) -> Iterator[bytes]:
    # Hash per file, then hash the "name, hash" lines: file boundaries and names count too.
    for name in names:
        with (folder / name).open("rb") as handle:
            file_hash = hashlib.file_digest(handle, "sha256").hexdigest()
        yield f"{name}\0{file_hash}\n".encode()


def _memory_parts(model: StaticModel) -> Iterator[bytes]:
    # Fallback when the files are unknown: the arrays and tokenizer that encode() actually uses.
    for array in (model.embedding, model.weights, model.token_mapping):
        if array is not None:
            yield f"{array.dtype}{array.shape}\n".encode()
            yield np.ascontiguousarray(array).tobytes()
    yield model.tokenizer.to_str().encode()


def _unit_rows(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # where=: all-zero rows (no known token) stay zero instead of becoming NaN.
    np.divide(vectors, norms, out=vectors, where=norms > 0)
    return vectors
