"""The core every adapter (CLI, JSON-RPC, MCP) talks to: one object per vault index.

It owns the writer connection (through the Indexer), hands out reader connections per
thread, and loads the model once. Adapters never touch SQL or the indexer directly.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import logging
import os
import threading
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar import __version__
from sidecar.config import HOLD_MODEL_ENV, Settings, default_index_dir, env_text
from sidecar.errors import IndexNotReady, InvalidParams, NotFound
from sidecar.ingest import redact
from sidecar.ingest.embed import DEFAULT_MODEL_NAME, Embedder, ModelUnavailable
from sidecar.ingest.redact import rules_fingerprint
from sidecar.private import private_dir
from sidecar.protocol_types import (
    HEALTH_PAGE_LIMIT_DEFAULT,
    RELATED_LIMIT_DEFAULT,
    SEARCH_LIMIT_DEFAULT,
    BandThresholds,
    HealthPageResponse,
    HealthResponse,
    HealthSummaryResponse,
    IndexStatus,
    ModelInfo,
    NoteLinksResponse,
    RelatedResponse,
    SearchResponse,
)
from sidecar.rank.fuse import BAND_RULE, DEFAULT_HIGH, DEFAULT_LOW, Thresholds
from sidecar.report.calibrate import auto_calibrate, needs_auto_calibration
from sidecar.retrieve import note_reads
from sidecar.retrieve.related import Related
from sidecar.retrieve.search import Filters, Ranking, Searcher
from sidecar.retrieve.snapshot import NoteChanges, Snapshot, SnapshotCache, current_generation
from sidecar.store.db import SCHEMA_VERSION, connect
from sidecar.store.indexer import LINKS_PENDING, Indexer, IndexReport, ProgressFn
from sidecar.store.reads import (
    has_notes,
    holds_path,
    meta_value,
    meta_values,
    note_exists,
    note_names,
    read_transaction,
    row_counts,
    skipped_files,
)
from sidecar.store.rows import Store
from sidecar.store.vectors import VectorTable

if TYPE_CHECKING:
    from sidecar.ingest.vault import Vault
    from sidecar.write.writes import NoteWriter

log = logging.getLogger(__name__)

REDACTION_RULES = "redaction_rules"  # meta key: fingerprint of the rules the stored text went through


@dataclass(frozen=True, slots=True)
class ModelState:
    name: str | None
    fingerprint: str | None
    dim: int | None
    error: str | None
    loading: bool = False  # `serve` answers before the model is in (VaultIndex.load_model)

    def to_json(self) -> ModelInfo:
        return {"name": self.name, "fingerprint": self.fingerprint, "dim": self.dim,
                "available": self.error is None and not self.loading, "error": self.error, "loading": self.loading}


LoadedModel = tuple[Embedder | None, ModelState]  # what reading the model's files gives vectors_in


class VaultIndex:
    def __init__(self, settings: Settings, *, load_model: bool = True, vectors: bool = True,
                 model_later: bool = False) -> None:
        """`model_later`: open without the model; `load_model()` brings it in (serve answers meanwhile)."""
        self.settings = settings
        refuse_unusable_index_folder(settings)
        _refuse_a_folder_of_other_files(settings)
        private_dir(settings.index_dir)  # the index holds every note's text: 0700, whatever the umask
        self._vectors_wanted = vectors
        conn, self.backend = connect(settings.db_path, prefer=settings.sqlite_driver, vectors=vectors)
        self.store = Store(conn, self.backend)
        if model_later:
            self.embedder, self.model = None, ModelState(settings.model or DEFAULT_MODEL_NAME, None, None, None, loading=True)
        elif load_model:
            self.embedder, self.model = _load_model(settings.model)
        else:
            self.embedder, self.model = None, ModelState(None, None, None, "model loading disabled")
        self.indexer = Indexer(settings, self.store, self.embedder)
        self._local = threading.local()
        self._snapshots = SnapshotCache()
        self.ranking = Ranking()
        self._building = False  # an index run is queued or on (index_queued, index)
        self._built = False
        self.writes: NoteWriter | None = _note_writer(self) if settings.allow_writes else None

    @property
    def building(self) -> bool:
        return self._building

    def index_queued(self) -> None:
        """A run is queued on the writer: status says "building" from now, before its first progress
        event; index() says it until the run ends."""
        self._building = True

    @property
    def vault(self) -> Vault:
        """The vault, confined (Vault.confine): what reports and writes read notes through."""
        return self.indexer.vault

    # ---- connections --------------------------------------------------------------------
    def reader(self) -> Any:
        """A read connection for the calling thread (WAL: readers never wait for the writer)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn, _backend = connect(self.settings.db_path, prefer=self.backend.driver,
                                     vectors=self._vectors_wanted and bool(self.backend.vec_version))
            self._local.conn = conn
        return conn

    def close(self) -> None:
        if self.writes is not None:
            self.writes.history.close()
        self.store.conn.close()

    def health(self, sections: list[str] | None = None) -> HealthResponse:
        from sidecar.report.health_pages import build_health  # noqa: PLC0415  (a report, not part of every query path)

        return build_health(self, sections)

    def health_summary(self) -> HealthSummaryResponse:
        from sidecar.report.health_pages import health_summary  # noqa: PLC0415

        return health_summary(self)

    def health_page(self, section: str, limit: int = HEALTH_PAGE_LIMIT_DEFAULT, cursor: str | None = None) -> HealthPageResponse:
        from sidecar.report.health_pages import health_page  # noqa: PLC0415

        return health_page(self, section, limit, cursor)

    def overview(self, snap: Snapshot | None = None) -> dict[str, Any]:
        """The vault's shape for an agent new to it (overview.py), from one snapshot of the index."""
        from sidecar.report.overview import vault_overview  # noqa: PLC0415  (a report, not part of every query path)

        return vault_overview(self.reader(), snap or self.snapshot())

    def load_model(self) -> None:
        """The half of opening that `model_later` left out: `read_model`, then `vectors_in`."""
        if self.model.loading:
            self.vectors_in(self.read_model())

    def read_model(self) -> LoadedModel:
        """The model's files, on any thread: no index is touched, so the writer indexes meanwhile (edits
        are searchable by their words at once; their vectors come with `vectors_in`)."""
        # The lexical snapshot first (the first searches, and those after the start-up scan moved the
        # generation, wait for it): built beside the model's pure-Python load, its reads wait for the GIL.
        self.snapshot()
        return self.read_model_files()

    def read_model_files(self) -> LoadedModel:
        """`read_model` without the snapshot: reads no index, so a daemon thread may run it and a stop
        need not wait for it (commands/server.py)."""
        _hold_for_tests()
        try:
            return _load_model(self.settings.model)
        except Exception as exc:  # beyond a missing model (ModelUnavailable): stop saying "loading"
            self.model = ModelState(self.model.name, None, None, f"the embedding model failed to load: {exc}")
            raise

    def vectors_in(self, loaded: LoadedModel, progress: ProgressFn | None = None,
                   cancel: threading.Event | None = None) -> None:
        """Under the writer's lock: vectors for what was indexed while the model loaded (`cancel` stops
        that; the next run embeds the rest), then the snapshot with vectors, built aside and swapped in
        before the model (a search that sees the model finds its vectors loaded), then the band
        thresholds if the vault has none for this model yet. A failure on the way is the model's error
        for this session: search stays lexical and says why."""
        embedder, model = loaded
        with self.indexer.lock:
            if embedder is not None:
                self._building = True  # status says a run is on while every section gets its vector
                self.indexer.embedder = embedder
                try:
                    self.indexer.embed_missing(progress, cancel)
                    with_vectors = self._snapshots.reloaded(self.reader(), self.backend, embedder.dim)
                except Exception as exc:
                    self.indexer.embedder = None
                    self.model = ModelState(model.name, None, None, f"the embedding model's vectors failed to load: {exc}")
                    raise
                finally:
                    self._building = False
                self._snapshots = with_vectors
            self.embedder = self.indexer.embedder = embedder
            self.model = model
            if needs_auto_calibration(self):  # an index made without the model had no vectors to measure
                auto_calibrate(self)

    # ---- retrieval ----------------------------------------------------------------------
    def generation(self) -> str:
        """The index's generation now: it moves with every committed change (snapshot.py)."""
        return current_generation(self.reader())

    def snapshot(self) -> Snapshot:
        return self._snapshots.get(self.reader(), self.backend, self.embedder.dim if self.embedder else None)

    def thresholds(self, snap: Snapshot | None = None) -> Thresholds:
        """The stored band thresholds (saving them moves the generation, so the snapshot caches them)."""
        snap = snap or self.snapshot()
        if snap.thresholds is None:
            t = self._stored_bands()
            snap.thresholds = (t.high, t.low)
        return Thresholds(*snap.thresholds)

    def _stored_bands(self, rows: dict[str, str] | None = None) -> Thresholds:
        rows = self._band_meta() if rows is None else rows
        return Thresholds(float(rows.get("band_high", DEFAULT_HIGH)), float(rows.get("band_low", DEFAULT_LOW)))

    def _band_meta(self) -> dict[str, str]:
        """What is stored about the thresholds, if measured for this band rule: thresholds on another rule's
        scale (an index from before an upgrade, manual ones too) are not used; the defaults stand until
        the next index run or `sidecar calibrate`."""
        rows = meta_values(self.reader(), ("band_high", "band_low", "band_source", "band_measured_with"))
        return rows if rows.get("band_measured_with", "").endswith(BAND_RULE) else {}

    def save_thresholds(self, low: float, high: float, source: str = "manual", chunks: int = 0) -> None:
        measured_with = f"{self.embedder.fingerprint} {BAND_RULE}" if self.embedder else BAND_RULE
        with self.indexer.lock, self.store.transaction():  # the single writer
            for key, value in (("band_low", low), ("band_high", high), ("band_source", source), ("band_chunks", chunks),
                               ("band_measured_with", measured_with)):
                self.store.set_meta(key, str(value))

    def index_not_ready(self) -> IndexNotReady | None:
        """The one answer to "is the index ready?": a finished run, or a cut-short one that stored notes,
        serves (an empty vault's index too); otherwise the error saying what to do (retryable while a
        run is on). Once ready, an index stays ready: SQLite is asked only until then."""
        if self._built:
            return None
        conn = self.reader()
        self._built = meta_value(conn, "last_indexed_at") is not None or has_notes(conn)
        if self._built:
            return None
        if self.building:
            return IndexNotReady("the index is being built and has no notes yet: try again in a minute",
                                 {"retryable": True})
        return index_not_built(self.settings)

    def require_index(self, answer_while_building: bool = False) -> None:
        """An index not ready is an error: for agents (MCP, `sidecar context`) also while it is being built.
        `answer_while_building` is the plugin's: searching an index that was never built would look like
        "no answer", so say what to do; while a run builds it, answer (empty, index_building: true)."""
        problem = self.index_not_ready()
        if problem is not None and not (answer_while_building and self.building):
            raise problem

    def thresholds_info(self) -> BandThresholds:
        rows = self._band_meta()  # straight from meta: status must not load the vectors to say this
        t, source = self._stored_bands(rows), rows.get("band_source")
        return {"high": t.high, "low": t.low, "source": "auto" if source == "auto" else "manual" if source == "manual" else "default"}

    def search(self, query: str, limit: int = SEARCH_LIMIT_DEFAULT, filters: dict[str, Any] | None = None,
               mode: str = "hybrid",
               max_tokens: int | None = None, explain: bool = False, ranking: Ranking | None = None,
               typed: bool = False) -> SearchResponse:
        """`typed`: search-as-you-type (speed shortcuts on); a submitted question keeps every word."""
        self.require_index(answer_while_building=True)
        loading, embedder = self.model.loading, self.embedder  # in this order, before the snapshot (load_model)
        with self._one_read() as conn:
            snap = self.snapshot()
            searcher = Searcher(conn, snap, embedder, self.thresholds(snap), ranking or self.ranking, loading,
                                hidden=self.vault.exclusion_reason)
            result = searcher.search(query, limit, Filters.from_json(filters), mode, max_tokens, explain, typed)
        result["index_building"] = self.building
        return result

    def related(self, path: str | None = None, text: str | None = None, cursor_heading: str | None = None,
                limit: int = RELATED_LIMIT_DEFAULT) -> RelatedResponse:
        self.require_index(answer_while_building=True)
        if path is not None:  # "./Home.md" as note.links reads it; a note not saved yet keeps the path it has
            confined = self.vault.confine(path)
            if confined is None and text is None:  # gone from disk, the index not caught up: as note.links answers
                raise NotFound(f"no note at {path!r}")
            path = confined or path
        if text is not None and len(text) > self.settings.max_file_bytes // 4 and \
                len(text.encode("utf-8", "surrogatepass")) > self.settings.max_file_bytes:
            raise InvalidParams(f"the text is over max_file_bytes ({self.settings.max_file_bytes:,} bytes): "
                                "a note that large is not indexed, so nothing is related to it",
                                {"field": "text", "limit": self.settings.max_file_bytes})
        loading, embedder = self.model.loading, self.embedder  # in this order, before the snapshot (load_model)
        with self._one_read() as conn:
            snap = self.snapshot()
            finder = Related(conn, snap, embedder)
            result = finder.related(path, text, cursor_heading, limit)
        # a note excluded since the last index run is never served (Searcher.hidden does this for search)
        result["results"] = [r for r in result["results"] if not self.vault.exclusion_reason(r["path"])]
        result["index_building"] = self.building
        result["vectors_loading"] = loading
        return result

    def _one_read(self) -> contextlib.AbstractContextManager[Any]:
        """One read transaction for a whole answer: the vectors (snapshot), the candidates and the rows
        they point at all come from one state of the index, even while the writer commits (a search
        during a rebuild found chunk ids the next statement no longer saw)."""
        return read_transaction(self.reader())

    def note_links(self, path: str) -> NoteLinksResponse:
        return note_reads.note_links(self.reader(), self.vault, path)

    def read_note(self, path: str, heading: str | None = None) -> dict[str, Any]:
        return note_reads.read_note(self.reader(), self.vault, path, heading)

    def list_notes(self, folder: str | None = None, tag: str | None = None, note_type: str | None = None,
                   modified_since: float | None = None, limit: int = 100, offset: int = 0) -> dict[str, Any]:
        return note_reads.list_notes(self.reader(), folder, tag, note_type, modified_since, limit, offset,
                                     hidden=self.vault.exclusion_reason)

    def resolve_note(self, ref: str) -> str:
        """A vault path, a file name or a title/alias -> the indexed note's path, else NotFound."""
        conn = self.reader()
        vault = self.vault
        for candidate in (ref, f"{ref}.md"):
            path = vault.confine(candidate)
            if path and note_exists(conn, path):
                return path
        if "\x00" in ref or len(ref) > 1024:
            raise NotFound("no such note")
        wanted = ref.strip().lower().removesuffix(".md")
        rows = note_names(conn)
        spelled = "/".join(p for p in unicodedata.normalize("NFC", wanted).split("/") if p not in ("", "."))
        same_but_case = [path for path, *_ in rows if path.lower().removesuffix(".md") == spelled]
        if len(same_but_case) == 1:  # "cooking/weeknight dal": folders too, as on macOS and Windows
            return same_but_case[0]
        named = [path for path, title, aliases, name in rows
                 if wanted in (title.lower(), name) or wanted in (a.lower() for a in aliases)]
        if len(named) > 1:  # two notes titled "Segurança e privacidade": the first was read, the other unsaid
            raise InvalidParams(f"{len(named)} notes are named {ref!r}: {', '.join(named[:10])}; give one's path",
                                {"field": "note", "candidates": named[:50]})
        if named:
            return named[0]
        names = [str(r[1]) for r in rows]
        close = difflib.get_close_matches(ref, names, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise NotFound(f"no such note: {ref!r}{hint}", {"suggestions": close})

    # ---- indexing -----------------------------------------------------------------------
    def event_paths(self, changed: set[str]) -> list[str] | None:
        """The notes a batch of watcher paths names, or None when only a scan can tell (Vault.event_paths)."""
        return self.vault.event_paths(changed, functools.partial(holds_path, self.store.conn))

    def index_paths(self, paths: Sequence[str]) -> IndexReport:
        """Index just these notes (a watcher's events, a write through the sidecar), no scan; the
        search snapshot follows what was written instead of reloading, so the edit is searchable at once."""
        with self.indexer.lock:  # before reading the model: vectors_in() swaps it under this lock
            dim = self.embedder.dim if self.embedder else None
            with self._snapshots.following(self.store.conn, self.backend, dim) as reported:
                before = current_generation(self.store.conn)
                report = self.indexer.run_paths(paths)
                reported.append(NoteChanges(before, report.touched_notes, report.structural))
        return report

    def index(self, full: bool = False, progress: ProgressFn | None = None,
              cancel: threading.Event | None = None) -> IndexReport:
        self._building = True
        try:
            rules = redaction_rules()
            stored = self.store.get_meta(REDACTION_RULES)
            rules_changed = stored != rules and (stored is not None or self.store.has_notes())  # (an index from before the mark)
            if rules_changed:
                log.info("redaction rules changed: every note is redacted again and the old text purged")
            with self.store.secure_deletes() if rules_changed else contextlib.nullcontext():
                report = self.indexer.run(full=full or rules_changed, progress=progress, cancel=cancel)
                if not report.cancelled and stored != rules:
                    self._settle_rules(rules, purge=rules_changed)
            if not report.cancelled and needs_auto_calibration(self):
                auto_calibrate(self)
            return report
        finally:
            self._building = False

    def _settle_rules(self, rules: str, purge: bool) -> None:
        """After every note went through the new rules: drop what the old ones let through from the
        index files too (Store.purge_deleted_text); the WAL keeps old page images, the TRUNCATE
        checkpoint empties it. Only when the rules change, so ordinary writes pay nothing; the mark is
        stored last, so a crash in between purges again."""
        with self.indexer.lock:
            if purge:
                self.store.purge_deleted_text()
            with self.store.transaction():
                self.store.set_meta(REDACTION_RULES, rules)
            self.store.checkpoint()

    # ---- status -------------------------------------------------------------------------
    def status(self) -> IndexStatus:
        conn = self.reader()
        notes, chunks = row_counts(conn)
        # The reader's own view: the writer's connection may be mid-transaction in another thread.
        with_vectors = VectorTable(conn, self.backend).count() if self.embedder or self.model.loading else 0
        skipped = skipped_files(conn)
        last = meta_value(conn, "last_indexed_at")
        vectors_available = self.embedder is not None and with_vectors > 0
        # A run stopped before its last link pass (kill -9) leaves links to notes it added unresolved.
        links_pending = meta_value(conn, LINKS_PENDING) is not None
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
            "last_indexed_at": float(last) if last else None,
            "building": self.building,
            "bands": self.thresholds_info(),
            "complete": last is not None and not self.building and chunks == with_vectors and not links_pending
                        and not self.model.loading,
        }


