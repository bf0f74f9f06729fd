"""The health report kept between calls and advanced by what changed, so a live index's report
costs what the change costs, not what the vault costs.

Per index (one IndexView), the last report's findings and the data they came from are kept. The
next call at a new generation diffs the notes table (id, path, hash, index time) against the last
one and reloads only the changed notes' rows: notes, links, tags, text sizes, their note vectors
and the near-duplicate candidates those vectors take part in. The link graph follows the changed
notes' links. A section whose inputs the change left alone keeps its items (the graph's sections
when no note-to-note link changed, the tag sections when no tag did, near-duplicates when no
candidate pair's note changed); broken anchors are kept per link and target note, stale files per
path. What is left (classification of unresolved links, the per-note content sections) is derived
again from the kept rows. Suggestions are not part of the findings: a page computes them for its items.

Measured at 16,894 notes in docs/benchmarks.md (health after one edit).
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
import weakref
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from sidecar.report import health
from sidecar.report.health import (
    BLOCK_ROWS,
    DUPLICATE_COSINE,
    LOADED,
    Context,
    Findings,
    Item,
    LinkRow,
    NoteRow,
    NoteVectors,
    Unresolved,
    find_all,
    load_body_chars,
    load_links,
    load_notes,
    load_tags,
    note_target,
    note_vectors,
    scan_disk,
    vector_rows_per_note,
)
from sidecar.retrieve.snapshot import Snapshot, current_generation
from sidecar.store.health_reads import link_resolutions, link_sources, note_signatures
from sidecar.store.reads import attachment_paths, read_transaction

if TYPE_CHECKING:
    from sidecar.ingest.vault import Vault
    from sidecar.retrieve.view import IndexView

log = logging.getLogger(__name__)

DISK_RESCAN_SECONDS = 30.0  # the vault walk (for stale files) is redone (in a thread) at most this often; changed notes at once
FULL_RELOAD_SHARE = 0.2  # past this share of changed notes, reading everything again is as cheap
Signature = str  # path, content hash, indexed at, size, mtime (NUL between)
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Kept:
    """One generation's findings and what the next one is advanced from."""

    findings: Findings
    signatures: dict[int, Signature]
    links_by_source: dict[int, list[LinkRow]]
    resolution: dict[int, tuple[int | None, bool]]  # link id -> (target note, ambiguous)
    snapshot: Snapshot
    vector_rows: Ints  # live vector rows per note id (bincount over the snapshot)
    disk_scanned_at: float  # when the kept walk of the vault started
    walk: DiskWalk | None  # the next walk, running
    embedder: object  # the model the vectors came from: when it arrives (serve loads it late), all is found anew
    anchors: AnchorMemo
    unresolved: UnresolvedMemo
    surroundings: tuple[int, int] = (0, 0)  # what the findings read besides the notes (_surroundings)


AnchorMemo = dict[tuple[int, int], tuple[LinkRow, NoteRow, Item | None]]  # (id(link), id(target)) -> its item
# note id -> its kept link list, its unresolved links sorted, the broken ones' items and targets; only
# notes with any unresolved link
UnresolvedMemo = dict[int, tuple[list[LinkRow], Unresolved, list[Item], set[str]]]


@dataclass(frozen=True)
class Delta:
    """What one generation changed, as far as the sections' inputs go."""

    changed: set[int]  # notes added, changed, moved or gone
    reread: set[int]  # notes whose links were read again (changed, or linking to a name that came or went)
    structural: bool  # some path came, went or moved
    edges_changed: bool  # some note-to-note link came or went
    moved: set[int]  # notes whose note vector was computed again
    disk_paths: set[str] | None  # paths whose file on disk may differ; None: the files left out changed too
    names_same: bool  # no path came, went or moved, and no changed note's file name, title or alias changed
    templates_same: bool  # no changed note became a template or stopped being one (its links and tags count anew)


@dataclass
class DiskWalk:
    """A walk of the vault folder in a thread (on a big vault it costs 150-300 ms, more than the rest
    of an update), and the paths looked at anew since it started: it may have seen them before."""

    started: float
    touched: set[str] = field(default_factory=set)
    done: threading.Event = field(default_factory=threading.Event)
    result: health.DiskFiles | None = None  # None when done: the walk failed (logged), the next one retries

    @classmethod
    def start(cls, vault: Vault) -> DiskWalk:
        walk = cls(time.monotonic())

        def run() -> None:
            try:
                walk.result = scan_disk(vault)
            except OSError:
                log.exception("health: the walk of the vault folder failed")
            finally:
                walk.done.set()

        threading.Thread(target=run, name="health-vault-walk", daemon=True).start()
        return walk


