"""The core every adapter (CLI, JSON-RPC, MCP) talks to: one object per vault index.

It owns the writer connection (through the Indexer), hands out reader connections per
thread, and loads the model once. Adapters never touch SQL or the indexer directly.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar import __version__
from sidecar.config import Settings
from sidecar.db import SCHEMA_VERSION, Backend, connect
from sidecar.embed import Embedder, ModelUnavailable
from sidecar.indexer import Indexer, IndexReport, ProgressFn
from sidecar.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelState:
    name: str | None
    fingerprint: str | None
    dim: int | None
    error: str | None

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "fingerprint": self.fingerprint, "dim": self.dim,
                "available": self.error is None, "error": self.error}


class VaultIndex:
    def __init__(self, settings: Settings, *, load_model: bool = True, vectors: bool = True) -> None:
        self.settings = settings
        _refuse_index_inside_vault(settings)
        settings.index_dir.mkdir(parents=True, exist_ok=True)
        self._vectors_wanted = vectors
        conn, self.backend = connect(settings.db_path, vectors=vectors)
        self.store = Store(conn, self.backend)
        self.embedder, self.model = _load_model(settings.model) if load_model else (None, ModelState(None, None, None, "model loading disabled"))
        self.indexer = Indexer(settings, self.store, self.embedder)
        self._local = threading.local()
        self.building = False

    # ---- connections --------------------------------------------------------------------
    def reader(self) -> Any:
        """A read connection for the calling thread (WAL: readers never wait for the writer)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn, _backend = connect(self.settings.db_path, vectors=self._vectors_wanted and bool(self.backend.vec_version))
            self._local.conn = conn
        return conn

    def close(self) -> None:
        self.store.conn.close()

    # ---- indexing -----------------------------------------------------------------------
    def index(self, full: bool = False, progress: ProgressFn | None = None,
              cancel: threading.Event | None = None) -> IndexReport:
        self.building = True
        try:
            return self.indexer.run(full=full, progress=progress, cancel=cancel)
        finally:
            self.building = False

    # ---- status -------------------------------------------------------------------------
    def status(self) -> dict[str, object]:
        conn = self.reader()
        count = lambda sql: int(conn.execute(sql).fetchone()[0])  # noqa: E731
        notes = count("SELECT count(*) FROM notes")
        chunks = count("SELECT count(*) FROM chunks")
        with_vectors = self.store.vectors.count() if self.embedder else 0
        skipped = [{"path": r[0], "reason": r[1]} for r in conn.execute("SELECT path, reason FROM skipped ORDER BY path")]
        last = conn.execute("SELECT value FROM meta WHERE key = 'last_indexed_at'").fetchone()
        vectors_available = self.embedder is not None and with_vectors > 0
        return {
            "version": __version__,
            "vault": str(self.settings.vault),
            "index_dir": str(self.settings.index_dir),
            "index_bytes": index_size(self.settings.db_path),
            "schema_version": SCHEMA_VERSION,
            "backend": self.backend.description,
            "vector_store": "sqlite-vec vec0 (int8)" if self.backend.vec_version else "BLOB table (int8)",
            "vector_search": "numpy (float32 matrix in memory)",
            "model": self.model.to_json(),
            "notes": notes,
            "chunks": chunks,
            "chunks_with_vectors": with_vectors,
            "chunks_without_vectors": chunks - with_vectors,
            "vectors_available": vectors_available,
            "skipped": skipped,
            "last_indexed_at": float(last[0]) if last else None,
            "building": self.building,
            "complete": last is not None and not self.building and chunks == with_vectors,
        }


def index_size(db_path: Path) -> int:
    return sum(p.stat().st_size for p in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")) if p.exists())


def _load_model(model: str | None) -> tuple[Embedder | None, ModelState]:
    started = time.perf_counter()
    try:
        embedder = Embedder.load(model)
    except ModelUnavailable as exc:
        log.warning("no embedding model, search is lexical only: %s", exc)
        return None, ModelState(model, None, None, str(exc))
    log.debug("model %s loaded in %.2f s", embedder.name, time.perf_counter() - started)
    return embedder, ModelState(embedder.name, embedder.fingerprint, embedder.dim, None)


def _refuse_index_inside_vault(settings: Settings) -> None:
    index_dir = settings.index_dir.resolve()
    if index_dir == settings.vault or settings.vault in index_dir.parents:
        raise ValueError(
            f"the index folder {index_dir} is inside the vault; the sidecar never writes into the vault. "
            "Choose an --index folder outside it."
        )
