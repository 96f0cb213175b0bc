"""A worker's unit whose checkpoint has a `serve:` block (`serve`): start its servers on the
GPUs the board gave it, stream its pairs into them (`stream`), and stop the servers the moment
every pair is through with the model (its last request answered), while the pairs' scoring
goes on; the board then gives those GPUs to the next checkpoint.

A server that does not come up fails every pair of the unit with the reason and the last lines
of the server's log. A server that dies mid-run fails its in-flight requests, hence their pairs
(a transient cause, retried by the board with fresh servers: the pairs resume from their
completion logs). The servers are stopped on every way out (Ctrl-C and SIGTERM included);
`serve.json` lets the board stop any that a killed worker left.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..core import catalog
from . import identity, stream
from .router import Router
from .rundirs import FAILED_MARKER, clear_unfinished, write_whole
from .serve import Server, free_port, record, stop_group, wait_healthy

log = logging.getLogger("evalpack.serve")
REQUEST_TYPES = {"multiple_choice": "loglikelihood"}  # lm-eval's request type of an output type


class Servers:
    """The replicas of one checkpoint on this node, and the router in front of them."""

    def __init__(self, spec: dict) -> None:
        self.ckpt_dir = Path(spec["checkpoint_dir"])
        self.serve = spec["serve"]
        self.gpus = [str(g) for g in spec.get("gpus", [])]
        per = self.serve["gpus_per_replica"]
        self.servers = [
            Server(n, self.gpus[n * per : (n + 1) * per], free_port(), self.log_of(n))
            for n in range(self.serve["replicas"])
        ]
        self.router: Router | None = None
        self.stopped = False
        self.lock = threading.Lock()

    def log_of(self, replica: int) -> Path:
        return self.ckpt_dir / f"server-{replica}.log"

    def start(self) -> str | None:
        """Start every replica and wait for them; the problem, or None once all answer."""
        began = time.monotonic()
        for server in self.servers:
            server.start(self.serve, self.serve["model"])
        record(self.ckpt_dir, self.servers, gpus=self.gpus, stopped=False)
        log.info("started %d server(s) on GPUs [%s]", len(self.servers), ",".join(self.gpus))
        problem = wait_healthy(self.servers, self.serve["start_timeout"])
        if problem:
            return problem
        if len(self.servers) > 1:
            self.router = Router(self.servers).start()
        record(self.ckpt_dir, self.servers, up=round(time.monotonic() - began, 1))
        return None

    @property
    def base_url(self) -> str:
        root = self.router.root if self.router else self.servers[0].root
        return root + self.serve["endpoint"]

    def stop(self) -> None:
        """Stop the router and every server's process group (once; safe from any thread)."""
        with self.lock:
            if self.stopped:
                return
            self.stopped = True
            if self.router:
                self.router.stop()
                log.info("requests per replica: %s", self.router.sent)
            for server in self.servers:
                if server.proc:
                    stop_group(server.proc.pid, server.proc)
            record(self.ckpt_dir, self.servers, stopped=True)
            log.info("servers stopped; GPUs [%s] free", ",".join(self.gpus))


def model_calls(task: str) -> int:
    """How many times a pair of `task` calls the model: once per request type of its leaves."""
    kinds = set()
    for leaf in catalog.leaves(task):
        kind = catalog.task_config(leaf).get("output_type", "generate_until")
        kinds.add(REQUEST_TYPES.get(kind, kind))
    return max(1, len(kinds))


class GenerationWatch:
    """Calls `then()` once every pair is through with the model: all its model calls returned,
    or the pair ended."""

    def __init__(self, pairs: list[dict], then: Callable[[], None]) -> None:
        self.left = {pair["task"]: model_calls(pair["task"]) for pair in pairs}
        self.then = then
        self.lock = threading.Lock()

    def through(self, pair: dict, ended: bool) -> None:
        with self.lock:
            left = 0 if ended else self.left[pair["task"]] - 1
            self.left[pair["task"]] = max(0, left)
            over = not any(self.left.values())
        if over:
            self.then()


def with_base_url(pair: dict, url: str) -> dict:
    """The pair with its checkpoint's `base_url` set to `url` in the pooled model's arguments."""
    argv = list(pair["argv"])
    at = argv.index("--model_args") + 1
    wrapped = json.loads(argv[at])
    inner = identity.as_mapping(wrapped.get("model_args"))
    wrapped["model_args"] = {**inner, "base_url": url}
    argv[at] = json.dumps(wrapped)
    return {**pair, "argv": argv}


def fail_all(pairs: list[dict], reason: str) -> None:
    for pair in pairs:
        folder = Path(pair["dir"])
        clear_unfinished(folder)
        folder.mkdir(parents=True, exist_ok=True)
        write_whole(folder / FAILED_MARKER, reason + "\n")


def run_served_unit(spec: dict, run_one: Callable[[dict], None]) -> None:
    """The unit's pairs (`run_one` each, side by side) against servers started for them."""
    servers = Servers(spec)
    try:
        problem = servers.start()
        if problem:
            log.error("%s", problem)
            servers.stop()
            fail_all(spec["pairs"], problem)
            return
        pairs = [with_base_url(pair, servers.base_url) for pair in spec["pairs"]]
        # stopped beside the pair whose model call was the last: its scoring goes on meanwhile
        watch = GenerationWatch(pairs, lambda: threading.Thread(target=servers.stop).start())
        stream.run_side_by_side(pairs, run_one, watch.through)
    finally:
        servers.stop()
