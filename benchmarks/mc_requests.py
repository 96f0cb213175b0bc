"""Harness speed on MMLU multiple choice: all 14,042 `mmlu_mc_tulu` docs (57 subjects, 56,168
log-likelihood requests) built, answered by the `replay` model from recorded values and scored
through lm-eval 0.4.13 in chat mode, so the harness is measured, not a model. Also counts the
distinct contexts each doc sends: the `evalpack-completions` backend sends one HTTP request per
distinct context (all its continuations in one prompt list).

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/mc_requests.py [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager

from evalpack.core import data
from evalpack.core.resources import tasks_dir
from evalpack.models.loglikelihood import group_by_context
from evalpack.models.replay import ReplayLM

GROUP = "mmlu_mc_tulu"


class CountingReplay(ReplayLM):
    """`replay`, timing its answers and keeping each request's (task, doc, context)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.seen: list[tuple[str, int, str, str]] = []
        self.answer_seconds = 0.0

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        start = time.perf_counter()
        answers = super().loglikelihood(requests, disable_tqdm)
        self.answer_seconds += time.perf_counter() - start
        self.seen += [(r.task_name, r.doc_id, r.args[0], r.args[1]) for r in requests]
        return answers


def subjects() -> list[str]:
    manager = TaskManager(include_path=str(tasks_dir()), include_defaults=False)
    return [name.removeprefix(f"{GROUP}_") for name in manager.load([GROUP])["group_map"][GROUP]]


def replay_rows(names: list[str], limit: int | None) -> list[dict]:
    """Synthetic log-likelihoods for every doc's 4 continuations (fixed seed)."""
    rnd = random.Random(0)
    rows = []
    for subject in names:
        docs = data.load_split("cais/mmlu", subject, "test")
        for doc_id in range(len(docs) if limit is None else min(limit, len(docs))):
            rows += [
                {
                    "task": f"{GROUP}_{subject}",
                    "doc_id": doc_id,
                    "continuation": letter,
                    "loglikelihood": -rnd.uniform(0.01, 8.0),
                }
                for letter in "ABCD"
            ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="docs per subject")
    args = parser.parse_args()
    if not os.environ.get(data.DATA_DIR_ENV):
        default = Path(__file__).resolve().parents[2] / "shared" / "data"
        os.environ[data.DATA_DIR_ENV] = str(default)
    rows = replay_rows(subjects(), args.limit)
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "replay.jsonl"
        file.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        lm = CountingReplay(completions=str(file))
        start = time.perf_counter()
        out = simple_evaluate(
            model=lm,
            tasks=[GROUP],
            limit=args.limit,
            apply_chat_template=True,
            fewshot_as_multiturn=True,
            task_manager=TaskManager(include_path=str(tasks_dir()), include_defaults=False),
        )
        seconds = time.perf_counter() - start
    contexts = defaultdict(set)
    for task, doc_id, context, _ in lm.seen:
        contexts[(task, doc_id)].add(context)
    sent = len(group_by_context([(c, cont) for _, _, c, cont in lm.seen], [""] * len(lm.seen)))
    requests, docs = len(lm.seen), len(contexts)
    print(f"{docs} docs, {requests} log-likelihood requests, {os.cpu_count()} cores")
    print(
        f"build + answer + score through lm-eval: {seconds:.1f} s = {requests / seconds:.0f} "
        f"requests/s ({docs / seconds:.0f} docs/s); replay answering: {lm.answer_seconds:.2f} s"
    )
    print(
        f"distinct contexts per doc: {sum(map(len, contexts.values())) / docs:.2f}; "
        f"evalpack-completions would send {sent} HTTP requests "
        f"({sent / docs:.2f} per doc, {requests / sent:.1f} continuations each)"
    )
    print(
        f"{GROUP} acc_raw (macro) on the synthetic values: "
        f"{out['results'][GROUP]['acc_raw,none']:.4f}"
    )


if __name__ == "__main__":
    main()
