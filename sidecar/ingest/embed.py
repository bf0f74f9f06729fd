"""Text -> vectors: the one embedding model the indexer and search share.

The default model ships inside the package: two static Model2Vec models side by
side, an English one and a multilingual one (models/minilm-plus-use-m3/README.md),
so indexing works offline in 16 languages, without torch and without a GPU. Other
models can be a local folder or, where the Hugging Face hub is reachable, a hub id.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import math
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # model2vec (and the hub client it brings) loads with a model, not with this module
    from model2vec import StaticModel

DEFAULT_MODEL_NAME = "minilm-plus-use-m3"
DEFAULT_MODEL_DIR: Path = Path(__file__).resolve().parents[1] / "models" / DEFAULT_MODEL_NAME

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
COMPOSITE_FILE = "parts.json"  # a folder of several models used side by side (see Embedder)

Vectors = npt.NDArray[np.float32]


class ModelUnavailable(Exception):
    """The requested embedding model cannot be loaded; the message says what was tried and what to do."""


@dataclass(frozen=True)
class _Part:
    model: StaticModel
    folder: Path | None  # None when the files' location is unknown (hub model outside the cache)
    weight: float = 1.0
    bands: bool = False  # the part whose cosine the confidence bands read (Embedder.band_slice)


class Embedder:
    """A loaded embedding model: `encode` turns texts into unit-length float32 rows.

    One Model2Vec model, or several side by side (a folder with COMPOSITE_FILE): each part's unit
    vector, scaled by the square root of its weight share and concatenated, so a cosine is the
    weighted mean of the parts' cosines. A query part that knows too few of the query's letters
    is left out of the query vector (a CJK question in an English model's vocabulary is noise)."""

    def __init__(self, parts: Sequence[_Part], name: str, folder: Path | None = None) -> None:
        # Use Embedder.load().
        self._parts = tuple(parts)
        self._folder = folder
        self.name = name
        self._queries: dict[str, Vectors] = {}  # recent query vectors, oldest first (encode_query)
        self._sections: dict[str, Vectors] = {}  # recent unsaved sections' vectors, oldest first (encode_recent)
        self._cache_lock = threading.Lock()  # guards both

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
        parts = _composite_parts(folder) if (folder / COMPOSITE_FILE).is_file() else [_Part(_static(folder), folder)]
        _trim_heap()
        return cls(parts, name, folder)

    @classmethod
    def _load_hub(cls, model_id: str) -> Embedder:
        from model2vec import StaticModel  # noqa: PLC0415
        from model2vec.persistence.hf import maybe_get_cached_model_path  # noqa: PLC0415

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
        return cls([_Part(static, maybe_get_cached_model_path(model_id))], model_id)

    @property
    def dim(self) -> int:
        return sum(int(p.model.dim) for p in self._parts)

    @property
    def part_slices(self) -> list[slice]:
        """Where each part's dimensions sit in a vector (one slice for a single model)."""
        out, start = [], 0
        for part in self._parts:
            out.append(slice(start, start + int(part.model.dim)))
            start += int(part.model.dim)
        return out

    @cached_property
    def band_slice(self) -> slice:
        """The dimensions the confidence bands read a cosine from: the part marked `"bands": true` in
        COMPOSITE_FILE, else the whole vector. The default pair marks its multilingual part: it reads
        every language as words, while the English part reads kana, Hangul, Cyrillic and Arabic a letter
        a piece (any two Korean texts about 0.97 apart) and Chinese not at all, so the pair's cosine
        sits on another scale in each script (docs/ranking.md)."""
        marked = [s for part, s in zip(self._parts, self.part_slices, strict=True) if part.bands]
        return marked[0] if marked else slice(0, self.dim)

    @cached_property
    def fingerprint(self) -> str:
        """16 hex chars identifying the exact weights + tokenizers + configs; stored with an index."""
        digest = hashlib.sha256()
        for part in self._parts:
            names = _fingerprint_files(part.folder) if part.folder is not None else []
            hashes = _file_hashes(part.folder, names) if part.folder and names else _memory_parts(part.model)
            for chunk in hashes:
                digest.update(chunk)
            if len(self._parts) > 1:
                digest.update(f"weight {part.weight}\n".encode())
        return digest.hexdigest()[:_FINGERPRINT_HEX_CHARS]

    def encode(self, texts: Sequence[str], batch_size: int = 1024) -> Vectors:
        """Shape (len(texts), dim), float32, rows of length 1 (a text with no known token gives zeros)."""
        return self._encode(texts, batch_size, query=False)

    def encode_query(self, text: str) -> Vectors:
        """One row for a query: parts that know too few of its letters are left out (zeros). Read-only:
        the last QUERY_CACHE queries' rows are kept, as a query is asked again (the search box as one
        types and deletes, a pane reopened, the same question on both ports) and costs ~0.15 ms to embed."""
        with self._cache_lock:
            cached = self._queries.get(text)
        if cached is not None:
            return cached
        row: Vectors = self._encode([text], 1, query=True)[0]
        row.setflags(write=False)
        with self._cache_lock:
            if len(self._queries) >= QUERY_CACHE:
                del self._queries[next(iter(self._queries))]
            self._queries[text] = row
        return row

    def encode_recent(self, texts: Sequence[str]) -> Vectors:
        """`encode`, keeping the last SECTION_CACHE texts' rows: an unsaved buffer is sent again at every
        pause in typing (the related pane), and only the section being written has changed."""
        if isinstance(texts, str):
            raise TypeError("encode_recent() takes a sequence of texts, not a single string")
        with self._cache_lock:
            known = {t: self._sections[t] for t in texts if t in self._sections}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            fresh = dict(zip(missing, self.encode(missing), strict=True))
            with self._cache_lock:
                for text, row in fresh.items():
                    if len(self._sections) >= SECTION_CACHE:
                        del self._sections[next(iter(self._sections))]
                    self._sections[text] = row
            known.update(fresh)
        return np.vstack([known[t] for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)

    def _encode(self, texts: Sequence[str], batch_size: int, query: bool) -> Vectors:
        if isinstance(texts, str):
            # A str is a Sequence[str] too; encoding it letter by letter is never what was meant.
            raise TypeError("encode() takes a sequence of texts, not a single string")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        total = sum(p.weight for p in self._parts)
        blocks = []
        for part in self._parts:
            if query and len(self._parts) > 1 and _known_share(part.model, texts[0]) < MIN_PART_KNOWN_SHARE:
                blocks.append(np.zeros((len(texts), int(part.model.dim)), dtype=np.float32))
                continue
            # normalize=False: we normalise ourselves so the guarantee holds whatever a model's config says.
            raw = part.model.encode(list(texts), batch_size=batch_size, normalize=False, use_multiprocessing=False)
            blocks.append(unit_rows(np.asarray(raw, dtype=np.float32)) * np.float32(math.sqrt(part.weight / total)))
        return unit_rows(np.hstack(blocks) if len(blocks) > 1 else blocks[0])

    def known_share(self, text: str) -> float:
        """Share of the text's letters in word pieces the model (its best-read part) has a vector for. `encode` drops
        unknown pieces, so a query mostly in a script the model never saw embeds to noise: say so."""
        return max(_known_share(p.model, text) for p in self._parts)


MIN_PART_KNOWN_SHARE = 0.5
QUERY_CACHE = 256  # query vectors kept (2 KB each with the default pair)
SECTION_CACHE = 1024  # unsaved sections' vectors kept (encode_recent): 2 MB with the default pair


@functools.lru_cache(maxsize=256)  # search asks for the query's share, then encode_query per part: tokenize once
def _known_share(model: StaticModel, text: str) -> float:
    """By letters, not pieces: a script the tokenizer never saw is one unknown piece a run (Khmer writes a
    clause without a space), so "Obsidian" and a "?" made a Khmer question's pieces half known."""
    encoding = model.tokenizer.encode(text, add_special_tokens=False)
    pieces = [(i, text[start:end]) for i, tok, (start, end) in
              zip(encoding.ids, encoding.tokens, encoding.offsets, strict=True) if tok.strip("▁ ")]
    if not pieces:
        return 0.0
    letters = [(i, sum(c.isalnum() for c in piece)) for i, piece in pieces]
    total = sum(n for _, n in letters)
    if not total:  # emoji and punctuation alone: by pieces
        return sum(i != model.unk_token_id for i, _ in pieces) / len(pieces)
    return sum(n for i, n in letters if i != model.unk_token_id) / total


def _static(folder: Path) -> StaticModel:
    from model2vec import StaticModel  # noqa: PLC0415

    try:
        # model2vec resolves an existing path locally and never asks the hub for it.
        return StaticModel.from_pretrained(folder, force_download=False)
    except Exception as exc:  # safetensors, tokenizers and json each raise their own types
        raise ModelUnavailable(
            f"Could not load the embedding model in {folder} ({type(exc).__name__}: {exc}). "
            f"The folder must be {_MODEL_FILES_HINT}. If this is the embedded default, "
            "reinstall vault-sidecar or rebuild it with `python3 build.py model`."
        ) from exc


def _trim_heap() -> None:
    """model2vec copies each tokenizer while loading (about 120 MB for the multilingual one's 128k
    pieces); glibc keeps the freed pages unless asked to hand them back (352 -> 234 MB measured)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # musl or another libc: nothing to trim this way
        return


def _composite_parts(folder: Path) -> list[_Part]:
    """COMPOSITE_FILE: {"parts": [{"folder": "../other-model", "weight": 1.0, "bands": true}, ...]},
    folders relative to it; `bands` (at most one part) marks the part the confidence bands read."""
    try:
        spec = json.loads((folder / COMPOSITE_FILE).read_text(encoding="utf-8"))
        entries = [((folder / str(e["folder"])).resolve(), float(e.get("weight", 1.0)), e.get("bands", False) is True)
                   for e in spec["parts"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelUnavailable(f"{folder / COMPOSITE_FILE} is not a valid list of model parts ({exc}).") from exc
    if sum(bands for _, _, bands in entries) > 1:
        raise ModelUnavailable(f"{folder / COMPOSITE_FILE} marks more than one part with \"bands\": mark one.")
    return [_Part(_static(path), path, weight, bands) for path, weight, bands in entries]


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


def unit_rows(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # where=: all-zero rows (no known token) stay zero instead of becoming NaN.
    np.divide(vectors, norms, out=vectors, where=norms > 0)
    return vectors
