"""A simulated GPU node running a board of checkpoints three ways, in one run (seconds):

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/gpu_node.py \\
        [--gpus 8] [--checkpoints 16] [--startup 60] [--slots 256] [--tokens-per-second 30]

* `board`: the leaderboard with `serve:` (`evalpack.leaderboard.gpu_pool`): each checkpoint's server
  on one GPU; its whole suite as one stream (heavily scored tasks first, as `stream` orders it);
  the server stopped at its last answer and the next checkpoint's server started on that GPU;
* `one after another`: the hand-written script: one checkpoint at a time on every GPU (a
  replica each, requests balanced across them), the next started when it is done;
* `lm-eval per pair`: one lm-eval run per (checkpoint, task), each loading its model (a server
  start) on a free GPU and sending its task's requests alone (scoring is not counted: the
  baseline's best case).

Servers follow `benchmarks/stream.py`'s continuous-batching cost model on a virtual clock: at
most `--slots` sequences in flight per GPU, each taking `--prefill-ms` per prompt token
(`--prompt-tokens` each) plus its answer's tokens at `--tokens-per-second`; a server answers
nothing for `--startup` seconds after it is started. The requests are the suite's servable
tasks whose data is in the mirror (every doc, HumanEval's 20 samples), each answer's length a
real output of its benchmark (`../shared/reference/outputs`, as `stream.py` picks them).

Printed for each way: the wall time up to the last answer, the ideal (one start-up plus every
GPU's slots busy from then on: total sequence-seconds / (slots x GPUs)), how far the wall time
is from it, and the GPU-busy fraction from the board's first request to its last answer (a GPU
counts as busy while its server has at least slots - k sequences in flight, k = slots // 10).
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import os
import sys
from pathlib import Path

from evalpack.core import catalog
from evalpack.leaderboard import plan

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stream as stream_bench  # benchmarks/stream.py: the outputs and families


def task_requests(entry: dict, outputs: dict) -> list[int]:
    """Answer tokens of every request of one task (every doc of every leaf, its repeats)."""
    family = next(
        (f for prefix, f in stream_bench.FAMILIES.items() if entry["task"].startswith(prefix)),
        "default",
    )
    texts = outputs[family]
    tokens = []
    for leaf in catalog.leaves(entry["task"]):
        config = catalog.task_config(leaf)
        cap = (config.get("generation_kwargs") or {}).get("max_gen_toks", 1024)
        docs = sum(
            len(f.read_text(encoding="utf-8").splitlines())
            for f in plan.task_needs({"task": leaf}, {}).files
        )
        for doc in range(docs):
            for repeat in range(stream_bench.REPEATS.get(entry["task"], 1)):
                key = hashlib.sha256(f"{leaf}/{doc}/{repeat}".encode()).digest()
                text = texts[int.from_bytes(key[:4], "big") % len(texts)]
                tokens.append(min(max(1, len(text) // 4), cap))
    return tokens


def suite_work(suite: str) -> list[tuple[str, list[int]]]:
    """(task, answer tokens of its requests) of the suite's servable tasks with mirror data, in
    the stream's order: heavily scored tasks first."""
    outputs = stream_bench.real_outputs()
    entries = [
        e
        for e in catalog.suite_tasks(catalog.load_suites(), suite)
        if e["task"] not in stream_bench.NOT_SERVABLE
        and all(f.is_file() for f in plan.task_needs(e, {}).files)
    ]
    entries.sort(key=lambda e: not catalog.heavy_scoring(e["task"]))
    return [(e["task"], task_requests(e, outputs)) for e in entries]


