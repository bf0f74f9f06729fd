"""What reports and writes ask of an open index. The core's `VaultIndex` is the one implementation;
naming the interface here keeps `report/` and `write/` below the core: they never import it, so
the core can build on them without an import cycle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from sidecar.ingest.embed import Embedder
from sidecar.ingest.vault import Vault
from sidecar.protocol_types import RelatedResponse, SearchResponse
from sidecar.retrieve.search import Ranking
from sidecar.retrieve.snapshot import Snapshot
from sidecar.store.db import Backend
from sidecar.store.indexer import IndexReport


class IndexView(Protocol):
    """One vault's index, open: its connections, snapshot and model, and the questions reports ask."""

    backend: Backend
    embedder: Embedder | None

    @property
    def vault(self) -> Vault: ...

    def reader(self) -> Any: ...

    def snapshot(self) -> Snapshot: ...

    def search(self, query: str, limit: int = ..., filters: dict[str, Any] | None = None, mode: str = ...,
               max_tokens: int | None = None, explain: bool = False, ranking: Ranking | None = None,
               typed: bool = False) -> SearchResponse: ...

    def related(self, path: str | None = None, text: str | None = None, cursor_heading: str | None = None,
                limit: int = ...) -> RelatedResponse: ...

    def read_note(self, path: str, heading: str | None = None) -> dict[str, Any]: ...

    def save_thresholds(self, low: float, high: float, source: str = "manual", chunks: int = 0) -> None: ...

    def index_paths(self, paths: Sequence[str]) -> IndexReport: ...