class HealthCache:
    def __init__(self) -> None:
        self._kept: Kept | None = None
        self._lock = threading.Lock()  # one report at a time advances the kept state; the others reuse it

    def current(self, index: IndexView) -> Findings:
        conn = index.reader()
        if not conn.in_transaction:
            # Outside the read transaction: waits for a writer's run in progress and takes the snapshot it
            # followed to. Inside, a run's first commit would be seen and its snapshot loaded for nothing.
            index.snapshot()
        with self._lock:
            kept = self._kept
            if kept is not None and kept.findings.generation == current_generation(conn) and \
                    kept.embedder is index.embedder:
                return kept.findings
            with read_transaction(conn):  # one state of the index for the snapshot and every row read
                collecting = gc.isenabled()
                gc.disable()  # the kept rows are ~10^5 objects: a full collection mid-way cost 100+ ms a report
                try:
                    self._kept = _advance(index, kept)
                finally:
                    if collecting:
                        gc.enable()
            return self._kept.findings

    def keep_loaded(self, found: Findings, values: dict[str, Any]) -> None:
        """Adds to `found` what a page's suggestions loaded (the name matcher, the model parts), for the
        next page of its generation. Under the lock: an update reads the kept `loaded` while it advances,
        and of two pages suggesting at once the first one's value stays (updates compare them by identity)."""
        with self._lock:
            found.loaded.update((k, v) for k, v in values.items() if k in LOADED and k not in found.loaded)


