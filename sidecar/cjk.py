"""CJK text for FTS5: unicode61 keeps a run of Han/Kana/Hangul as one token, so nothing inside a
sentence could match. We index the CJK characters a second time, one token per character, in
their own column; a CJK query becomes a phrase of single characters, which matches any
substring. Pure functions."""

from __future__ import annotations

import re

# Han (incl. extension A and compatibility), Hiragana, Katakana, Hangul syllables and Jamo.
CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff]")
CJK_RUN = re.compile(CJK_CHAR.pattern + "+")


def cjk_spaced(text: str) -> str:
    """All CJK runs of `text`, each character a token, runs separated by newlines."""
    return "\n".join(" ".join(run) for run in CJK_RUN.findall(text))


def split_cjk_runs(text: str) -> list[tuple[bool, str]]:
    """Split into (is_cjk, piece) segments, in order."""
    out: list[tuple[bool, str]] = []
    pos = 0
    for match in CJK_RUN.finditer(text):
        if match.start() > pos:
            out.append((False, text[pos : match.start()]))
        out.append((True, match.group()))
        pos = match.end()
    if pos < len(text):
        out.append((False, text[pos:]))
    return out
