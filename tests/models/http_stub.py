"""A local HTTP server standing in for vLLM/SGLang/answer servers in tests.

It answers `/v1/chat/completions`, `/v1/completions`, `/generate` and `/answer` with the text
`reply(payload)` gives (and `GET /v1/models` with `models`, 422 for fields in `refuse`, 400 for
a request longer than `context`), records every request (path, payload, start and end times) and the most
requests it had in flight at once, and injects faults: `faults` are used up one per request,
in arrival order; `fault_for(payload)` can fault chosen requests every time.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def send_json(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
    """Answer with JSON bytes; a client that already gave up (a timeout test) is no error."""
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def default_reply(payload: dict) -> str:
    """Distinct for every seed (OpenAI-style servers) and every sample (answer servers)."""
    return f"reply to seed={payload.get('seed')} sample={payload.get('sample_id')}"


class LocalServer:
    """An HTTP server on 127.0.0.1 (a free port), served by a daemon thread from `start()` to
    `stop()`; subclasses give the handler class."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        # `shutdown()` returns at serve_forever's next poll: the default interval (0.5 s) held
        # every test that stops a server for about that long
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.stopping = threading.Event()  # set by `stop()`: what waits in a handler ends

    def url(self, path: str) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{path}"

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class Stub(LocalServer):
    def __init__(self) -> None:
        self.reply = default_reply
        self.answer_field = "answer"
        self.faults: list[str] = []
        self.fault_for = lambda payload: None
        self.slow_seconds = 1.0
        self.delay = 0.0  # every request takes at least this long
        # concurrency checks: each request waits until this many were in flight at once (or the
        # stub stops), so that a client's concurrency is reached however slowly its threads start
        self.gather: int | None = None
        self._gathered = threading.Event()
        # requests after the first `held_after` wait for `release` before they are answered
        self.held_after: int | None = None
        self.release = threading.Event()
        self.refuse: set[str] = set()  # fields answered with 422, as transformers serve does
        self.models: dict | None = None  # what GET /v1/models answers (404 when None)
        self.context: int | None = None  # refuse prompt (30 tokens) + max_tokens beyond it
        self.context_message = (
            "This model's maximum context length is {context} tokens. "
            "However, you requested {total} tokens ({prompt} in the "
            "messages, {asked} in the completion)."
        )
        self.records: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        super().__init__(_handler_for(self))

    def payloads(self, path: str | None = None) -> list[dict]:
        return [r["payload"] for r in self.records if path is None or r["path"] == path]

    def _begin(self, path: str, payload: dict) -> tuple[dict, str | None]:
        with self._lock:
            record = {"path": path, "payload": payload, "number": len(self.records)}
            record["start"] = time.monotonic()
            self.records.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self.gather is not None and self.max_in_flight >= self.gather:
                self._gathered.set()
            fault = self.faults.pop(0) if self.faults else self.fault_for(payload)
        return record, fault

    def wait_for_gathering(self) -> None:
        while self.gather is not None and not self._gathered.wait(0.05):
            if self.stopping.is_set():
                break

    def _release(self, record: dict) -> None:
        """The request stops counting as in flight (its answer is about to leave)."""
        with self._lock:
            if not record.get("released"):
                record["released"] = True
                self.in_flight -= 1

    def _end(self, record: dict) -> None:
        """The answer has been written: the request was answered."""
        self._release(record)
        record["end"] = time.monotonic()

    def body(self, path: str, text: str) -> dict:
        if path == "/v1/chat/completions":  # with the fields an OpenAI client requires
            message = {"role": "assistant", "content": text}
            choices = [{"index": 0, "message": message, "finish_reason": "stop"}]
            return {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": choices,
            }
        if path == "/v1/completions":
            return {"choices": [{"index": 0, "text": text, "finish_reason": "stop"}]}
        if path == "/generate":
            return {"text": text, "meta_info": {"finish_reason": {"type": "stop"}}}
        return {self.answer_field: text}


def _handler_for(stub: Stub):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/v1/models" and stub.models is not None:
                self._send(200, json.dumps(stub.models).encode())
            else:
                self._send(404, b'{"error": "not found"}')

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.record, fault = stub._begin(self.path, payload)
            try:
                if stub.held_after is not None and self.record["number"] >= stub.held_after:
                    stub.release.wait()
                stub.wait_for_gathering()
                time.sleep(stub.delay)
                self._respond(payload, fault)
            finally:
                stub._end(self.record)

        def _respond(self, payload: dict, fault: str | None) -> None:
            if fault == "slow":  # until the client gave up, or the stub stops
                stub.stopping.wait(stub.slow_seconds)
            asked = payload.get("max_tokens", 0)
            if stub.context and asked + 30 > stub.context:
                message = stub.context_message.format(
                    context=stub.context, total=asked + 30, prompt=30, asked=asked
                )
                self._send(400, json.dumps({"message": message}).encode())
                return
            unexpected = stub.refuse & payload.keys()
            if unexpected:
                detail = f"Unexpected fields in the request: {unexpected}"
                self._send(422, json.dumps({"detail": detail}).encode())
                return
            if fault in ("500", "400"):
                self._send(int(fault), b'{"error": "injected"}')
            elif fault == "malformed":
                self._send(200, b'{"choices": [')
            elif fault == "missing":
                self._send(200, b'{"unexpected": 1}')
            else:
                body = stub.body(self.path, stub.reply(payload))
                self._send(200, json.dumps(body).encode())

        def _send(self, status: int, data: bytes) -> None:
            # no longer in flight before the answer leaves: the client may send its next
            # request the moment it has read this one's
            if getattr(self, "record", None) is not None:
                stub._release(self.record)
            send_json(self, status, data)

        def log_message(self, *args) -> None:
            pass

    return Handler
