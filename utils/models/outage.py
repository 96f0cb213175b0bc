"""A server that stopped answering: how long requests have failed to connect, and when to give
up (`GIVE_UP_AFTER` seconds with no connection and no answer in between).

Retrying each request with backoff suits a blip; a server that was killed would otherwise cost
every pending request its full series of retries and a warning each. Shared by all requests
of one model (and every task a leaderboard worker runs with it): the first connection failure
starts the clock and is said once; once the limit is past, requests give up at their next
failure and the run ends with one line.
"""

from __future__ import annotations

import logging
import threading
import time

import requests

log = logging.getLogger(__name__)
GIVE_UP_AFTER = 30.0  # seconds


def is_connection_failure(exc: Exception) -> bool:
    """No answer at all: refused, reset, unreachable, or a connect timeout."""
    return isinstance(exc, (requests.ConnectionError, requests.ConnectTimeout))


class Outage:
    """Connection failures since the last answer, across threads."""

    def __init__(self, url: str, limit: float | None = None) -> None:
        self.url = url
        self.limit = GIVE_UP_AFTER if limit is None else limit
        self._since: float | None = None
        self._lock = threading.Lock()

    def answered(self) -> None:
        with self._lock:
            self._since = None

    def failed(self, exc: Exception) -> bool:
        """Record a failure; True when the server has not been reachable for `limit` seconds
        (the request should give up, and says why on `exc`)."""
        if not is_connection_failure(exc):
            return False
        now = time.monotonic()
        with self._lock:
            if self._since is None:
                self._since = now
                log.warning(
                    "%s: cannot connect (%s); retrying for up to %.0f s",
                    self.url,
                    type(exc).__name__,
                    self.limit,
                )
            down = now - self._since
        if down < self.limit:
            return False
        why = (
            f"the server at {self.url} refused connections for {down:.0f} s: given up "
            f"(is it running?); last error: {exc}"
        )
        exc.args = (why,)
        exc.final = True
        return True
