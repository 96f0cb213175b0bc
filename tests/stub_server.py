"""A local HTTP stub of the servers the pack's backends talk to, for tests.

It serves OpenAI-compatible `/v1/chat/completions` and `/v1/completions`, SGLang's `/generate`
and a plain answer server on `/answer`, all on 127.0.0.1. Every request is recorded (path,
payload, arrival and reply times, in-flight count); the generated text comes from `respond`,
a function of (path, payload). Faults can be injected for requests matching a predicate.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Fault:
    """What to do instead of answering: `kind` is "500", "400", "timeout" (reply after `delay`
    seconds), "malformed" (invalid JSON) or "missing" (JSON without the answer field).
    `times=None` is permanent."""

    kind: str
    when: object = None  # predicate on the payload; None matches every request
    times: int | None = 1
    delay: float = 0.0


@dataclass
class Record:
    path: str
    payload: dict
    started: float
    in_flight: int
    fault: str | None = None
    finished: float = 0.0


@dataclass
class StubServer:
    respond: object = lambda path, payload: "ok"
    delay: float = 0.0  # seconds every reply waits, to make requests overlap
    answer_field: str = "answer"
    records: list[Record] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def start(self) -> StubServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{path}"

    def inject(self, kind: str, when=None, times: int | None = 1, delay: float = 0.0) -> Fault:
        fault = Fault(kind, when, times, delay)
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self.faults.clear()

    def payloads(self, path: str | None = None) -> list[dict]:
        return [r.payload for r in self.records if path is None or r.path == path]

    def max_in_flight(self) -> int:
        return max((r.in_flight for r in self.records), default=0)

    # --- request handling --------------------------------------------------------------------

    def _begin(self, path: str, payload: dict) -> tuple[Record, Fault | None]:
        with self._lock:
            self._in_flight += 1
            fault = self._take_fault(payload)
            record = Record(
                path, payload, time.monotonic(), self._in_flight, fault.kind if fault else None
            )
            self.records.append(record)
        return record, fault

    def _end(self, record: Record) -> None:
        with self._lock:
            self._in_flight -= 1
            record.finished = time.monotonic()

    def _take_fault(self, payload: dict) -> Fault | None:
        for fault in self.faults:
            if fault.times != 0 and (fault.when is None or fault.when(payload)):
                if fault.times is not None:
                    fault.times -= 1
                return fault
        return None

    def _reply(self, path: str, payload: dict, fault: Fault | None) -> tuple[int, bytes]:
        if fault and fault.kind in ("500", "400"):
            return int(fault.kind), b'{"error": "injected"}'
        if fault and fault.kind == "malformed":
            return 200, b'{"choices": [ not json'
        if fault and fault.kind == "timeout":
            time.sleep(fault.delay)
        text = self.respond(path, payload)
        body = self._body(path, text)
        if fault and fault.kind == "missing":
            body = {"unexpected": True}
        return 200, json.dumps(body).encode()

    def _body(self, path: str, text: str) -> dict:
        if path == "/v1/chat/completions":
            message = {"role": "assistant", "content": text}
            return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        if path == "/v1/completions":
            return {"choices": [{"index": 0, "text": text, "finish_reason": "stop"}]}
        if path == "/generate":
            return {"text": text, "meta_info": {}}
        return {self.answer_field: text}

    def _handler_class(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length) or b"{}")
                record, fault = stub._begin(self.path, payload)
                try:
                    time.sleep(stub.delay)
                    status, body = stub._reply(self.path, payload, fault)
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (an injected timeout)
                finally:
                    stub._end(record)

            def log_message(self, *args) -> None:
                pass

        return Handler


def closed_port_url(path: str = "/answer") -> str:
    """The URL of a port nothing listens on: a server that is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"
