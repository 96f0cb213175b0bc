"""A Ray cluster address checked before Ray is asked to join it: `ray.init` keeps retrying an
address nobody answers on for minutes, and does not stop for SIGTERM meanwhile. A TCP
connection to the address (the GCS port, or Ray Client's for `ray://`) tells in seconds; an
address that does not answer is one line saying what to give instead.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

CONNECT_TIMEOUT = 5.0  # seconds per attempt
HOW = (
    "start one with `ray start --head` (then --address auto), or give a running cluster's "
    "address: HOST:6379 or ray://HOST:10001"
)


def current_cluster() -> str | None:
    """What `--address auto` joins: RAY_ADDRESS, else the address `ray start` left in Ray's
    temporary folder (RAY_TMPDIR or /tmp), else None."""
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    recorded = Path(os.environ.get("RAY_TMPDIR", "/tmp")) / "ray" / "ray_current_cluster"
    if recorded.is_file():
        return recorded.read_text(encoding="utf-8").strip() or None
    return None


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of `HOST:PORT` or `ray://HOST:PORT`; None for another form."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def address_problem(address: str | None) -> str | None:
    """Why `--address` cannot be joined (nothing answers there, no cluster for `auto`), or
    None (it answers, or its form is one only Ray knows)."""
    given = address or "auto"
    target = current_cluster() if given == "auto" else given
    if target is None:
        return f"--address auto: no Ray cluster is running on this machine; {HOW}"
    where = host_port(target)
    if where is None:
        return None
    try:
        socket.create_connection(where, timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        via = f" (auto: {target})" if given == "auto" else ""
        why = exc.strerror or type(exc).__name__
        return f"--address {given}{via}: no Ray cluster answers there ({why}); {HOW}"
    return None
