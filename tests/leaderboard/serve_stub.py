"""A model server for the board to start (`serve: command`) in tests, as a process of its own:

    python serve_stub.py --port P --record FILE [--never-up] [--die-after N --once FILE] [--hold]

It answers `GET /health` and OpenAI chat completions (`POST /v1/chat/completions`) with a text
that depends on the request's seed only (the same for every server), and appends one JSON line
per event to `--record`: its start (pid, port, CUDA_VISIBLE_DEVICES) and each answered request
(pid, sample seed). Faults: `--never-up` never answers /health; `--die-after N` exits after
answering N requests, once: only while the file `--once` does not exist yet (it creates it);
`--hold` answers no completion (a server busy for ever, to be stopped from outside).
"""

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--never-up", action="store_true")
    parser.add_argument("--die-after", type=int)
    parser.add_argument("--once")
    parser.add_argument("--hold", action="store_true")
    args = parser.parse_args()
    lock, answered = threading.Lock(), [0]
    dying = args.die_after is not None and not os.path.exists(args.once)
    if dying:
        open(args.once, "w").close()

    def note(**row) -> None:
        with lock, open(args.record, "a") as out:
            out.write(json.dumps({"pid": os.getpid(), "port": args.port, **row}) + "\n")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a) -> None:
            pass

        def send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health" and not args.never_up:
                self.send(200, {})
            else:
                self.send(404, {"error": "not up"})

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            while args.hold:
                time.sleep(1)
            time.sleep(0.05)
            with lock:
                if dying and answered[0] >= args.die_after:
                    print(f"stub: dying after {answered[0]} answers", flush=True)
                    os._exit(3)
                answered[0] += 1
            note(seed=payload.get("seed"))
            text = f"The answer is $\\boxed{{{payload.get('seed', 0) % 7}}}$."
            self.send(200, {"choices": [{"index": 0, "message": {"content": text}}]})

    note(event="start", cuda=os.environ.get("CUDA_VISIBLE_DEVICES"))
    print(f"stub: serving on port {args.port}", flush=True)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    sys.exit(main())