_CACHES: weakref.WeakKeyDictionary[IndexView, HealthCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def current_findings(index: IndexView) -> Findings:
    """The findings for the index's current generation: kept, advanced, or (first call) found from scratch."""
    return _cache(index).current(index)


def keep_loaded(index: IndexView, found: Findings, values: dict[str, Any]) -> None:
    """HealthCache.keep_loaded on the index's cache."""
    _cache(index).keep_loaded(found, values)


def _cache(index: IndexView) -> HealthCache:
    with _CACHES_LOCK:
        return _CACHES.setdefault(index, HealthCache())


def _advance(index: IndexView, kept: Kept | None) -> Kept:
    started = time.perf_counter()
    snap = index.snapshot()  # inside the read transaction: the snapshot of exactly this generation
    snapped = time.perf_counter()
    conn = index.reader()
    signatures = note_signatures(conn)
    changed = _changed(kept.signatures, signatures) if kept is not None else set()
    if kept is None or len(changed) > FULL_RELOAD_SHARE * max(len(signatures), 1) or \
            kept.embedder is not index.embedder or kept.snapshot.matrix.shape[1:] != snap.matrix.shape[1:] or \
            kept.surroundings != _surroundings(index):
        return _from_scratch(index, snap, signatures, started)
    read = time.perf_counter()
    loaded, following, delta = _advanced(index, kept, snap, signatures, changed)
    advanced = time.perf_counter()
    ctx = Context(index, loaded=loaded)
    # The files left out are the same (the walk's excluded ones and the skipped ones): else stale
    # files and unresolved links are found anew.
    same_left_out = delta.disk_paths is not None and ctx.skipped == kept.findings.loaded.get("skipped")
    known, anchors = _kept_sections(ctx, kept, delta, same_left_out)
    known["unresolved_links"], unresolved = _followed_unresolved(ctx, following[0], kept.unresolved,
                                                                 delta.reread if same_left_out else None)
    found = find_all(ctx, snap.generation, started, known)
    log.debug("health: %d notes changed (%d vectors moved), findings in %.0f ms: snapshot %.0f ms, "
              "signatures %.0f ms, rows %.0f ms, sections %.0f ms", len(changed), len(delta.moved), found.took_ms,
              (snapped - started) * 1000, (read - snapped) * 1000, (advanced - read) * 1000, (time.perf_counter() - advanced) * 1000)
    return Kept(found, signatures, *following, index.embedder, anchors, unresolved, kept.surroundings)


def _from_scratch(index: IndexView, snap: Snapshot, signatures: dict[int, Signature], started: float) -> Kept:
    ctx = Context(index)
    links_by_source = _by_source(ctx.links)
    known: dict[str, list[Item]] = {}
    known["broken_anchors"], anchors = _followed_anchors(ctx, {})
    known["unresolved_links"], unresolved = _followed_unresolved(ctx, links_by_source, {}, None)
    found = find_all(ctx, snap.generation, started, known)
    resolution = _resolution(index)
    return Kept(found, signatures, links_by_source, resolution, snap, vector_rows_per_note(snap), time.monotonic(),
                None, index.embedder, anchors, unresolved, _surroundings(index))


def _surroundings(index: IndexView) -> tuple[int, int]:
    """The vault's ignore rules and the index's attachments, as two numbers. The rest of a report advances by
    the notes that changed; a rule or an attachment changes what links to unchanged notes find and what
    the vault walk counts as stale, so either one changing finds everything anew (rare: a settings edit, a
    file added or deleted)."""
    return index.vault.rules_signature, hash(frozenset(attachment_paths(index.reader())))


def _changed(before: dict[int, Signature], now: dict[int, Signature]) -> set[int]:
    """Ids of the notes added, changed, renamed or gone."""
    return {n for n, _sig in before.items() ^ now.items()}  # the pairs in one only: compared at C speed


Following = tuple[dict[int, list[LinkRow]], dict[int, tuple[int | None, bool]], Snapshot, Ints, float, DiskWalk | None]


def _advanced(index: IndexView, kept: Kept, snap: Snapshot, signatures: dict[int, Signature],
              changed: set[int]) -> tuple[dict[str, Any], Following, Delta]:
    """The kept Context values with the changed notes' rows read again, what the next generation
    will be advanced from (Kept's fields after the findings and signatures), and what changed."""
    conn = index.reader()
    old = kept.findings.loaded
    present = {n for n in changed if n in signatures}
    structural = any(_path(kept.signatures.get(n)) != _path(signatures.get(n)) for n in changed)
    notes = _replaced(old["notes"], changed, load_notes(conn, present))
    if structural:  # paths came, went or moved: path order, and links elsewhere may resolve anew
        notes = dict(sorted(notes.items(), key=lambda kv: kv[1].path))
    resolution = _resolution(index) if structural else kept.resolution
    relinked = _relinked(conn, kept.resolution, resolution) if structural else set()
    reread = present | relinked
    links_by_source = {s: v for s, v in kept.links_by_source.items() if s not in changed and s not in relinked}
    links_by_source.update(_by_source(load_links(conn, reread)))
    links = list(chain.from_iterable(links_by_source[s] for s in sorted(links_by_source)))
    vector_rows = vector_rows_per_note(snap)
    loaded: dict[str, Any] = {
        "notes": notes, "links": links,
        "body_chars": _replaced(old["body_chars"], changed, load_body_chars(conn, present)),
        "tags": _replaced(old["tags"], changed, load_tags(conn, present)),
    }
    templates_same = all(old["notes"][n].template == notes[n].template for n in changed
                         if n in old["notes"] and n in notes)
    edges_changed = structural or not templates_same or "edges" not in old
    if not edges_changed:
        loaded["edges"], edges_changed = _followed_edges(old["edges"], links_by_source, reread, notes)
        if not edges_changed and "clusters" in old:
            loaded["clusters"] = old["clusters"]  # the same notes, the same links between them
    moved: set[int] = set()
    if "vectors" in old:
        moved = _vector_notes_changed(kept, snap, vector_rows, changed)
        loaded["vectors"] = _followed_vectors(old["vectors"], snap, moved) if moved else old["vectors"]
        if "duplicate_pairs" in old:
            loaded["duplicate_pairs"] = _followed_pairs(old["duplicate_pairs"], loaded["vectors"], moved) \
                if moved else old["duplicate_pairs"]
        if not moved and "meaning_parts" in old:
            loaded["meaning_parts"] = old["meaning_parts"]
    names_same = not structural and all(_names(old["notes"].get(n)) == _names(notes.get(n)) for n in changed)
    if "name_matcher" in old and names_same:
        loaded["name_matcher"] = old["name_matcher"]
    if not structural and "file_name_counts" in old:
        loaded["file_name_counts"] = old["file_name_counts"]
    loaded["disk"], scanned_at, walk, disk_paths = _followed_disk(index, kept, old.get("disk"), changed, signatures)
    delta = Delta(changed, reread | changed, structural, edges_changed, moved, disk_paths, names_same, templates_same)
    return loaded, (links_by_source, resolution, snap, vector_rows, scanned_at, walk), delta


Edges = tuple[dict[int, set[int]], dict[int, set[int]]]


def _followed_edges(old: Edges, links_by_source: dict[int, list[LinkRow]], sources: set[int],
                    notes: dict[int, NoteRow]) -> tuple[Edges, bool]:
    """The kept (outgoing, incoming) note links with the given sources' links taken again (the rule
    is Context.edges'), and whether any came or went. The same notes as before: nothing was moved."""
    out_old, into_old = old
    out, into = defaultdict(set, out_old), defaultdict(set, into_old)  # sets shared with `old` are replaced, never changed
    changed = False
    for source in sources:
        now = {target for ln in links_by_source.get(source, ()) if (target := note_target(ln, notes)) is not None}
        before = out_old.get(source, set())
        if now == before:
            continue
        changed = True
        if now:
            out[source] = now
        else:
            out.pop(source, None)
        for target in before - now:
            into[target] = into[target] - {source}
            if not into[target]:
                del into[target]
        for target in now - before:
            into[target] = into.get(target, set()) | {source}
    return ((out, into), True) if changed else (old, False)


def _path(signature: Signature | None) -> str:
    return "" if signature is None else signature.split("\0", 1)[0]


def _replaced(old: dict[int, Any], changed: set[int], fresh: dict[int, Any]) -> dict[int, Any]:
    """`old` without the changed notes' entries, then with their fresh ones (a changed note keeps its place)."""
    out = dict(old)  # copied and updated at C speed: a comprehension over 17k notes cost ~5 ms a table
    out.update(fresh)
    for n in changed - fresh.keys():
        out.pop(n, None)
    return out


def _names(note: health.NoteRow | None) -> tuple[str, str, tuple[str, ...]] | None:
    return None if note is None else (note.path, note.title, note.aliases)


def _by_source(links: Iterable[LinkRow]) -> dict[int, list[LinkRow]]:
    out: dict[int, list[LinkRow]] = {}
    for link in links:
        out.setdefault(link.source_id, []).append(link)
    return out


def _resolution(index: IndexView) -> dict[int, tuple[int | None, bool]]:
    return link_resolutions(index.reader())


def _relinked(conn: Any, before: dict[int, tuple[int | None, bool]],
              now: dict[int, tuple[int | None, bool]]) -> set[int]:
    """Sources of the links that resolve differently now (a note they name came, went or moved)."""
    moved = [lid for lid, res in now.items() if before.get(lid, res) != res]
    if not moved:
        return set()
    return link_sources(conn, moved)


# ---- sections ----------------------------------------------------------------------------------
GRAPH_SECTIONS = ("orphans", "no_inbound", "dead_ends")  # a note's item: its path and whether links come and go
TAG_SECTIONS = ("similar_tags", "tags_used_once")


def _kept_sections(ctx: Context, kept: Kept, delta: Delta, same_left_out: bool) -> tuple[dict[str, list[Item]], AnchorMemo]:
    """The sections found without deriving them from every note again (find_all does the rest)."""
    old, before = kept.findings.sections, kept.findings.loaded
    known: dict[str, list[Item]] = {}
    known["broken_anchors"], anchors = _followed_anchors(ctx, kept.anchors)
    if same_left_out:  # else stale files are all found again
        known["stale"] = _followed_stale(ctx, kept, delta)
    if delta.structural:  # paths came, went or moved: every path-ordered section is found again
        return known, anchors
    if not delta.edges_changed:
        known.update((sid, old[sid]) for sid in GRAPH_SECTIONS)
        if delta.names_same:
            known["clusters"] = old["clusters"]  # its items show titles
    if delta.templates_same and all(before["tags"].get(n) == ctx.tags.get(n) for n in delta.changed):
        known.update((sid, old[sid]) for sid in TAG_SECTIONS)
    if not _pairs_touched(before, ctx, delta.moved):
        known["near_duplicates"] = old["near_duplicates"]
    return known, anchors


def _followed_anchors(ctx: Context, memo: AnchorMemo) -> tuple[list[Item], AnchorMemo]:
    """Broken anchors, each link's item kept while neither the link nor its target note changed
    (both are the kept objects then: health_cache replaces only the changed notes' rows)."""
    items, now = [], {}
    for link, target in health.anchored_links(ctx):
        key = (id(link), id(target))
        hit = memo.get(key)
        item = hit[2] if hit is not None and hit[0] is link and hit[1] is target else health.anchor_item(ctx, link, target)
        now[key] = (link, target, item)
        if item is not None:
            items.append(item)
    return items, now


def _followed_unresolved(ctx: Context, links_by_source: dict[int, list[LinkRow]], memo: UnresolvedMemo,
                         reread: set[int] | None) -> tuple[list[Item], UnresolvedMemo]:
    """Unresolved links (ctx.unresolved, for three sections) and the broken ones' items: the notes
    whose links were read again are looked at, the others keep theirs (reread None: all are looked
    at, as when the files left out changed)."""
    whole, items, targets, now = Unresolved(), [], set(), {}
    sources = links_by_source.keys() if reread is None else memo.keys() | reread
    for source in sorted(sources):  # ctx.links' order
        links = links_by_source.get(source)
        if links is None:
            continue  # the note went
        hit = memo.get(source) if reread is not None else None
        if hit is None or hit[0] is not links:
            part = health.classify_unresolved(ctx, links)
            if not (part.broken or part.attachments or part.excluded):
                continue  # most notes have none
            hit = (links, part, health.unresolved_items(ctx, part.broken), health.unresolved_targets(part.broken))
        now[source] = hit
        whole.extend(hit[1])
        items += hit[2]
        targets |= hit[3]
    ctx.unresolved = whole
    ctx.extra_counts["unresolved_targets"] = len(targets)
    return items, now


def _followed_stale(ctx: Context, kept: Kept, delta: Delta) -> list[Item]:
    """The kept stale items with the changed notes' paths and the files that changed on disk
    (delta.disk_paths: not None here) looked at again."""
    assert delta.disk_paths is not None
    now = [note for n in delta.changed if (note := ctx.notes.get(n)) is not None]
    own = {_path(kept.signatures.get(n)) for n in delta.changed} - {""} | {note.path for note in now}
    paths = own | delta.disk_paths
    # A path of no changed note (the walk saw it change) may still be some note's: then look them all up.
    indexed = {note.path: (note.size, note.mtime_ns) for note in (now if paths <= own else ctx.notes.values())}
    fresh = (health.stale_item(ctx, path, indexed.get(path)) for path in paths)
    items = [it for it in kept.findings.sections["stale"] if it.path not in paths]
    return sorted([*items, *(it for it in fresh if it is not None)], key=lambda it: it.path)


def _pairs_touched(before: dict[str, Any], ctx: Context, moved: set[int]) -> bool:
    """Whether a near-duplicate candidate pair, before or now, has a note whose vector or text changed."""
    if "duplicate_pairs" not in before or "duplicate_pairs" not in vars(ctx):
        return True
    if before["duplicate_pairs"] is ctx.duplicate_pairs:
        return False
    touched = np.fromiter(moved, np.int64, len(moved))
    return any(bool(np.isin(ids, touched).any()) for pairs in (before["duplicate_pairs"], ctx.duplicate_pairs)
               for ids in pairs[:2])


# ---- vectors ---------------------------------------------------------------------------------
def _vector_notes_changed(kept: Kept, snap: Snapshot, rows: Ints, changed: set[int]) -> set[int]:
    """Notes whose note vector may differ: the changed notes, notes that gained or lost section vectors
    (embedded later), and notes whose sections became or stopped being template text (weights)."""
    moved = set(changed)
    size = max(len(rows), len(kept.vector_rows))
    before, now = np.zeros(size, np.int64), np.zeros(size, np.int64)
    before[:len(kept.vector_rows)], now[:len(rows)] = kept.vector_rows, rows
    moved.update(np.flatnonzero(before != now).tolist())
    if snap.boilerplate is not kept.snapshot.boilerplate:
        flipped = np.fromiter(snap.boilerplate.keys() ^ kept.snapshot.boilerplate.keys(), np.int64)
        found = snap.rows_for(np.sort(flipped))
        moved.update(snap.vector_notes[found[found >= 0]].tolist())
    return moved


def _followed_vectors(old: NoteVectors, snap: Snapshot, moved: set[int]) -> NoteVectors:
    """The kept note vectors with the moved notes' rows computed again from the snapshot."""
    touched = np.fromiter(moved, np.int64, len(moved))
    rows = np.flatnonzero(np.isin(snap.vector_notes, touched))
    weights = snap.row_weights[rows] if snap.boilerplate else None
    fresh = note_vectors(snap.vector_notes[rows], snap.matrix[rows], weights)
    keep = ~np.isin(old.ids, touched)
    at = np.searchsorted(old.ids, fresh.ids)
    if len(old.ids) - int(keep.sum()) == len(fresh.ids) and np.array_equal(old.ids[np.minimum(at, len(old.ids) - 1)],
                                                                        fresh.ids):
        matrix = old.matrix.copy()  # the same notes have vectors: their rows change in place (one copy, no sort)
        matrix[at] = fresh.matrix
        followed = NoteVectors(old.ids, matrix)
        if "row_of" in vars(old):
            vars(followed)["row_of"] = old.row_of  # the same ids, the same rows (cached_property's slot)
        return followed
    if not len(fresh.ids):
        return NoteVectors(old.ids[keep], old.matrix[keep])
    ids = np.concatenate([old.ids[keep], fresh.ids])
    order = np.argsort(ids, kind="stable")
    matrix = np.concatenate([old.matrix[keep], fresh.matrix.astype(old.matrix.dtype, copy=False)])[order]
    return NoteVectors(ids[order], matrix)


Pairs = tuple[Ints, Ints, npt.NDArray[np.float32]]


def _followed_pairs(old: Pairs, nv: NoteVectors, moved: set[int]) -> Pairs:
    """Near-duplicate candidates: the kept pairs not involving a moved note, plus the moved notes'
    pairs against every note (one row block per moved note instead of the whole vault squared)."""
    touched = np.fromiter(moved, np.int64, len(moved))
    keep = ~(np.isin(old[0], touched) | np.isin(old[1], touched))
    parts: list[Pairs] = [(old[0][keep], old[1][keep], old[2][keep])]
    rows = np.array(sorted(nv.row_of[n] for n in moved if n in nv.row_of), dtype=np.int64)
    for start in range(0, len(rows), BLOCK_ROWS):
        block = rows[start:start + BLOCK_ROWS]
        sims = nv.matrix[block] @ nv.matrix.T
        i, j = np.divmod(np.flatnonzero(sims >= DUPLICATE_COSINE), sims.shape[1])
        a, b = block[i], j
        # Each pair once (lower row first), never a note with itself; a pair of two moved notes is
        # found from both sides: kept from the lower one's row only.
        once = (a != b) & ((a < b) | ~np.isin(b, rows))
        a, b, cos = a[once], b[once], sims[i[once], j[once]]
        low, high = np.minimum(a, b), np.maximum(a, b)
        parts.append((nv.ids[low], nv.ids[high], cos.astype(np.float32)))
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]))


