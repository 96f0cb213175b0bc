"""MBPP+'s 378 reference solutions as `mbppplus_olmo3` runs them and as OLMES runs them, in one
run: how many pass on each side, every problem that fails on either (marking where the two
disagree, with evalpack's reason), and evalpack's jobs that took the most CPU time.

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/mbppplus_references.py
        [--only 88,255,599] [--no-olmes]

evalpack: each reference solution as a model's answer (a fenced block after "Here is the
completed function:"), through the task's filter (`execute_mbppplus`: OLMES's program, the
problem's `test` on the trusted side, 20 s of CPU per program), all in one batch.

OLMES's way (`code_execution_local` at 5a51f502, written here from what it does): the same
program followed by the test, executed in one forked process under a 20 s SIGALRM (wall
time), no memory limit; "passed" if it returns. OLMES's reliability guard is left out (it
changes no verdict of a reference solution). Its processes run one at a time (the reference of
problem 255 holds 2.2 GB), after evalpack's batch. On a loaded machine OLMES's wall-clock limit
times out problem 599 (15 s of CPU), which evalpack's CPU-time limit does not.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import time
from pathlib import Path

from evalpack.core import data
from evalpack.hooks import olmo3_code

DATASET = "evalplus/mbppplus"
TIMEOUT = 20.0  # OLMES's mbppplus::olmo3:adapt


def load_docs(only: set[int]) -> list[dict]:
    if not os.environ.get(data.DATA_DIR_ENV):
        os.environ[data.DATA_DIR_ENV] = str(Path(__file__).resolve().parents[2] / "shared" / "data")
    docs = []
    for row, doc in enumerate(data.load_split(DATASET, None, "test")):
        if not only or doc["task_id"] in only:
            entry_point = olmo3_code.mbpp_entry_point(doc)
            extra = {"timeout": TIMEOUT, "entry_point": entry_point, "process_output": ""}
            docs.append({**doc, "doc_key": f"{DATASET}#{row}", **extra})
    return docs


def answer(doc: dict) -> str:
    code = doc["code"].strip()
    return f"Reasoning.\n\nHere is the completed function:\n\n```python\n{code}\n```"


def _olmes_child(program: str, passed) -> None:
    def expire(signum, frame):
        raise TimeoutError

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT)
    try:
        exec(program, {})  # noqa: S102 (the dataset's reference solutions and tests)
        passed.value = 1
    except TimeoutError:
        passed.value = -1
    except BaseException:  # noqa: BLE001 (a failure, as in OLMES)
        passed.value = 0


def olmes_verdict(doc: dict) -> str:
    """OLMES's exec_result for the reference solution: passed, failed or timed out."""
    program = doc["code"].split(":")[0] + ":" + olmo3_code.MBPP_DOCSTRING + doc["code"].strip()
    passed = multiprocessing.Value("i", 0)
    child = multiprocessing.get_context("fork").Process(
        target=_olmes_child, args=(program + "\n" + doc["test"], passed)
    )
    child.start()
    child.join(TIMEOUT + 1)
    if child.is_alive():
        child.kill()
        child.join()
        return "timed out"
    return {1: "passed", -1: "timed out"}.get(passed.value, "failed")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="task_ids, comma-separated")
    parser.add_argument("--no-olmes", action="store_true", help="evalpack's side only")
    args = parser.parse_args()
    docs = load_docs({int(t) for t in args.only.split(",") if t})
    start = time.perf_counter()
    records = [r[0] for r in olmo3_code.execute_mbppplus([[answer(d)] for d in docs], docs)]
    ours = time.perf_counter() - start
    print(f"evalpack: {sum(r['passed'] for r in records)} of {len(docs)} pass ({ours:.0f} s)")
    slowest = sorted(zip(records, docs), key=lambda p: -(p[0]["cpu_seconds"] or 0))[:3]
    print("most CPU:", ", ".join(f"{d['task_id']} {r['cpu_seconds']:.1f} s" for r, d in slowest))
    if args.no_olmes:
        for record, doc in zip(records, docs):
            if not record["passed"]:
                print(f"  {doc['task_id']}: {record['reason'][:120]}")
        return
    start = time.perf_counter()
    theirs = [olmes_verdict(doc) for doc in docs]
    took = time.perf_counter() - start
    print(f"OLMES's way: {theirs.count('passed')} of {len(docs)} pass ({took:.0f} s)")
    print("failing on either side (* where the two disagree):")
    for record, verdict, doc in zip(records, theirs, docs):
        if not record["passed"] or verdict != "passed":
            mark = "*" if record["passed"] != (verdict == "passed") else " "
            print(f" {mark}{doc['task_id']}: OLMES {verdict}; evalpack {record['reason'][:100]}")


if __name__ == "__main__":
    main()
