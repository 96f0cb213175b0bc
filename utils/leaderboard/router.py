"""One URL in front of a checkpoint's replicas (`serve`): every request goes to the running
replica with the fewest requests outstanding (the first of them among equals), so one stream of
work (`stream`) keeps all replicas equally busy however long each answer takes. A replica that
has exited gets nothing more; a request that finds no running replica, or loses its replica
mid-way, is answered 502 with the reason, which the served backend retries as a server error.
"""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .serve import Server

FORWARD_TIMEOUT = 24 * 3600.0  # the backend's own timeout is the one that counts
HEADERS = ("Content-Type", "Authorization", "Accept")


class Router:
    def __init__(self, servers: list[Server]) -> None:
        self.servers = servers
        self.outstanding = [0] * len(servers)
        self.sent = [0] * len(servers)  # requests each replica got, for the log
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> Router:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def take(self) -> int | None:
        """The running replica with the fewest outstanding requests, now one more; None if no
        replica runs."""
        with self.lock:
            running = [n for n, server in enumerate(self.servers) if server.exited() is None]
            if not running:
                return None
            chosen = min(running, key=lambda n: self.outstanding[n])
            self.outstanding[chosen] += 1
            self.sent[chosen] += 1
            return chosen

    def done(self, replica: int) -> None:
        with self.lock:
            self.outstanding[replica] -= 1

    def forward(self, method: str, path: str, body: bytes | None, headers: dict):
        """(status, body, content type) of the request sent on to a replica."""
        replica = self.take()
        if replica is None:
            return 502, json.dumps({"error": "no replica is running"}).encode(), "application/json"
        server = self.servers[replica]
        try:
            connection = http.client.HTTPConnection("127.0.0.1", server.port, FORWARD_TIMEOUT)
            connection.request(method, path, body=body, headers=headers)
            answer = connection.getresponse()
            data = answer.read()
            connection.close()
            return answer.status, data, answer.getheader("Content-Type", "application/json")
        except (OSError, http.client.HTTPException) as exc:
            reason = f"replica {server.replica} on port {server.port} failed: {exc}"
            return 502, json.dumps({"error": reason}).encode(), "application/json"
        finally:
            self.done(replica)

    def handler(self):
        router = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def relay(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: self.headers[k] for k in HEADERS if self.headers.get(k)}
                status, data, kind = router.forward(method, self.path, body, headers)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout)

            def do_GET(self) -> None:
                self.relay("GET")

            def do_POST(self) -> None:
                self.relay("POST")

        return Handler
