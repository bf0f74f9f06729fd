"""Fan-out of server events (index progress, index changed) to every SSE subscriber.

Publishers may be worker threads; subscribers are coroutines on the loop.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

QUEUE_SIZE = 256  # a slow client loses old progress events, never blocks the indexer


@dataclass
class EventBus:
    loop: asyncio.AbstractEventLoop
    _queues: set[asyncio.Queue[str]] = field(default_factory=set)

    def subscribe(self) -> asyncio.Queue[str]:
        queue: asyncio.Queue[str] = asyncio.Queue(QUEUE_SIZE)
        self._queues.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[str]) -> None:
        self._queues.discard(queue)

    def publish(self, event: str, data: object) -> None:
        """Thread-safe."""
        frame = f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
        self.loop.call_soon_threadsafe(self._deliver, frame)

    def _deliver(self, frame: str) -> None:
        for queue in list(self._queues):
            if queue.full():
                queue.get_nowait()  # drop the oldest
            queue.put_nowait(frame)
