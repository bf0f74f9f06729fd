"""How many blocking reads run at once, shared by both ports.

Answers (search, related, a note) are mostly Python, so threads beyond two only queue on the
GIL, and each extra one makes every other thread, the event loop's socket calls included, wait
longer to get it back. Two slots let one answer's SQLite and BLAS work (which release the GIL)
overlap another's Python; waiters are served first come, first served (asyncio.Semaphore is FIFO).
Whole-vault reports (health, overview) take seconds: they have a lane of their own, so one never
holds a slot that a search is waiting for. Keyword-only answers (lexical mode, a note's links) take
a fraction of a millisecond and never touch the vectors: their own lane too, so typing in keyword
mode never waits behind four hybrid searches' matrix products. Measured with 8 clients in
docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

ANSWER_SLOTS = 2
REPORT_SLOTS = 1
KEYWORD_SLOTS = 1

P = ParamSpec("P")
R = TypeVar("R")


class ReadGate:
    def __init__(self, answers: int = ANSWER_SLOTS, reports: int = REPORT_SLOTS, keywords: int = KEYWORD_SLOTS) -> None:
        self._answers = asyncio.Semaphore(answers)  # all bind to the running loop on first use
        self._reports = asyncio.Semaphore(reports)
        self._keywords = asyncio.Semaphore(keywords)

    async def answer(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """`fn(*args, **kwargs)` on a worker thread once an answer slot is free."""
        async with self._answers:
            return await asyncio.to_thread(fn, *args, **kwargs)

    async def report(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """The same in the report lane: a slow whole-vault report waits only for another report."""
        async with self._reports:
            return await asyncio.to_thread(fn, *args, **kwargs)

    async def keywords(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """The same in the keyword lane: an answer without vectors waits only for another such answer."""
        async with self._keywords:
            return await asyncio.to_thread(fn, *args, **kwargs)
