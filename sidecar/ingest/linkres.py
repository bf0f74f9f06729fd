"""Link resolution the way Obsidian does it. Pure: works on a list of vault paths.

Rules (documented in docs/links.md), all case-insensitive and in Unicode's composed form (NFC), as vault
paths are: a link typed on macOS (NFD, "プラグイン設定" pasted from Finder) finds its note.
1. `./x` and `../x` resolve against the linking note's folder.
2. An exact vault path, with or without `.md`, from the vault root.
3. A target with a folder (`folder/Note`) also matches as a path suffix (`a/folder/Note.md`);
   markdown links additionally resolve relative to the linking note first.
4. A bare name matches any file with that name (notes: `.md` optional; attachments: with
   their extension). Several matches are ambiguous: the one in the linking note's folder
   wins, then the shortest path, then the alphabetically first; the link is marked ambiguous.
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections import defaultdict
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resolution:
    path: str | None  # vault path of the target, None when unresolved
    ambiguous: bool = False
    candidates: tuple[str, ...] = ()


class PathIndex:
    def __init__(self, paths: list[str]) -> None:
        self._exact: dict[str, str] = {}
        self._by_name: dict[str, list[str]] = defaultdict(list)
        for path in sorted(paths):
            low = path.lower()
            self._exact.setdefault(low, path)
            name = posixpath.basename(low)
            self._by_name[name].append(path)
            if low.endswith(".md"):
                self._exact.setdefault(low[:-3], path)
                self._by_name[name[:-3]].append(path)

    def resolve(self, target: str, source: str, kind: str = "link") -> Resolution:
        raw = unicodedata.normalize("NFC", target.strip()).replace("\\", "/")  # markdown targets: percent-decoded
        if not raw:
            return Resolution(source)  # [[#Heading]] points at the note itself
        low = raw.lower()
        folder = posixpath.dirname(source.lower())
        if low.startswith(("./", "../")) or kind == "markdown":
            hit = self._exact_lookup(posixpath.normpath(posixpath.join(folder, low)))
            if hit or low.startswith(("./", "../")):
                return Resolution(hit)
        hit = self._exact_lookup(low.lstrip("/"))
        if hit:
            return Resolution(hit)
        return self._by_suffix(low.lstrip("/"), folder)

    def _exact_lookup(self, low: str) -> str | None:
        if low.startswith("../"):
            return None  # escapes the vault
        return self._exact.get(low) or self._exact.get(low + ".md")

    def _by_suffix(self, low: str, folder: str) -> Resolution:
        name = posixpath.basename(low)
        candidates = self._by_name.get(name, []) or self._by_name.get(name + ".md", [])
        if "/" in low:
            wanted = "/" + low
            candidates = [c for c in candidates if ("/" + c.lower()).endswith(wanted) or
                          ("/" + c.lower()).endswith(wanted + ".md")]
        candidates = list(dict.fromkeys(candidates))
        if not candidates:
            return Resolution(None)
        best = sorted(candidates, key=lambda c: (posixpath.dirname(c.lower()) != folder, c.count("/"), c.lower()))
        return Resolution(best[0], ambiguous=len(best) > 1, candidates=tuple(best))