def _note_writer(core: VaultIndex) -> NoteWriter:
    from sidecar.store.history import History  # noqa: PLC0415  (writes are off by default)
    from sidecar.write.files import SUPPORTED  # noqa: PLC0415
    from sidecar.write.writes import NoteWriter  # noqa: PLC0415

    if not SUPPORTED:
        raise ValueError("--allow-writes needs file operations relative to a folder (POSIX: Linux, macOS); "
                         "on this system the sidecar stays read-only")
    settings = core.settings
    history = History(settings.index_dir / "history.sqlite3", settings.history_max_bytes, settings.history_days)
    return NoteWriter(core, history)


def redaction_rules() -> str:
    """The fingerprint of the redaction in force: its rules and redact.py's source (read here, once)."""
    return rules_fingerprint(_redact_source())


@functools.cache
def _redact_source() -> bytes:
    try:
        return Path(redact.__file__).read_bytes()
    except OSError:  # no source on disk (a frozen build): the rules alone still say a lot
        return b""


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


def _hold_for_tests() -> None:
    """SIDECAR_TEST_HOLD_MODEL=PATH: the model waits until PATH exists (at most a minute), so a test
    sees the loading state for as long as it needs, with no timing involved (tests/test_startup.py)."""
    hold = env_text(HOLD_MODEL_ENV)
    deadline = time.monotonic() + 60
    while hold and not os.path.exists(hold) and time.monotonic() < deadline:
        time.sleep(0.01)


