"""Which leaderboard failures are worth another attempt.

A retry helps only when the cause may be gone next time: a connection that failed, a timeout,
a server error (5xx), a worker or node that was lost. A missing dataset, a bad argument, a
request the server refused (4xx), a task the backend cannot run or a metric that could not be
computed fail the same way every time: they fail at once, with their reason, never "will
retry".
"""

from __future__ import annotations

import re

TRANSIENT = re.compile(
    r"ConnectionError|Connection (refused|reset|aborted)|NewConnectionError|RemoteDisconnected"
    r"|Max retries exceeded|timed out|Timeout|HTTP 5\d\d|\b5\d\d Server Error"
    r"|refused connections|not answering|node (died|was lost)|NodeDied|lost node|OutOfMemory",
    re.IGNORECASE,
)
CLIENT_ERROR = re.compile(r"HTTP 4\d\d|\b4\d\d Client Error", re.IGNORECASE)


def retryable_reason(reason: str) -> bool:
    """Whether a pair that failed for `reason` (its one-line reason) may succeed on a retry:
    a transient cause named, and no client error (a refused request is refused again)."""
    return bool(TRANSIENT.search(reason)) and not CLIENT_ERROR.search(reason)
