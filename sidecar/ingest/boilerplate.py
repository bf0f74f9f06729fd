"""Sections that repeat across notes (generated footers, template sections) are not similarity.

A section's template key is its heading and text with link targets, URLs, HTML tags and numbers
taken out: every obsidian-hub note ends with the same "This note in GitHub" footer whose links
differ only by the note's own path, and all of them get one key. A key found in MIN_NOTES or
more notes marks its sections as boilerplate; they then weigh WEIGHT of an ordinary section in
search, related notes and the health report's near-duplicates. Pure.
"""

from __future__ import annotations

import hashlib
import re

MIN_NOTES = 3  # two notes sharing a section are a duplicate (health says so); three are a template
WEIGHT = 0.3

_NOISE = re.compile(r"\]\([^)]*\)|<[^>]*>|https?://\S+|\d+")
_NON_WORD = re.compile(r"\W+")


def template_key(heading: str, body: str) -> str:
    """A short stable key; "" for a section with no words (nothing to compare)."""
    leaf = heading.rsplit(" > ", 1)[-1]
    words = _NON_WORD.sub(" ", _NOISE.sub(" ", f"{leaf}\n{body}").lower()).strip()
    return hashlib.blake2b(words.encode(), digest_size=8).hexdigest() if words else ""