def index_not_built(settings: Settings) -> IndexNotReady:
    where = "" if settings.index_dir == default_index_dir(settings.vault) else f" --index {settings.index_dir}"
    return IndexNotReady(f"index not built yet: run `sidecar index --vault {settings.vault}{where}` or `sidecar "
                         "serve`, then try again", {"retryable": False})


def _refuse_a_folder_of_other_files(settings: Settings) -> None:
    """The index folder is made private (0700): only a new or empty folder, or one that already holds
    an index, is taken for it, never a folder of the user's own (`--index ~`)."""
    folder = settings.index_dir
    if folder.is_dir() and not settings.db_path.exists() and any(folder.iterdir()):
        raise ValueError(f"the index folder {folder} holds other files and no index: the index keeps its own "
                         "folder, readable by you alone. Choose a new or empty --index folder.")


def refuse_unusable_index_folder(settings: Settings) -> None:
    """The index folder is outside the vault and is a folder (or not there yet); checked by the commands
    too before they say "not built yet", which would suggest an `index` run refused here."""
    index_dir = settings.index_dir.resolve()
    if index_dir == settings.vault or settings.vault in index_dir.parents:
        raise ValueError(
            f"the index folder {index_dir} is inside the vault; the index never goes into the vault. "
            "Choose an --index folder outside it."
        )
    if settings.index_dir.exists() and not settings.index_dir.is_dir():
        raise ValueError(f"the index folder {settings.index_dir} is a file, not a folder: the index keeps a "
                         "folder of its own. Choose a new or empty --index folder.")
