"""Orchestrates scan -> read -> redact -> parse -> chunk -> store -> embed. Thin on purpose:
each stage lives in its own module; this one decides what changed and in what order to write.

Crash safety: notes are committed in small batches and vectors in a later transaction, so a
crash leaves a usable index (lexical search works) and the next run completes it: unchanged
files are skipped by size+mtime and chunks without vectors are embedded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from sidecar.config import Settings
from sidecar.ingest.chunk import chunk_note
from sidecar.ingest.embed import Embedder
from sidecar.ingest.parse import parse_note
from sidecar.ingest.redact import redact
from sidecar.ingest.vault import ScanResult, Skip, UnreadableNote, Vault, VaultFile
from sidecar.notes import Chunk, Finding, ParsedNote
from sidecar.store.rows import FileState, PendingVector, Store, _name_lower
from sidecar.store.vectors import Matrix

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Progress:
    phase: str  # "scan", "notes", "vectors", "links", "done"
    done: int
    total: int


@dataclass
class IndexReport:
    full: bool
    scanned: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    renamed: int = 0
    deleted: int = 0
    embedded: int = 0
    skipped: list[Skip] = field(default_factory=list)
    vectors_missing: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process's CPU time for the run (all threads): what a busy machine does not inflate
    cancelled: bool = False
    changed_paths: list[str] = field(default_factory=list)
    touched_notes: frozenset[int] = frozenset()  # run_paths: ids of the notes it wrote, renamed or removed
    started: tuple[float, float] = field(default_factory=lambda: (time.perf_counter(), time.process_time()), repr=False)

    def stop_clock(self) -> None:
        """seconds and cpu_seconds since the report was made (at the start of its run)."""
        self.seconds = time.perf_counter() - self.started[0]
        self.cpu_seconds = time.process_time() - self.started[1]

    @property
    def structural(self) -> bool:
        """Notes appeared, went or moved: links elsewhere may resolve to other notes now."""
        return bool(self.added or self.renamed or self.deleted or self.skipped)

    def to_json(self) -> dict[str, object]:
        return {
            "full": self.full, "scanned": self.scanned, "added": self.added, "updated": self.updated,
            "unchanged": self.unchanged, "renamed": self.renamed, "deleted": self.deleted,
            "embedded": self.embedded, "vectors_missing": self.vectors_missing,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "seconds": round(self.seconds, 3), "cpu_seconds": round(self.cpu_seconds, 3), "cancelled": self.cancelled,
        }


@dataclass(frozen=True, slots=True)
class Prepared:
    file: VaultFile
    content_hash: str
    note: ParsedNote
    chunks: list[Chunk]
    findings: tuple[Finding, ...]
    lines: int
    chars: int


ProgressFn = Callable[[Progress], None]
MERGE_AFTER_NOTES = 200  # a run writing this many notes merges the keyword index (0.16 s at 50k sections, 0.5 s
# and its checkpoint at 180k). Smaller runs leave it to FTS5's automerge (19 segments after 150 one-note edits):
# merging in the minutely reconcile made an edit wait behind it, 3.6 s at 60,000 notes
RACY_SECONDS = 2.0  # coarsest file timestamp in use (FAT); see _maybe_changed
LINKS_PENDING = "links_pending"  # meta key: notes were written whose links are not resolved yet
Encoded = tuple[list[int], Matrix]


def content_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def prepare(vault: Vault, file: VaultFile, chunk_chars: int) -> Prepared:
    """Read and transform one note. Pure apart from the read; raises UnreadableNote."""
    decoded = vault.read_note(file.path)
    redacted = redact(decoded.text)  # before anything else sees the text: nothing downstream holds a secret
    try:
        note = parse_note(file.path, redacted.text)
        chunks = chunk_note(note, max_chars=chunk_chars)
    except RecursionError as exc:
        raise UnreadableNote("too deeply nested to parse") from exc
    if decoded.warnings:
        note = _with_warnings(note, decoded.warnings)
    seen = {f.line for f in redacted.findings}  # a line the raw text's redaction named already is not named twice
    findings = redacted.findings + tuple(f for f in note.findings if f.line not in seen)
    return Prepared(file, content_digest(decoded.text), note, chunks, findings,
                    decoded.text.count("\n") + 1, len(decoded.text))


def _with_warnings(note: ParsedNote, extra: tuple[str, ...]) -> ParsedNote:
    from dataclasses import replace  # noqa: PLC0415

    return replace(note, warnings=note.warnings + extra)


def _maybe_changed(state: FileState, file: VaultFile) -> bool:
    """Size or mtime moved, or the file is "racily clean" (as git calls it): modified so close to when
    it was read that a same-size rewrite within one timestamp tick (coarse clocks, FAT's 2 s) would
    look unchanged. Those are read again; an unchanged hash then only refreshes the row."""
    if (state.size, state.mtime_ns) != (file.size, file.mtime_ns):
        return True
    return file.mtime_ns >= (state.indexed_at - RACY_SECONDS) * 1e9


class Indexer:
    """The only writer. Call run() from one thread at a time."""

    def __init__(self, settings: Settings, store: Store, embedder: Embedder | None) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.vault = Vault.for_settings(settings)
        self.lock = threading.RLock()  # VaultIndex.index_paths holds it around run_paths and the snapshot's update
        self._rebuild = False
        self._resolved: dict[int, int] = {}  # note id -> paths_version its links were resolved at, this run

    # ---- entry points -------------------------------------------------------------------
    def run(self, full: bool = False, progress: ProgressFn | None = None,
            cancel: threading.Event | None = None) -> IndexReport:
        with self.lock:
            return self._run(full, progress or (lambda _p: None), cancel or threading.Event())

    def embed_missing(self, progress: ProgressFn | None = None, cancel: threading.Event | None = None) -> int:
        """Vectors for the chunks without one (those indexed while the model was loading; a model other
        than the stored vectors' re-embeds every chunk), until `cancel`; how many were embedded."""
        with self.lock:
            report = IndexReport(full=False)
            self._check_model()
            self._embed_missing(report, progress or (lambda _p: None), cancel or threading.Event())
            return report.embedded

    def run_paths(self, paths: Sequence[str]) -> IndexReport:
        """Index just these notes now, without a scan: a write made through the sidecar (writes.py) is
        searchable when it answers, and the watcher's run that follows finds nothing left to do.
        A path that no longer exists leaves the index; one that appeared with a vanished path's
        content is that note, renamed (same id, so links and history follow it). Paths must be notes
        the scan would list (Vault.event_paths): excluded or hidden ones are not checked here."""
        with self.lock:
            report = IndexReport(full=False)
            unique = list(dict.fromkeys(paths))
            states = self.store.file_states(unique)
            files: list[VaultFile] = []
            gone: dict[str, FileState] = {}
            for path in unique:
                try:
                    st = os.stat(self.vault.disk_path(path))
                except FileNotFoundError:
                    if path in states:
                        gone[path] = states[path]
                    continue
                files.append(VaultFile(path, st.st_size, st.st_mtime_ns))
            gone_by_hash = {state.content_hash: (path, state.note_id) for path, state in gone.items()}
            self._rebuild, self._resolved = False, {}
            self._embed(self._write_batch(files, states, gone_by_hash, report), report)  # resolves their links
            self._delete_gone(gone, gone_by_hash, report)
            with self.store.transaction() as tx:
                if report.structural:  # other notes' links may resolve anew
                    version = self.store.paths_version
                    self.store.resolve_links(skip_sources=frozenset(i for i, v in self._resolved.items()
                                                                    if v == version),
                                             names=frozenset(_name_lower(p) for p in
                                                             [*report.changed_paths, *(s.path for s in report.skipped)]))
                self.store.delete_meta(LINKS_PENDING)
                self.store.update_skipped(unique, report.skipped)
                tx.changed = report.structural
            report.touched_notes = frozenset({s.note_id for s in states.values()} |
                                             set(self.store.note_ids(unique)))
            report.stop_clock()
            return report

    def _run(self, full: bool, progress: ProgressFn, cancel: threading.Event) -> IndexReport:
        report = IndexReport(full=full)
        self.vault.reload_rules()
        progress(Progress("scan", 0, 0))
        scan = self.vault.scan()
        report.scanned = len(scan.notes)
        # A run that died between writing notes and resolving links left this mark: resolve them all.
        crashed_before_links = self.store.get_meta(LINKS_PENDING) is not None
        self._rebuild = full  # rewrite every note in place: readers see the old or the new copy, never a gap
        self._resolved = {}
        self._check_model()
        renamed_or_deleted = self._apply_notes(scan, report, progress, cancel) or crashed_before_links
        finished = not cancel.is_set()
        if finished:
            self._finish(scan, report, renamed_or_deleted, progress, cancel)  # counts what it left unembedded
        report.cancelled = cancel.is_set()
        if not report.cancelled and (full or len(report.changed_paths) >= MERGE_AFTER_NOTES):
            self.store.merge_fts_segments()
        if report.changed_paths or full:
            self.store.checkpoint()
        if self.embedder is None:
            report.vectors_missing = self.store.chunk_count()
        elif not finished:
            report.vectors_missing = self.store.count_missing_vectors()
        report.stop_clock()
        progress(Progress("done", report.scanned, report.scanned))
        return report

    # ---- steps --------------------------------------------------------------------------
    def _check_model(self) -> None:
        """A different model means every vector is re-made: never a mix of two models."""
        if self.embedder is None:
            return
        stored = self.store.get_meta("model_fingerprint")
        if stored == self.embedder.fingerprint:
            return
        if stored is not None:
            log.info("model changed (%s -> %s): re-embedding every chunk", stored, self.embedder.fingerprint)
        with self.store.transaction():
            self.store.vectors.drop()
            self.store.set_meta("model_fingerprint", self.embedder.fingerprint)
            self.store.set_meta("model_name", self.embedder.name)
            self.store.set_meta("model_dim", str(self.embedder.dim))

    def _apply_notes(self, scan: ScanResult, report: IndexReport, progress: ProgressFn,
                     cancel: threading.Event) -> bool:
        states = self.store.file_states()
        on_disk = {f.path for f in scan.notes}
        gone = {path: st for path, st in states.items() if path not in on_disk}
        todo = [f for f in scan.notes if self._rebuild or f.path not in states or _maybe_changed(states[f.path], f)]
        report.unchanged = len(scan.notes) - len(todo)
        gone_by_hash = {st.content_hash: (path, st.note_id) for path, st in gone.items()}
        structural = bool(gone)
        batch = max(1, self.settings.notes_per_transaction)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="encode") as encoder:
            in_flight: Future[Encoded] | None = None
            for start in range(0, len(todo), batch):
                if cancel.is_set():
                    break
                pending = self._write_batch(todo[start:start + batch], states, gone_by_hash, report)
                # Encoding (tokenizer in Rust, numpy) releases the GIL: it overlaps the next batch's parsing.
                self._store_encoded(in_flight, report)
                in_flight = encoder.submit(self._encode, pending) if pending and self.embedder else None
                progress(Progress("notes", min(start + batch, len(todo)), len(todo)))
            self._store_encoded(in_flight, report)
        structural |= report.added > 0
        self._delete_gone(gone, gone_by_hash, report)
        return structural

    def _write_batch(self, files: Sequence[VaultFile], states: dict[str, FileState],
                     gone_by_hash: dict[str, tuple[str, int]], report: IndexReport) -> list[PendingVector]:
        prepared: list[Prepared] = []
        for file in files:
            try:
                prepared.append(prepare(self.vault, file, self.settings.chunk_chars))
            except UnreadableNote as exc:
                report.skipped.append(Skip(file.path, str(exc)))
            except Exception as exc:  # a broken note is skipped with a reason; the run goes on
                log.exception("cannot index %s", file.path)
                report.skipped.append(Skip(file.path, f"internal error while indexing: {type(exc).__name__}: {exc}"))
        pending: list[PendingVector] = []
        with self.store.transaction() as tx:
            if prepared:
                self.store.set_meta(LINKS_PENDING, "1")  # cleared with the link resolution in _finish
            changes_before = len(report.changed_paths) + len(report.skipped)
            for item in prepared:
                pending += self._write_one(item, states, gone_by_hash, report)
            self._drop_now_skipped(report, states)
            # Committed with the notes they belong to: a run killed after this batch leaves its links
            # resolved (a full rebuild used to leave every rewritten note's links unresolved till the end).
            written = self.store.note_ids([item.file.path for item in prepared])
            self.store.resolve_links(written)
            self._resolved.update(dict.fromkeys(written, self.store.paths_version))
            tx.changed = len(report.changed_paths) + len(report.skipped) != changes_before
        return pending

    def _write_one(self, item: Prepared, states: dict[str, FileState],
                   gone_by_hash: dict[str, tuple[str, int]], report: IndexReport) -> list[PendingVector]:
        path = item.file.path
        state = states.get(path)
        if state is not None and state.content_hash == item.content_hash and not self._rebuild:
            self.store.touch(state.note_id, item.file)  # saved, but the text did not change
            report.unchanged += 1
            return []
        moved = gone_by_hash.pop(item.content_hash, None) if state is None and not self._rebuild else None
        if moved is not None:
            self.store.rename(moved[1], path, item.file)  # same note id: links to it and its history stay
            report.renamed += 1
            report.changed_paths += [moved[0], path]
            # The name can be the title (no H1 or title property), and the title is part of every
            # chunk's searchable context: rewrite what depends on it; unchanged chunks keep their vectors.
            return self.store.upsert_note(item.file, item.content_hash, item.note, item.chunks, item.findings,
                                          item.lines, item.chars, reuse_chunks=True)
        if state is None:
            report.added += 1
        else:
            report.updated += 1
        report.changed_paths.append(path)
        return self.store.upsert_note(item.file, item.content_hash, item.note, item.chunks, item.findings,
                                      item.lines, item.chars, reuse_chunks=not self._rebuild)

    def _drop_now_skipped(self, report: IndexReport, states: dict[str, FileState]) -> None:
        """A note that was indexed but is now unreadable (became binary, too big) leaves the index."""
        for skip in report.skipped:
            state = states.get(skip.path)
            if state is not None:
                self.store.delete_note(state.note_id)
                states.pop(skip.path, None)

    def _delete_gone(self, gone: dict[str, FileState], gone_by_hash: dict[str, tuple[str, int]],
                     report: IndexReport) -> None:
        still_gone = {note_id for _path, note_id in gone_by_hash.values()}
        if not still_gone:
            return
        with self.store.transaction():
            self.store.set_meta(LINKS_PENDING, "1")
            for path, state in gone.items():
                if state.note_id in still_gone:
                    self.store.delete_note(state.note_id)
                    report.deleted += 1
                    report.changed_paths.append(path)

    def _finish(self, scan: ScanResult, report: IndexReport, structural: bool, progress: ProgressFn,
                cancel: threading.Event) -> None:
        progress(Progress("links", 0, 1))
        with self.store.transaction() as tx:
            attachments_changed = self.store.replace_attachments(scan.attachments)
            self.store.replace_skipped([*scan.skipped, *report.skipped])
            report.skipped = [*scan.skipped, *report.skipped]
            if structural or report.full or attachments_changed:
                # Notes whose links a batch resolved against today's paths need not be resolved again.
                version = self.store.paths_version
                self.store.resolve_links(skip_sources=frozenset(i for i, v in self._resolved.items() if v == version))
            else:
                self.store.resolve_links(self.store.note_ids(report.changed_paths))
            self.store.set_meta("last_indexed_at", str(time.time()))
            self.store.delete_meta(LINKS_PENDING)
            # A run that found nothing new must not make every reader reload its snapshot.
            tx.changed = bool(structural or report.full or attachments_changed or report.changed_paths)
        self._embed_missing(report, progress, cancel)

    # ---- embedding ----------------------------------------------------------------------
    def _encode(self, pending: list[PendingVector]) -> Encoded:
        assert self.embedder is not None
        return [p.chunk_id for p in pending], self.embedder.encode([p.text for p in pending],
                                                                  batch_size=self.settings.embed_batch)

    def _store_encoded(self, future: Future[Encoded] | None, report: IndexReport) -> None:
        if future is None:
            return
        ids, matrix = future.result()
        self._write_vectors(ids, matrix, report)

    def _write_vectors(self, ids: list[int], matrix: Matrix, report: IndexReport) -> None:
        """One transaction per batch of vectors: a crash keeps the chunks, the next run embeds them."""
        with self.store.transaction():
            self.store.put_vectors(ids, matrix)
        report.embedded += len(ids)

    def _embed(self, pending: list[PendingVector], report: IndexReport) -> None:
        if self.embedder is None or not pending:
            return
        batch = self.settings.embed_batch
        for start in range(0, len(pending), batch):
            self._write_vectors(*self._encode(pending[start:start + batch]), report)

    def _embed_missing(self, report: IndexReport, progress: ProgressFn, cancel: threading.Event) -> None:
        if self.embedder is None:
            return
        missing = self.store.chunks_missing_vectors()
        step = self.settings.embed_batch * 4
        for start in range(0, len(missing), step):
            if cancel.is_set():
                report.vectors_missing = len(missing) - start
                return
            self._embed(missing[start:start + step], report)
            progress(Progress("vectors", min(start + step, len(missing)), len(missing)))