# ---- the vault folder -------------------------------------------------------------------------
def _followed_disk(index: IndexView, kept: Kept, disk: health.DiskFiles | None, changed: set[int],
                   signatures: dict[int, Signature]) -> tuple[health.DiskFiles, float, DiskWalk | None, set[str] | None]:
    """The kept walk of the vault with the changed notes' files looked at again, a finished walk taken
    in, and a new walk started when the kept one is old. Also: when the kept walk started, the walk
    running, and the paths whose entry may differ (None: the files left out changed)."""
    vault = index.vault
    if disk is None:
        return scan_disk(vault), time.monotonic(), None, None
    paths = {_path(sig) for n in changed for sig in (kept.signatures.get(n), signatures.get(n)) if sig}
    notes, excluded, scanned_at, walk = disk.notes, disk.excluded, kept.disk_scanned_at, kept.walk
    differ: set[str] | None = set(paths)
    if walk is not None and walk.done.is_set():
        if walk.result is not None:
            fresh = walk.result
            differ = {p for p in fresh.notes.keys() | notes.keys() if fresh.notes.get(p) != notes.get(p)} | paths
            notes, scanned_at = fresh.notes, walk.started
            paths |= walk.touched  # changed while it walked: looked at again below
            if fresh.excluded != excluded:
                excluded, differ = fresh.excluded, None
        walk = None
    if walk is None and time.monotonic() - scanned_at > DISK_RESCAN_SECONDS:
        walk = DiskWalk.start(vault)
    if walk is not None:
        walk.touched |= paths
    notes = dict(notes)
    for path in paths:
        try:
            st = os.stat(vault.disk_path(path))
        except (FileNotFoundError, NotADirectoryError, ValueError):
            notes.pop(path, None)
            continue
        notes[path] = (st.st_size, st.st_mtime_ns)
    if differ is not None:
        differ |= paths
    return health.DiskFiles(notes, excluded), scanned_at, walk, differ
