"""Rewards of concurrent rollouts scored together. A reward scored alone pays each scorer's
fixed cost (a worker pool for MATH's and IFEval's bounded checks, sandbox start-up for code)
per sample; rollouts finish concurrently, so the samples that arrive while a batch is being
scored (or within `WINDOW` seconds of the first) form the next batch: one `score_samples` call
per batch, in a worker thread, with the same per-sample results (each sample is its own
instance; filters and `process_results` are the task's own)."""

from __future__ import annotations

import asyncio
import json
import weakref

from .rows import Row
from .scoring import score_samples

WINDOW = 0.02  # seconds to wait for company before scoring a batch


class RewardBatcher:
    def __init__(self, window: float = WINDOW) -> None:
        self.window = window
        self.pending: list[tuple[Row, str, str, asyncio.Future]] = []
        self.flushing: asyncio.Task | None = None

    async def score(self, row: Row, completion: str, metadata: dict | None) -> dict:
        """The sample's scores (`score_samples`' entry for it), scored with its company."""
        future = asyncio.get_running_loop().create_future()
        self.pending.append((row, completion, json.dumps(metadata or {}, sort_keys=True), future))
        if self.flushing is None or self.flushing.done():
            self.flushing = asyncio.create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        while self.pending:
            await asyncio.sleep(self.window)
            batch, self.pending = self.pending, []
            for key in dict.fromkeys(item[2] for item in batch):
                await self._score(
                    [item for item in batch if item[2] == key], json.loads(key) or None
                )

    @staticmethod
    async def _score(items: list, metadata: dict | None) -> None:
        try:
            results = await asyncio.to_thread(
                score_samples, [i[0] for i in items], [i[1] for i in items], metadata
            )
        except Exception as error:  # noqa: BLE001 - isolate the failing sample: score each alone
            if len(items) == 1:
                items[0][3].set_exception(error)
                return
            for item in items:
                await RewardBatcher._score([item], metadata)
            return
        for item, result in zip(items, results):
            item[3].set_result(result)


_BATCHERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def batcher() -> RewardBatcher:
    """The running event loop's batcher."""
    loop = asyncio.get_running_loop()
    if loop not in _BATCHERS:
        _BATCHERS[loop] = RewardBatcher()
    return _BATCHERS[loop]
