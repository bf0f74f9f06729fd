"""Opaque cursors for paged answers, and cutting long text into pages.

A cursor carries the offset of the next item and a short fingerprint of the question it
continues, so a cursor from one query is refused for another instead of silently paging
through the wrong list.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass

from sidecar.errors import InvalidParams
from sidecar.protocol_types import HEALTH_PAGE_CURSOR_MAX_LENGTH

MAX_CURSOR_CHARS = HEALTH_PAGE_CURSOR_MAX_LENGTH  # the protocol's bound on a cursor; MCP's cursors are the same


def scope(kind: str, **question: object) -> str:
    """A fingerprint of what is being paged: the tool and every argument except limit and cursor."""
    text = json.dumps([kind, question], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def encode_cursor(offset: int, where: str) -> str:
    raw = json.dumps({"o": offset, "s": where}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, where: str) -> int:
    """The offset a cursor points at (0 without one); InvalidParams naming `cursor` otherwise."""
    if cursor is None:
        return 0
    try:
        if len(cursor) > MAX_CURSOR_CHARS:
            raise ValueError(cursor)
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset, owner = data["o"], data["s"]
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0 or not isinstance(owner, str):
            raise ValueError(cursor)
    except (ValueError, TypeError, KeyError):
        raise InvalidParams("cursor: not a cursor this server gave out; pass next_cursor from the previous "
                            "answer unchanged, or leave it out for the first page", {"field": "cursor"}) from None
    if owner != where:
        raise InvalidParams("cursor: it belongs to a different question (other arguments); repeat the same "
                            "arguments with it, or leave it out for the first page", {"field": "cursor"})
    return offset


def next_cursor(offset: int, shown: int, total: int, where: str) -> str | None:
    end = offset + shown
    return encode_cursor(end, where) if end < total else None


@dataclass(frozen=True, slots=True)
class TextPage:
    text: str
    offset: int
    next_offset: int | None  # None: this page reaches the end
    remaining: int  # characters after this page


def page_text(text: str, offset: int, max_chars: int) -> TextPage:
    """At most max_chars from offset, ending at a line break when one falls in the last half of the
    window (so the next page starts on a fresh line); a single huge line is cut where it must be."""
    if offset > len(text):
        raise InvalidParams(f"offset: {offset} is past the end ({len(text)} characters)",
                            {"field": "offset", "maximum": len(text)})
    end = min(len(text), offset + max_chars)
    if end < len(text):
        newline = text.rfind("\n", offset + max_chars // 2, end)
        if newline >= 0:
            end = newline + 1
    rest = len(text) - end
    return TextPage(text[offset:end], offset, end if rest else None, rest)
