"""`evalpack rescore` of a whole-suite board of one replay checkpoint: the time per task and
in all (every doc; the checkpoint answers with the real outputs of
`../shared/reference/outputs/`, a doc without one with an empty answer).

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/rescore_board.py \\
        [--tasks gsm8k_tulu,minerva_math_tulu,ifeval_tulu,bbh_cot_v1_tulu,mmlu_mc_tulu] [--keep DIR]

The board is built first (`evalpack leaderboard run`, not timed here). The default tasks are
the tulu_3_dev tasks without code execution whose data the offline mirror holds and that a
replay can answer: MMLU's log-likelihoods are synthetic (as in `benchmarks/mc_requests.py`);
DROP, PopQA and AlpacaEval are not in the mirror. `--tasks codex_humaneval_tulu,codex_humanevalplus_tulu`
rescores the two code tasks, their 20 samples of every doc being the recorded HumanEval programs
(or, with `--code-programs reference`, each problem's reference solution, the programs
`benchmarks/execution.py` and `execution_plus.py` run), and prints the programs each executed
per second, to set beside those benchmarks' rates.

Then MATH's scoring (its filter, the bulk of the figure) on the rescored samples, both ways in
this process: with every `parse_latex` redone (before) and with each worker remembering its
quick parses (now: a doc's gold compared with several candidates, an empty answer's failed
parse); every verdict must agree.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalpack.core import data

REPO = Path(__file__).resolve().parents[1]
OUTPUTS = REPO.parent / "shared" / "reference" / "outputs"
MMLU = "mmlu_mc_tulu"
CODE = ("codex_humaneval_tulu", "codex_humanevalplus_tulu")
SAMPLES = 20  # HumanEval's and HumanEval+'s samples per doc in tulu_3_dev
DEFAULT = f"gsm8k_tulu,minerva_math_tulu,ifeval_tulu,bbh_cot_v1_tulu,{MMLU}"
TIMED = re.compile(r"rescored (\S+) in ([\d.]+) s")


def evalpack(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalpack", *args], capture_output=True, text=True, check=False
    )


def mmlu_loglikelihoods(root: Path) -> Path:
    """Synthetic log-likelihoods (fixed seed) for every MMLU doc's choices, as
    `benchmarks/mc_requests.py` makes them: no real ones are recorded."""
    from mc_requests import replay_rows, subjects  # this script's folder is on sys.path

    file = root / "mmlu_loglikelihoods.jsonl"
    if not file.exists():
        with contextlib.redirect_stdout(io.StringIO()):  # lm-eval's notes on every subject
            rows = replay_rows(subjects(), None)
        file.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return file


def recorded_programs() -> dict[str, list[str]]:
    """The recorded HumanEval programs (1,242 for 164 problems), by problem number."""
    by_problem: dict[str, list[str]] = {}
    for row in data.read_jsonl(OUTPUTS / "humaneval.jsonl"):
        by_problem.setdefault(row["key"].rsplit("#", 1)[1], []).append(row["completion"])
    return by_problem


def reference_programs() -> dict[str, list[str]]:
    """Each HumanEval problem's prompt and canonical solution, a whole function (the programs
    `benchmarks/execution.py` runs), by problem number."""
    mirror = data.mirror_file(
        os.environ[data.DATA_DIR_ENV], "openai/openai_humaneval", None, "test"
    )
    docs = data.read_jsonl(mirror)
    return {str(n): [doc["prompt"] + doc["canonical_solution"]] for n, doc in enumerate(docs)}


def code_outputs(root: Path, reference: bool) -> Path:
    """The 20 samples of every HumanEval and HumanEval+ doc (HumanEval+'s problem N is
    HumanEval's): the recorded programs of the problem in turn, or its reference solution."""
    by_problem = reference_programs() if reference else recorded_programs()
    rows = [
        {
            "key": f"{dataset}/default/test#{problem}",
            "repeat": n,
            "completion": texts[n % len(texts)],
        }
        for dataset in ("openai__openai_humaneval", "evalplus__humanevalplus")
        for problem, texts in by_problem.items()
        for n in range(SAMPLES)
    ]
    file = root / "humaneval_samples.jsonl"
    file.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return file


def programs_run(rescored: Path, task: str) -> int:
    """How many programs a rescored code task executed (its logged responses)."""
    return sum(
        len(samples)
        for file in rescored.glob(f"*/{task}/samples_*.jsonl")
        for line in file.read_text(encoding="utf-8").splitlines()
        for samples in json.loads(line)["resps"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=DEFAULT)
    parser.add_argument("--keep", help="build (or reuse) the board here instead of a temp dir")
    parser.add_argument(
        "--code-programs",
        choices=("recorded", "reference"),
        default="recorded",
        help="what the code tasks' samples are: the recorded HumanEval programs, or each "
        "problem's reference solution (the programs of benchmarks/execution*.py)",
    )
    args = parser.parse_args()
    if not os.environ.get("EVALPACK_DATA_DIR"):
        sys.exit("set EVALPACK_DATA_DIR (the offline mirror, e.g. ../shared/data)")
    with tempfile.TemporaryDirectory(prefix="rescore-bench-") as tmp:
        root = Path(args.keep or tmp)
        root.mkdir(parents=True, exist_ok=True)
        models = root / "models.yaml"
        recorded = [str(p) for p in sorted(OUTPUTS.glob("*.jsonl"))]
        if set(CODE) & set(args.tasks.split(",")):
            recorded.remove(str(OUTPUTS / "humaneval.jsonl"))
            recorded.append(str(code_outputs(root, args.code_programs == "reference")))
        if MMLU in args.tasks.split(","):
            recorded.append(str(mmlu_loglikelihoods(root)))
        models.write_text(
            json.dumps(
                {
                    "checkpoints": [
                        {
                            "name": f"{args.code_programs}-outputs",
                            "model": "replay",
                            "model_args": {"completions": recorded, "missing": "empty"},
                        }
                    ]
                }
            )
        )
        start = time.monotonic()
        built = evalpack(
            "leaderboard",
            "run",
            "--models",
            str(models),
            "--suite",
            "tulu_3_dev",
            "--tasks",
            args.tasks,
            "--output",
            str(root / "board"),
        )
        print(f"board built in {time.monotonic() - start:.0f} s (not part of the figure)")
        if built.returncode:
            sys.exit(built.stderr.strip().splitlines()[-1])
        shutil.rmtree(root / "rescored", ignore_errors=True)  # a kept board's last rescore
        start = time.monotonic()
        rescored = evalpack("rescore", str(root / "board"), "--output", str(root / "rescored"))
        wall = time.monotonic() - start
        if rescored.returncode:
            sys.exit(rescored.stderr.strip().splitlines()[-1])
        timed = TIMED.findall(rescored.stderr)
        for task, seconds in timed:
            rate = ""
            if task.split("/")[-1] in CODE:
                programs = programs_run(root / "rescored", task.split("/")[-1])
                rate = f"  {programs} programs, {programs / float(seconds):.1f}/s"
            print(f"  {task:40s} {float(seconds):7.1f} s{rate}")
        print(
            f"evalpack rescore, {len(timed)} tasks, every doc: {wall:.1f} s "
            f"({sum(float(s) for _, s in timed):.1f} s in the tasks; one process: imports and "
            "the task index once)"
        )
        math_samples = sorted((root / "rescored").glob("*/minerva_math_tulu/samples_*.jsonl"))
        if math_samples:
            compare_math_scoring(math_samples)


def workers_cpu() -> float:
    """CPU seconds of this process's finished children (the scoring workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def compare_math_scoring(files: list[Path]) -> None:
    """MATH's filter over the logged samples of each subject, before and now (see above)."""
    from evalpack.hooks import minerva_math
    from evalpack.scoring import math_answers

    subjects = []  # per subject: (the logged responses, the docs)
    for file in files:
        rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]
        subjects.append(([row["resps"][0] for row in rows], [row["doc"] for row in rows]))
    verdicts, seconds, cpu = {}, {}, {}
    for way, memo in (("before", 0), ("now", math_answers.MEMO_SIZE)):
        math_answers.MEMO_SIZE = memo  # read by the forked workers
        start, cpu_start = time.monotonic(), workers_cpu()
        verdicts[way] = [minerva_math.score_docs(resps, docs) for resps, docs in subjects]
        seconds[way] = time.monotonic() - start
        cpu[way] = workers_cpu() - cpu_start
    docs = sum(len(docs) for _, docs in subjects)
    differ = sum(a != b for x, y in zip(verdicts["before"], verdicts["now"]) for a, b in zip(x, y))
    print(
        f"MATH's filter on {docs} docs: every parse_latex redone {seconds['before']:.1f} s "
        f"({cpu['before']:.1f} s CPU in the workers); quick parses remembered "
        f"{seconds['now']:.1f} s ({cpu['now']:.1f} s CPU); records that differ: {differ} "
        "(only where a wall-clock sympy bound was hit in one run only, on a loaded machine)"
    )


if __name__ == "__main__":
    main()
