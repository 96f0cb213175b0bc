"""Messages on the sockets between harness, zygote and candidate: a 4-byte length and a body
(`protocol.to_wire`), size-checked before a byte is sent and before a body is read; and the way
a zygote and its slot agree on the planned calls the zygote keeps (`remember`). Imported by the
untrusted side too; it imports nothing of the harness.
"""

from __future__ import annotations

import socket
from collections import OrderedDict

from .limits import MAX_MESSAGE, PLANS_KEPT
from .protocol import NotPlainData, from_wire, to_wire


def remember(kept: OrderedDict, key: str, value=None) -> None:
    """Keep `value` under `key` as the most recently used, dropping the oldest beyond
    PLANS_KEPT: a zygote keeps the planned calls of recent jobs this way, and its slot mirrors
    which keys are kept by applying it to the same requests in the same order."""
    kept[key] = value
    kept.move_to_end(key)
    while len(kept) > PLANS_KEPT:
        kept.popitem(last=False)


def encode_message(obj) -> bytes:
    """Length-prefixed message; `NotPlainData` before anything is sent if it is too large."""
    data = to_wire(obj)
    if len(data) > MAX_MESSAGE:
        raise NotPlainData(f"message of {len(data)} bytes exceeds {MAX_MESSAGE}")
    return len(data).to_bytes(4, "big") + data


def message_size(header: bytes, limit: int = 0) -> int:
    """The size a message's header announces, refused (before any of the body is read)
    past `limit` bytes (0, or more than MAX_MESSAGE: MAX_MESSAGE)."""
    size, limit = int.from_bytes(header, "big"), min(limit or MAX_MESSAGE, MAX_MESSAGE)
    if size > limit:
        raise NotPlainData(f"message of {size} bytes exceeds {limit}")
    return size


def receive_message(sock: socket.socket):
    """The next message on a blocking socket (the zygote's control line, unbuffered);
    EOFError when the peer has closed."""
    return from_wire(_recv_exact(sock, message_size(_recv_exact(sock, 4))))


def read_message(stream):
    """The next message from a buffered binary stream (a candidate's channel: one read for
    most messages); EOFError when the peer has closed."""
    header = stream.read(4)
    body = stream.read(message_size(header)) if len(header) == 4 else b""
    if len(header) < 4 or len(body) < message_size(header):
        raise EOFError("peer closed")
    return from_wire(body)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise EOFError("peer closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)
