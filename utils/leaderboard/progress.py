"""Leaderboard progress: one line per finished pair, each ending in the overall bar (pairs done
of all, time elapsed, an estimate of the time left from this run's pace)."""

from __future__ import annotations

import logging
import time

log = logging.getLogger("evalpack.leaderboard")
BAR_WIDTH = 20


def clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def bar(done: int, total: int, elapsed: float, ran: int) -> str:
    """`[#####...............] 5/20 pairs, 1:02 elapsed, ~3:06 left`: the pairs this run
    starts (no estimate before it has finished one)."""
    filled = round(BAR_WIDTH * done / total) if total else BAR_WIDTH
    text = (
        f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total} pairs, "
        f"{clock(elapsed)} elapsed"
    )
    if ran and done < total:
        text += f", ~{clock(elapsed / ran * (total - done))} left"
    return text


class Progress:
    """Counts pairs as they end and logs a line for each."""

    def __init__(self, total: int) -> None:
        """`total`: the pairs this run starts (not those finished earlier or that cannot run)."""
        self.total, self.done, self.ran = total, 0, 0
        self.start = time.monotonic()

    def line(self, level: int, text: str) -> None:
        status = bar(self.done, self.total, time.monotonic() - self.start, self.ran)
        log.log(level, "%s | %s", text, status)

    def finished(self, pair: str, seconds: float | None, node: str) -> None:
        self.done += 1
        self.ran += 1
        took = f" in {seconds:.0f} s" if seconds is not None else ""
        self.line(logging.INFO, f"{pair}: finished{took} on {node}")

    def failed(self, pair: str, reason: str, retry: str) -> None:
        """A pair that failed; `retry` says whether it will be tried again (or why not)."""
        if "will retry" not in retry:
            self.done += 1
        self.line(logging.ERROR, f"{pair}: FAILED: {reason}{retry}")