class Node:
    """The cost model: a request's seconds, and a server's requests on its lanes."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.slots, self.startup = args.slots, args.startup
        self.prefill = args.prompt_tokens * args.prefill_ms / 1000
        self.speed = args.tokens_per_second
        self.servers: list[tuple[int, list[tuple[float, float]]]] = []  # (GPUs, request spans)

    def serve(self, tokens: list[int], start: float, gpus: int) -> float:
        """A server on `gpus` GPUs (a replica each, `slots` lanes each) started at `start`
        answers `tokens`' requests in order, each on the first free lane; its last answer's time."""
        lanes = [start + self.startup] * (self.slots * gpus)
        spans = []
        for count in tokens:
            begin = heapq.heappop(lanes)
            end = begin + self.prefill + count / self.speed
            spans.append((begin, end))
            heapq.heappush(lanes, end)
        self.servers.append((gpus, spans))
        return max(end for _, end in spans)

    def seconds(self) -> float:
        """Sequence-seconds of every request."""
        return sum(end - begin for _, spans in self.servers for begin, end in spans)

    def busy(self, gpus: int) -> float:
        """GPU-busy fraction from the first request to the last answer: each server's GPUs count
        while it has at least (slots - k) sequences in flight per GPU."""
        first = min(begin for _, spans in self.servers for begin, _ in spans)
        last = max(end for _, spans in self.servers for _, end in spans)
        threshold = self.slots - self.slots // 10
        busy = 0.0
        for size, spans in self.servers:
            moments = sorted([(b, 1) for b, _ in spans] + [(e, -1) for _, e in spans])
            level, previous = 0, first
            for moment, step in moments:
                if level >= size * threshold:
                    busy += (moment - previous) * size
                level, previous = level + step, moment
        return busy / (gpus * (last - first))


def board_way(node: Node, work: list[int], checkpoints: int, gpus: int) -> float:
    """Each checkpoint's whole suite on one GPU; a freed GPU starts the next checkpoint."""
    free = [0.0] * gpus
    for _ in range(checkpoints):
        heapq.heappush(free, node.serve(work, heapq.heappop(free), 1))
    return max(free)


def one_after_another(node: Node, work: list[int], checkpoints: int, gpus: int) -> float:
    now = 0.0
    for _ in range(checkpoints):
        now = node.serve(work, now, gpus)
    return now


def per_pair(node: Node, tasks: list[list[int]], checkpoints: int, gpus: int) -> float:
    free = [0.0] * gpus
    for _ in range(checkpoints):
        for tokens in tasks:
            heapq.heappush(free, node.serve(tokens, heapq.heappop(free), 1))
    return max(free)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="tulu_3_dev")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--checkpoints", type=int, default=16)
    parser.add_argument("--startup", type=float, default=60.0, help="seconds per server start")
    parser.add_argument("--slots", type=int, default=256, help="sequences in flight per GPU")
    parser.add_argument("--tokens-per-second", type=float, default=30.0, help="per sequence")
    parser.add_argument("--prefill-ms", type=float, default=0.02, help="per prompt token")
    parser.add_argument("--prompt-tokens", type=int, default=1000, help="per request")
    args = parser.parse_args()
    if not os.environ.get("EVALPACK_DATA_DIR"):
        sys.exit("set EVALPACK_DATA_DIR (the offline mirror, e.g. ../shared/data)")
    tasks = suite_work(args.suite)
    work = [count for _, tokens in tasks for count in tokens]
    print(
        f"{args.checkpoints} checkpoints x {args.suite} ({', '.join(t for t, _ in tasks)}: "
        f"{len(work)} requests each) on {args.gpus} GPUs; {args.startup:g} s per server start, "
        f"{args.slots} slots per GPU at {args.tokens_per_second:g} tokens/s each"
    )
    print(f"{'way':24s} {'wall s':>8s} {'ideal s':>8s} {'over':>6s} {'GPU busy':>9s}")
    ways = {
        "board (serve, --gpus)": lambda n: board_way(n, work, args.checkpoints, args.gpus),
        "one after another": lambda n: one_after_another(n, work, args.checkpoints, args.gpus),
        "lm-eval per pair": lambda n: per_pair(
            n, [tokens for _, tokens in tasks], args.checkpoints, args.gpus
        ),
    }
    for label, way in ways.items():
        node = Node(args)
        wall = way(node)
        ideal = args.startup + node.seconds() / (args.slots * args.gpus)
        print(
            f"{label:24s} {wall:8.0f} {ideal:8.0f} {wall / ideal - 1:6.1%} "
            f"{node.busy(args.gpus):9.1%}",
            flush=True,
        )


if __name__ == "__main__":
    main()
