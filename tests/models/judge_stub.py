"""A judge on 127.0.0.1 for the AlpacaEval tests: a real HTTP server answering OpenAI
`/v1/chat/completions` requests the way the annotator asks for them (one token, its top
log-probabilities in OpenAI's format, `usage`).

`prefer` maps a model output (the text the evaluated model answered) to the probability the
judge gives it: the stub finds which identifier ("m" or "M") holds that output in the
annotator's prompt and puts that probability on it (None: neither token among the top ones;
another question gets 0.5). `faults` ("429", "500", "400") are used up
one per request in arrival order; `fault_for(payload)` faults chosen requests every time; a
"slow" fault answers after `slow_seconds` (or once the stub stops). `delay` slows every answer;
with `gather`, each request waits until that many were in flight at once (a concurrency check
that no slow thread start can fail), and `max_in_flight` is the most requests handled at once. Every request's payload and Authorization header are
recorded. Stop it with `stop()` on its handle.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.models.http_stub import LocalServer, send_json

PATH = "/v1/chat/completions"
_OUTPUT = re.compile(r'"model_identifier": "(m|M)",\s*"output": """(.*?)"""\n    }', re.DOTALL)


def prompt_outputs(payload: dict) -> dict[str, str]:
    """{identifier: output} as shown to the judge in the annotator's user message."""
    user = next(m["content"] for m in payload["messages"] if m["role"] == "user")
    return dict(_OUTPUT.findall(user))


def top_logprobs(p_m: float) -> list[dict]:
    """Top tokens with p("m") = p_m and p("M") = 1 - p_m, plus a distractor."""
    top = [
        {"token": t, "logprob": math.log(p), "bytes": list(t.encode())}
        for t, p in (("m", p_m), ("M", 1 - p_m))
        if p > 0
    ]
    top.append({"token": "Model", "logprob": -20.0, "bytes": list(b"Model")})
    return sorted(top, key=lambda t: -t["logprob"])


class JudgeStub(LocalServer):
    def __init__(self, prefer: dict[str, float | None]) -> None:
        self.prefer = prefer
        self.faults: list[str] = []
        self.fault_for = lambda payload: None
        self.records: list[dict] = []
        self.delay = 0.0
        self.gather: int | None = None
        self._gathered = threading.Event()
        self.logprobs = True  # False: answers without log-probabilities (a judge that lacks them)
        self.slow_seconds = 2.0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        super().__init__(_handler_for(self))

    @property
    def base_url(self) -> str:
        return self.url("/v1")

    def payloads(self) -> list[dict]:
        return [r["payload"] for r in self.records]

    def answer(self, payload: dict) -> dict:
        outputs = prompt_outputs(payload)
        model_id = next((i for i, text in outputs.items() if text in self.prefer), "m")
        p_model = self.prefer.get(outputs.get(model_id), 0.5)  # 0.5: a question of its own
        if p_model is None:  # an answer that names neither output
            top = [{"token": "Both", "logprob": -0.1, "bytes": list(b"Both")}]
        else:
            top = top_logprobs(p_model if model_id == "m" else 1 - p_model)
        prompt_tokens = sum(len(m["content"]) for m in payload["messages"]) // 4
        return {
            "id": "stub",
            "object": "chat.completion",
            "model": payload["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "length",
                    "message": {"role": "assistant", "content": top[0]["token"]},
                    "logprobs": {"content": [{**top[0], "top_logprobs": top}]}
                    if self.logprobs
                    else None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": 1,
                "total_tokens": prompt_tokens + 1,
            },
        }

    def _fault(self, payload: dict) -> str | None:
        with self._lock:
            return self.faults.pop(0) if self.faults else self.fault_for(payload)


def _handler_for(stub: JudgeStub):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with stub._lock:
                stub.records.append(
                    {
                        "path": self.path,
                        "payload": payload,
                        "authorization": self.headers.get("Authorization"),
                    }
                )
            fault = stub._fault(payload)
            with stub._lock:
                stub.in_flight += 1
                stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                if stub.gather is not None and stub.max_in_flight >= stub.gather:
                    stub._gathered.set()
            try:
                while stub.gather is not None and not stub._gathered.wait(0.05):
                    if stub.stopping.is_set():
                        break
                if fault == "slow":
                    stub.stopping.wait(stub.slow_seconds)
                else:
                    time.sleep(stub.delay)
                self._answer(payload, None if fault == "slow" else fault)
            finally:
                with stub._lock:
                    stub.in_flight -= 1

        def _answer(self, payload: dict, fault: str | None) -> None:
            if self.path != PATH:
                self._send(404, {"error": f"no route {self.path}"})
            elif fault is not None:
                self._send(int(fault), {"error": {"message": f"injected {fault}"}})
            else:
                self._send(200, stub.answer(payload))

        def _send(self, status: int, body: dict) -> None:
            send_json(self, status, json.dumps(body).encode())

        def log_message(self, *args) -> None:
            pass

    return Handler
