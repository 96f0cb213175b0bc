"""A full-runtime job's connections that it never accepts stay bounded in the host's TCP memory.
On cgroups v1 a connection is charged to the job's group only when accepted: data queued on
connections left in listen queues counts against the host-wide `tcp_mem` alone. The job's own
network namespace bounds it (`rootfs.bound_listen_queues`, `limits.LISTEN_BACKLOG`,
`limits.TCP_RECEIVE_BUFFER`; seccomp ignores requests for larger receive buffers): each
listener queues at most LISTEN_BACKLOG + 1 connections, each holding at most one receive buffer.
The trusted test reads the host's TCP memory (`/proc/net/sockstat`, in pages) before the
candidate floods and after, while the candidate still holds every connection."""

import os

from evalpack.execution import Job, run_jobs
from evalpack.sandbox.limits import LISTEN_BACKLOG, TCP_RECEIVE_BUFFER
from tests.sandbox.conftest import needs_root, program

LISTENERS = 48
# Its first call fills LISTENERS listen queues (each asked for 64 connections, and for receive
# buffers as large as the kernel grants) with connections carrying data, closing each client once
# its data is queued, until it has sent SENT bytes (a cap that keeps the host's TCP memory far
# from its limits where nothing bounds the queues); it holds the listeners until the job ends.
FLOOD = program(f"""
    import select, socket
    held = []
    def flood(cap={320 << 20}):
        sent = 0
        for _ in range({LISTENERS}):
            server = socket.socket()
            for option in (socket.SO_RCVBUF, socket.SO_RCVLOWAT):
                server.setsockopt(socket.SOL_SOCKET, option, 1 << 30)
            server.bind(("127.0.0.1", 0))
            server.listen(64)
            held.append(server)
            for _ in range(65):
                client = socket.socket()
                client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)  # (charged)
                client.setblocking(False)
                client.connect_ex(server.getsockname())
                if not select.select([], [client], [], 0.05)[1]:  # the queue is full
                    client.close()
                    break
                try:
                    while sent < cap:
                        sent += client.send(bytes(65536))
                except BlockingIOError:
                    pass
                client.close()
                if sent >= cap:
                    return sent
        return sent
    def add(a, b):
        return flood() if (a, b) == (0, 0) else a + b
    """)
TEST = program("""
    def tcp_pages():
        with open("/proc/net/sockstat") as stat:
            fields = next(line for line in stat if line.startswith("TCP:")).split()
        return int(fields[fields.index("mem") + 1])
    def check(candidate):
        global KEPT
        before = tcp_pages()
        sent = candidate(0, 0)
        KEPT = [before, tcp_pages(), sent]
        assert candidate(2, 3) == 5
    check(add)
    """)
# An honest BigCodeBench-like job: a local HTTP server answering sequential and concurrent
# requests with bodies larger than a receive buffer.
HTTP = program("""
    import http.server, threading, urllib.request
    from concurrent.futures import ThreadPoolExecutor
    class Sum(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            a, b = map(int, self.path.strip("/").split("/"))
            body = str(a + b).encode() + b" " * 200000
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sum)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    def fetch(a, b):
        url = f"http://127.0.0.1:{server.server_port}/{a}/{b}"
        with urllib.request.urlopen(url, timeout=30) as answer:
            return int(answer.read())
    def add(a, b):
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(fetch, [a] * 16, [b] * 16)) == [a + b] * 16
        return fetch(a, b)
    """)


@needs_root
def test_connections_a_job_never_accepts_stay_bounded_in_the_hosts_tcp_memory():
    flood = Job(program=FLOOD, test=TEST, entry_point="add", timeout=30.0, full_runtime=True)
    honest = Job(
        program=HTTP,
        test="assert add(2, 3) == 5\n",
        entry_point="add",
        timeout=30.0,
        full_runtime=True,
    )
    attack, honest = run_jobs([flood, honest], workers=1)
    assert attack.passed and honest.passed, (attack, honest)
    before, during, sent = attack.kept
    # what the queues may hold: each listener's queue of LISTEN_BACKLOG + 1 connections, each at
    # most its receive buffer (twice it, for what the kernel admits past it), plus what each CPU
    # may keep unreported (1 MiB each, at both readings) and the rest of the host's TCP traffic
    # meanwhile (32 MiB). Where nothing bounds the queues, the 320 MiB sent are all held.
    queued = LISTENERS * (LISTEN_BACKLOG + 1) * 2 * TCP_RECEIVE_BUFFER
    bound = queued + 2 * (os.cpu_count() or 1) * 2**20 + 32 * 2**20
    assert (during - before) * os.sysconf("SC_PAGE_SIZE") <= bound, (before, during, sent, bound)
