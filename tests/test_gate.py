"""The read gate: two answers at a time, first come first served, and reports in their own lane."""

from __future__ import annotations

import asyncio
import threading

from sidecar.serve.gate import ANSWER_SLOTS, ReadGate


class Probe:
    """Blocking work that records how many run at once and in which order they started."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.started: list[int] = []
        self.release = threading.Event()

    def work(self, n: int) -> int:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(n)
        self.release.wait(timeout=10)
        with self.lock:
            self.running -= 1
        return n


async def _until(condition: object, timeout: float = 10.0) -> None:
    async def poll() -> None:
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.001)

    await asyncio.wait_for(poll(), timeout)


def test_answers_run_two_at_a_time_in_arrival_order() -> None:
    async def scenario() -> tuple[list[int], Probe]:
        gate, probe = ReadGate(), Probe()
        calls = []
        for n in range(6):
            calls.append(asyncio.create_task(gate.answer(probe.work, n)))
            await asyncio.sleep(0)  # each call reaches the gate before the next is made
        await _until(lambda: len(probe.started) == ANSWER_SLOTS)
        assert probe.running == ANSWER_SLOTS  # the rest wait at the gate, not in threads
        probe.release.set()
        return list(await asyncio.gather(*calls)), probe

    results, probe = asyncio.run(scenario())
    assert results == list(range(6))
    assert probe.most == ANSWER_SLOTS
    assert probe.started == list(range(6))


def test_a_slow_report_never_holds_an_answer_slot() -> None:
    async def scenario() -> list[int]:
        gate, slow, quick = ReadGate(), Probe(), Probe()
        quick.release.set()
        report = asyncio.create_task(gate.report(slow.work, 99))
        second_report = asyncio.create_task(gate.report(slow.work, 98))
        await _until(lambda: slow.started == [99])
        answers = await asyncio.wait_for(asyncio.gather(*(gate.answer(quick.work, n) for n in range(4))), 10)
        assert slow.started == [99]  # the second report waits for the first, not for the answers
        slow.release.set()
        await asyncio.gather(report, second_report)
        return list(answers)

    assert asyncio.run(scenario()) == [0, 1, 2, 3]


def test_keyword_answers_pass_hybrid_ones_waiting_for_both_answer_slots() -> None:
    """Lexical search and a note's links need no vectors: they never queue behind matrix products."""
    async def scenario() -> list[int]:
        gate, hybrid, keyword = ReadGate(), Probe(), Probe()
        keyword.release.set()
        held = [asyncio.create_task(gate.answer(hybrid.work, n)) for n in range(ANSWER_SLOTS + 2)]
        await _until(lambda: len(hybrid.started) == ANSWER_SLOTS)
        answers = await asyncio.wait_for(asyncio.gather(*(gate.keywords(keyword.work, n) for n in range(3))), 10)
        assert len(hybrid.started) == ANSWER_SLOTS and hybrid.running == ANSWER_SLOTS  # still held and waiting
        hybrid.release.set()
        await asyncio.gather(*held)
        return list(answers)

    assert asyncio.run(scenario()) == [0, 1, 2]
