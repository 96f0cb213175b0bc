"""One served checkpoint of a suite against a simulated continuous-batching server: its pairs
one after the other (the way before the stream) vs one stream of work (`stream`), in one
run; `--ways tokens,stream` compares the stream's order before (the most generation first)
and now (heavily scored tasks first: their scoring overlaps the others' generation).

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/stream.py \\
        [--limit N] [--scale 4] [--slots 256] [--tokens-per-second 30] [--prefill-ms 0.02] \\
        [--ways pairs,tokens,stream]

The server (OpenAI chat completions on 127.0.0.1) behaves like vLLM's scheduler seen from the
client: at most `--slots` sequences in flight (others queue), each generating at a fixed
tokens/s after a prefill that costs `--prefill-ms` per prompt token (4 characters a token).
Without `--limit` it serves the whole checkpoint (every doc of every task, HumanEval and
HumanEval+ at their 20 samples); `--scale F` runs the server's clock F times faster (tokens/s
times F, prefill divided by F) so that a whole checkpoint fits in minutes: the client's own
work (building, scoring, HTTP) is not scaled, so a scaled run is harder on the client than
the real clock.
Each answer is a real model output from `../shared/reference/outputs/` of the request's
benchmark (the request's seed names its task: the client derives it from (task, doc, repeat)),
so response lengths follow each task's real distribution (tasks without recorded outputs draw
from all of them), capped at the request's `max_tokens`.

Printed for each way: wall time (worker start to the last task's results), the ideal (the
server's total sequence-seconds / slots: every slot busy from start to end), how far the wall
time is from it, and the server's busy fraction (time with at least slots - k sequences in
flight / wall time, k = `--slack`); then the same up to the last answer (`answers s`), which
leaves out the scoring that follows it (the client's CPU work: on a 2-core machine the
execution of HumanEval's programs outlasts the generation). The tasks are the suite's generation tasks that a chat server can run (multiple-choice
tasks need log-likelihoods and AlpacaEval a judge).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from evalpack.core import catalog
from evalpack.leaderboard import executors
from evalpack.leaderboard.rundirs import DONE_MARKER, FAILED_MARKER
from evalpack.models.served import request_seed

REPO = Path(__file__).resolve().parents[1]
OUTPUTS = REPO.parent / "shared" / "reference" / "outputs"
SEED = 1234
# task-name prefix -> the file of real outputs whose lengths it gets
FAMILIES = {
    "gsm8k": "gsm8k",
    "minerva_math": "math",
    "bbh": "bbh",
    "codex_humaneval": "humaneval",
    "ifeval": "ifeval",
}
NOT_SERVABLE = {"mmlu_mc_tulu", "truthfulqa_tulu", "alpaca_eval_v2_tulu"}  # log-likelihood, judge
REPEATS = {"codex_humaneval_tulu": 20, "codex_humanevalplus_tulu": 20}
MAX_DOCS = 2000  # docs per (sub)task a whole run knows answers for (GSM8K has 1,319)


class SimulatedEngine:
    """Slots, per-sequence speed, prefill cost; records every sequence's (start, end)."""

    def __init__(
        self, slots: int, tokens_per_second: float, prefill: float, answers: dict[int, str]
    ) -> None:
        self.slots = threading.BoundedSemaphore(slots)
        self.size, self.speed, self.prefill, self.answers = (
            slots,
            tokens_per_second,
            prefill,
            answers,
        )
        self.spans: list[tuple[float, float]] = []
        self.task_spans: dict[str, list[float]] = {}  # task: [first start, last end, requests]
        self.lock = threading.Lock()

    def complete(self, payload: dict) -> str:
        task, text = self.answers.get(payload.get("seed"), ("other", self.answers["default"]))
        tokens = min(max(1, len(text) // 4), int(payload.get("max_tokens", 10**6)))
        prompt_tokens = len(json.dumps(payload["messages"])) // 4
        with self.slots:
            start = time.monotonic()
            time.sleep(prompt_tokens * self.prefill + tokens / self.speed)
            end = time.monotonic()
            with self.lock:
                self.spans.append((start, end))
                first, _, count = self.task_spans.get(task, (start, end, 0))
                self.task_spans[task] = [first, end, count + 1]
        return text[: tokens * 4]

    def handler(self):
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                self._send({"data": [{"id": "sim", "max_model_len": 1 << 20}]})

            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text = engine.complete(payload)
                self._send(
                    {
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": text},
                            }
                        ]
                    }
                )

            def _send(self, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def real_outputs() -> dict[str, list[str]]:
    found = {}
    for family in set(FAMILIES.values()):
        with open(OUTPUTS / f"{family}.jsonl", encoding="utf-8") as fh:
            found[family] = [json.loads(line)["completion"] for line in fh if line.strip()]
    found["default"] = [text for texts in found.values() for text in texts]
    return found


def answers_by_seed(tasks: list[str], limit: int | None) -> dict:
    """(task, answer) the server gives each (task, doc, repeat)'s seed: a real output of the
    task's benchmark, picked by the seed (for the first `limit` docs, else `MAX_DOCS`)."""
    outputs = real_outputs()
    answers = {"default": outputs["default"][0]}
    for task in tasks:
        config = catalog.task_config(task)
        leaves = catalog.members(config) or [task]
        family = next((f for prefix, f in FAMILIES.items() if task.startswith(prefix)), "default")
        for leaf in leaves:
            for doc in range(limit or MAX_DOCS):
                for repeat in range(REPEATS.get(task, 1)):
                    seed = request_seed(SEED, leaf, doc, repeat)
                    digest = hashlib.sha256(str(seed).encode()).digest()
                    texts = outputs[family]
                    answers[seed] = (task, texts[int.from_bytes(digest[:4], "big") % len(texts)])
    return answers


def busy_fraction(spans: list[tuple[float, float]], start: float, end: float, at_least: int):
    """Share of [start, end] with at least `at_least` sequences in flight."""
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    busy, level, last = 0.0, 0, start
    for moment, step in events:
        if level >= at_least:
            busy += moment - last
        level, last = level + step, moment
    return busy / (end - start)


# the stream's order before heavily scored tasks went first: the worker sees no task as heavy
BY_TOKENS = "from evalpack.core import catalog\ncatalog.heavy_scoring = lambda *args: False\n"
WAYS = {  # name: (stream, label)
    "pairs": (False, "pairs one after the other (before)"),
    "tokens": (True, "stream, most generation first"),
    "stream": (True, "stream, heavy scoring first (now)"),
}


def worker_env(way: str, root: Path) -> dict:
    """The worker's environment: for `tokens`, a `sitecustomize` that restores the old order."""
    if way != "tokens":
        return {}
    folder = root / "by_tokens"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(BY_TOKENS)
    return {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
    }


def run_way(
    way_name: str,
    engine: SimulatedEngine,
    url: str,
    entries: list[dict],
    limit: int | None,
    root: Path,
) -> dict:
    engine.spans.clear()
    engine.task_spans.clear()
    checkpoint = {
        "name": "served",
        "model": "evalpack-chat",
        "model_args": {
            "base_url": url,
            "model": "sim",
            "num_concurrent": engine.size,
            "seed": SEED,
            "timeout": 3600,
        },
    }
    board = root / way_name
    extra = ["--limit", str(limit)] if limit else []
    spec = executors.unit_spec(executors.Unit(checkpoint, entries), board, extra)
    spec["stream"] = WAYS[way_name][0]
    spec["env"] = {**spec["env"], **worker_env(way_name, root)}
    start, since_epoch = time.monotonic(), time.time()
    executors.start_worker(spec, "local").wait()
    wall = time.monotonic() - start
    pairs = [Path(p["dir"]) for p in spec["pairs"]]
    ended = {
        p.name: (p / marker).stat().st_mtime - since_epoch
        for p in pairs
        for marker in (DONE_MARKER, FAILED_MARKER)
        if (p / marker).is_file()
    }
    return {
        "ended": ended,
        "wall": wall,
        "start": start,
        "end": start + wall,
        "spans": list(engine.spans),
        "tasks": {task: list(span) for task, span in engine.task_spans.items()},
        "done": sum((p / DONE_MARKER).is_file() for p in pairs),
        "failed": [p.name for p in pairs if (p / FAILED_MARKER).is_file()],
    }


def print_timeline(way: dict, slots: int) -> None:
    """Per task: when its first request started, its last ended, and the pair ended; then
    the mean sequences in flight in each twentieth of the wall time."""
    for task, (first, last, count) in sorted(way["tasks"].items(), key=lambda kv: kv[1][0]):
        print(
            f"    {task:28s} {count:6d} requests  {first - way['start']:7.1f} s -> "
            f"{last - way['start']:7.1f} s, pair ended {way['ended'].get(task, float('nan')):7.1f} s"
        )
    for task, ended in way["ended"].items():
        if task not in way["tasks"]:
            print(f"    {task:28s}      0 requests  pair ended {ended:7.1f} s")
    step = way["wall"] / 20
    means = []
    for n in range(20):
        lo, hi = way["start"] + n * step, way["start"] + (n + 1) * step
        held = sum(max(0.0, min(e, hi) - max(s, lo)) for s, e in way["spans"])
        means.append(f"{held / step:.0f}")
    print(f"    in flight (of {slots}) per {step:.1f} s: {' '.join(means)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="tulu_3_dev")
    parser.add_argument("--limit", type=int, default=None, help="docs per (sub)task; all if unset")
    parser.add_argument("--slots", type=int, default=256, help="sequences in flight")
    parser.add_argument("--slack", type=int, default=None, help="k (default slots // 10)")
    parser.add_argument("--tokens-per-second", type=float, default=30.0, help="per sequence")
    parser.add_argument("--prefill-ms", type=float, default=0.02, help="per prompt token")
    parser.add_argument("--scale", type=float, default=1.0, help="server clock speed-up")
    parser.add_argument(
        "--ways", default="pairs,stream", help=f"comma-separated, of {', '.join(WAYS)}"
    )
    parser.add_argument("--timeline", action="store_true", help="per task, and in flight")
    parser.add_argument("--keep", type=Path, help="write the boards here (else a temporary folder)")
    args = parser.parse_args()
    if not os.environ.get("EVALPACK_DATA_DIR"):
        sys.exit("set EVALPACK_DATA_DIR (the offline mirror, e.g. ../shared/data)")
    entries = [
        e
        for e in catalog.suite_tasks(catalog.load_suites(), args.suite)
        if e["task"] not in NOT_SERVABLE
    ]
    engine = SimulatedEngine(
        args.slots,
        args.tokens_per_second * args.scale,
        args.prefill_ms / 1000 / args.scale,
        answers_by_seed([e["task"] for e in entries], args.limit),
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), engine.handler())
    server.daemon_threads, server.request_queue_size = True, 4096
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
    slack = args.slots // 10 if args.slack is None else args.slack
    docs = f"--limit {args.limit}" if args.limit else "every doc"
    print(
        f"{args.suite}: {', '.join(e['task'] for e in entries)}; {docs}; {args.slots} slots, "
        f"{args.tokens_per_second:g} tokens/s each, prefill {args.prefill_ms:g} ms/token, "
        f"clock x{args.scale:g} ({args.tokens_per_second * args.scale:g} tokens/s, "
        f"{args.prefill_ms / args.scale:g} ms/token); busy: >= {args.slots - slack} in flight "
        f"(k = {slack})"
    )
    print(
        f"{'way':34s} {'wall s':>7s} {'ideal s':>8s} {'over':>6s} {'busy':>6s} "
        f"{'answers s':>10s} {'over':>6s} {'busy':>6s} {'requests':>9s} {'pairs':>6s}"
    )
    ways = args.ways.split(",")
    if not set(ways) <= set(WAYS):
        sys.exit(f"--ways: of {', '.join(WAYS)}")
    try:
        with tempfile.TemporaryDirectory(prefix="stream-bench-") as tmp:
            tmp = args.keep or tmp
            for name in ways:
                label = WAYS[name][1]
                way = run_way(name, engine, url, entries, args.limit, Path(tmp))
                ideal = sum(e - s for s, e in way["spans"]) / args.slots
                busy = busy_fraction(way["spans"], way["start"], way["end"], args.slots - slack)
                answered = max(e for _, e in way["spans"])
                busy_answering = busy_fraction(
                    way["spans"], way["start"], answered, args.slots - slack
                )
                answering = answered - way["start"]
                failed = f" failed: {', '.join(way['failed'])}" if way["failed"] else ""
                print(
                    f"{label:34s} {way['wall']:7.1f} {ideal:8.1f} "
                    f"{way['wall'] / ideal - 1:6.0%} {busy:6.0%} {answering:10.1f} "
                    f"{answering / ideal - 1:6.0%} {busy_answering:6.0%} "
                    f"{len(way['spans']):9d} {way['done']:3d}/{len(entries)}{failed}",
                    flush=True,
                )
                if args.timeline:
                    print_timeline(way, args.slots)
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
