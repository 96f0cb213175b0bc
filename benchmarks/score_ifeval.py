"""IFEval scoring on real responses: GPT-4's 541 published IFEval responses judged by evalpack's
`ifeval_tulu` filter (OLMES's procedure, parallel, bounded, seeded) and by lm-eval 0.4.13's
built-in `ifeval` scoring (its `process_results`, one doc after another, language detection
unseeded as it ships), with the verdicts compared instruction by instruction, and both against
OLMES's own verdicts where the reference has them.

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/score_ifeval.py
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from evalpack.core import data
from evalpack.hooks import ifeval as tasks_ifeval
from evalpack.scoring.ifeval import checkers

SHARED = Path(__file__).resolve().parents[2] / "shared"
OUTPUTS = SHARED / "reference" / "outputs" / "ifeval.jsonl"
OLMES_SCORES = SHARED / "reference" / "olmes" / "scores_dev_ifeval.jsonl"


def load_cases() -> tuple[list[dict], list[str]]:
    docs = {d["doc_key"]: d for d in data.load_split("google/IFEval", None, "train")}
    rows = data.read_jsonl(OUTPUTS)
    return [docs[r["key"]] for r in rows], [r["completion"] for r in rows]


def run_evalpack(docs: list[dict], responses: list[str]) -> tuple[float, list[dict]]:
    start = time.perf_counter()
    records = tasks_ifeval.score_docs([[r] for r in responses], docs)
    return time.perf_counter() - start, records


def run_lm_eval(docs: list[dict], responses: list[str]) -> tuple[float, list[dict]]:
    from langdetect import DetectorFactory
    from lm_eval.tasks.ifeval import utils as lm_eval_ifeval

    seed, DetectorFactory.seed = DetectorFactory.seed, None  # as lm-eval ships it
    try:
        start = time.perf_counter()
        scores = [lm_eval_ifeval.process_results(d, [r]) for d, r in zip(docs, responses)]
        seconds = time.perf_counter() - start
    finally:
        DetectorFactory.seed = seed
    return seconds, [
        {"strict": s["inst_level_strict_acc"], "loose": s["inst_level_loose_acc"]} for s in scores
    ]


def summary(records: list[dict]) -> str:
    n_inst = sum(len(r["strict"]) for r in records)
    parts = [
        f"prompt strict {sum(all(r['strict']) for r in records) / len(records):.4f}",
        f"prompt loose {sum(all(r['loose']) for r in records) / len(records):.4f}",
        f"inst strict {sum(sum(r['strict']) for r in records) / n_inst:.4f}",
        f"inst loose {sum(sum(r['loose']) for r in records) / n_inst:.4f}",
    ]
    return ", ".join(parts)


def differences(docs: list[dict], ours: list[dict], theirs: list[dict]) -> list[str]:
    lines = []
    for doc, a, b in zip(docs, ours, theirs):
        for level in ("strict", "loose"):
            for iid, x, y in zip(doc["instruction_id_list"], a[level], b[level]):
                if x != y:
                    lines.append(
                        f"  IFEval key {doc['key']} {iid} {level}: evalpack {x}, lm-eval {y}"
                    )
    return lines


def against_olmes(docs: list[dict], records: list[dict]) -> str:
    by_key = {d["doc_key"]: r for d, r in zip(docs, records)}
    reference = data.read_jsonl(OLMES_SCORES)
    same = sum(
        by_key[row["key"]]["strict"] == row["inst_level_strict"]
        and by_key[row["key"]]["loose"] == row["inst_level_loose"]
        for row in reference
    )
    return f"{same}/{len(reference)} docs"


def main() -> None:
    os.environ.setdefault(data.DATA_DIR_ENV, str(SHARED / "data"))
    docs, responses = load_cases()
    checkers.registry()  # offline Punkt + seeded langdetect, before lm-eval's module loads
    ours_s, ours = run_evalpack(docs, responses)
    theirs_s, theirs = run_lm_eval(docs, responses)
    print(
        f"responses: {len(responses)} (GPT-4, IFEval authors' release), "
        f"{sum(len(d['instruction_id_list']) for d in docs)} instructions, "
        f"{os.cpu_count()} cores"
    )
    print(
        f"evalpack (OLMES procedure, parallel filter): {ours_s:.2f} s, "
        f"{len(docs) / ours_s:.0f} docs/s; {summary(ours)}"
    )
    print(
        f"lm-eval 0.4.13 built-in ifeval (sequential): {theirs_s:.2f} s, "
        f"{len(docs) / theirs_s:.0f} docs/s; {summary(theirs)}"
    )
    diff = differences(docs, ours, theirs)
    print(f"instruction verdicts that differ: {len(diff)}")
    print("\n".join(diff))
    print(
        f"same verdicts as OLMES on its dev fifth: evalpack {against_olmes(docs, ours)}, "
        f"lm-eval {against_olmes(docs, theirs)}"
    )
    print(
        json.dumps(
            {
                "evalpack_s": round(ours_s, 3),
                "lm_eval_s": round(theirs_s, 3),
                "differences": len(diff),
            }
        )
    )


if __name__ == "__main__":
    main()
