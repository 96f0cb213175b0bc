"""`evalpack rescore` of a whole-suite board of one replay checkpoint: the time per task and
in all (every doc; the checkpoint answers with the real outputs of
`../shared/reference/outputs/`, a doc without one with an empty answer).

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/rescore_board.py \\
        [--tasks gsm8k_tulu,minerva_math_tulu,ifeval_tulu,bbh_cot_v1_tulu] [--keep DIR]

The board is built first (`evalpack leaderboard run`, not timed here). The default tasks are
the tulu_3_dev tasks without code execution whose data the offline mirror holds and that a
generation-only replay can answer (the multiple-choice tasks need recorded log-likelihoods;
the code tasks run at the rate `benchmarks/execution*.py` measure).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUTS = REPO.parent / "shared" / "reference" / "outputs"
DEFAULT = "gsm8k_tulu,minerva_math_tulu,ifeval_tulu,bbh_cot_v1_tulu"
TIMED = re.compile(r"rescored (\S+) in ([\d.]+) s")


def evalpack(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalpack", *args], capture_output=True, text=True, check=False
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=DEFAULT)
    parser.add_argument("--keep", help="build (or reuse) the board here instead of a temp dir")
    args = parser.parse_args()
    if not os.environ.get("EVALPACK_DATA_DIR"):
        sys.exit("set EVALPACK_DATA_DIR (the offline mirror, e.g. ../shared/data)")
    with tempfile.TemporaryDirectory(prefix="rescore-bench-") as tmp:
        root = Path(args.keep or tmp)
        root.mkdir(parents=True, exist_ok=True)
        models = root / "models.yaml"
        recorded = [str(p) for p in sorted(OUTPUTS.glob("*.jsonl"))]
        models.write_text(
            json.dumps(
                {
                    "checkpoints": [
                        {
                            "name": "real-outputs",
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
        start = time.monotonic()
        rescored = evalpack("rescore", str(root / "board"), "--output", str(root / "rescored"))
        wall = time.monotonic() - start
        if rescored.returncode:
            sys.exit(rescored.stderr.strip().splitlines()[-1])
        for task, seconds in TIMED.findall(rescored.stderr):
            print(f"  {task:40s} {float(seconds):7.1f} s")
        print(
            f"evalpack rescore, {len(args.tasks.split(','))} tasks, every doc: {wall:.1f} s "
            "(one process: imports and the task index once)"
        )


if __name__ == "__main__":
    main()
