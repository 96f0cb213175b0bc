"""What a run pays before its first request: a one-document run, today's way (lm-eval's task
manager indexing all of lm-eval's built-in tasks) and the pack's (only the include path), with
where the time goes; then the same one-document pair run again and again inside one leaderboard
worker (model, imports and task index already there); then what needs lm-eval's built-in tasks
(a one-document run of lm-eval's own `ifeval`, `evalpack ls tasks`) without and with their
index's disk cache. "Before" also loads torch as lm-eval does; "now" is a run after the first
(the environment report in the cache folder).

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/fixed_costs.py [--pairs 4]

The one-document run is the issue's: `evalpack --model replay --model_args from_doc=answer
--tasks gsm8k_tulu --limit 1 --apply_chat_template`.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalpack.leaderboard.executors import pair_argv
from evalpack.leaderboard.rundirs import DONE_MARKER

RUN = [
    "--model",
    "replay",
    "--model_args",
    "from_doc=answer",
    "--tasks",
    "gsm8k_tulu",
    "--limit",
    "1",
    "--apply_chat_template",
]
# the old way: every run indexes lm-eval's built-in tasks as well, no index is cached on disk,
# and lm-eval loads torch to seed it and for its environment report
WITH_BUILTINS = (
    "from evalpack.lmeval import fixed_costs; "
    "fixed_costs.needs_builtin_tasks = lambda names, path: True; "
    "from evalpack.lmeval import index_file; index_file.read = lambda file, key, kinds=None: None; "
    "from evalpack.lmeval import lazy_torch; lazy_torch.install = lambda: None; "
)
MAIN = "from evalpack.cli.cli import main; main({argv!r})"
# lm-eval's own ifeval, its dataset (google/IFEval, from the hub) read from the offline mirror
BUILTIN_RUN = ["--model", "replay", "--model_args", "from_doc=prompt", "--tasks", "ifeval"]
BUILTIN_RUN += ["--limit", "1"]
IFEVAL_OFFLINE = (
    "import os, datasets, json; "
    "rows = [json.loads(l) for l in open(os.path.join(os.environ['EVALPACK_DATA_DIR'], "
    "'google__IFEval', 'default', 'train.jsonl'))]; "
    "datasets.load_dataset = lambda path, name=None, **kw: "
    "datasets.DatasetDict(train=datasets.Dataset.from_list(rows)); "
)
# before this cache: lm-eval's own `ls` (index and output types read from every YAML)
LM_EVAL_LS = (
    "from lm_eval.__main__ import cli_evaluate; import sys; sys.argv = {argv!r}; cli_evaluate()"
)
LAZY = "commands/lazy_torch.py"  # where the pack's versions of lm-eval's two are
# (label, function name in the profile, files it is defined in)
PHASES = [
    ("imports (the pack, lm-eval)", "<module>", "utils/cli/cli.py"),
    ("task index (YAML files read)", "build", "lm_eval/tasks/_index.py"),
    ("lm-eval's simple_evaluate, in all:", "simple_evaluate", "lm_eval/evaluator.py"),
    ("  torch import (lm-eval's seeding)", "set_torch_seed", ("lm_eval/utils.py", LAZY)),
    ("  environment report (torch collect_env)", "add_env_info", ("loggers/utils.py", LAZY)),
    ("  tasks built (dataset, few-shot)", "load", "lm_eval/tasks/manager.py"),
]


def timed(code: str, env: dict | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    return time.perf_counter() - start


def builtin_tasks(scratch: Path) -> None:
    """Runs that need lm-eval's built-in tasks: without the index's disk cache (a fresh cache
    folder: the index is built, then written) and with it (read)."""
    cache = {"EVALPACK_CACHE_DIR": str(scratch / "builtin-cache")}
    run = IFEVAL_OFFLINE + MAIN.format(argv=BUILTIN_RUN)
    cold, warm = timed(run, cache), timed(run, cache)
    tasks = str(Path(__file__).resolve().parents[1] / "tasks")
    own_ls = timed(LM_EVAL_LS.format(argv=["lm-eval", "ls", "tasks", "--include_path", tasks]))
    ls = timed(MAIN.format(argv=["ls", "tasks"]), cache)
    print("\nlm-eval's built-in tasks needed (their index: ~14,000 YAML files)")
    print(f"one-document run of lm-eval's ifeval, no index cache (built, written): {cold:6.2f} s")
    print(f"one-document run of lm-eval's ifeval, index read from the cache:       {warm:6.2f} s")
    print(f"ls tasks: lm-eval's own {own_ls:6.2f} s, evalpack with the cache {ls:6.2f} s")


def breakdown(prefix: str, scratch: Path) -> dict[str, float]:
    """Cumulative seconds of each phase of the one-document run, from a cProfile of it."""
    profile, script = scratch / "run.prof", scratch / "run.py"
    script.write_text(prefix + MAIN.format(argv=RUN))
    subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(profile), str(script)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stats = pstats.Stats(str(profile)).stats
    total = max(entry[3] for entry in stats.values())
    found = {"total (profiled)": total}
    for label, function, where in PHASES:
        # the outermost (the pack's versions call lm-eval's): cumulative times nest
        found[label] = max(
            (
                entry[3]
                for (file, _, name), entry in stats.items()
                if name == function and file.endswith(where)
            ),
            default=0.0,
        )
    return found


def worker_pairs(count: int, scratch: Path) -> list[float]:
    """Seconds of each of `count` identical one-document pairs run by one worker."""
    ckpt = {"name": "replay", "model": "replay", "model_args": "from_doc=answer"}
    entry = {"task": "gsm8k_tulu", "chat": True, "args": ["--limit", "1"]}
    pairs = []
    for number in range(count):
        pair_dir = scratch / "board" / f"pair{number}"
        pairs.append(
            {
                "task": entry["task"],
                "dir": str(pair_dir),
                "command": ["evalpack"],
                "argv": ["run", *pair_argv(ckpt, entry, pair_dir, "resumable-pooled")],
            }
        )
    spec = {
        "checkpoint_dir": str(scratch / "board"),
        "pairs": pairs,
        "env": {},
        "node": "local",
        "parent": os.getpid(),
    }
    subprocess.run(
        [sys.executable, "-m", "evalpack.leaderboard.worker", json.dumps(spec)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return [json.loads((Path(p["dir"]) / DONE_MARKER).read_text())["seconds"] for p in pairs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=4, help="pairs run by one worker")
    args = parser.parse_args()
    if not os.environ.get("EVALPACK_DATA_DIR"):
        sys.exit("set EVALPACK_DATA_DIR (the offline mirror, e.g. ../shared/data)")
    with tempfile.TemporaryDirectory(prefix="fixed-costs-") as tmp:
        scratch = Path(tmp)
        os.environ["EVALPACK_CACHE_DIR"] = str(scratch / "cache")  # never the user's
        pack_import = timed("import evalpack.cli.cli")
        old = timed(WITH_BUILTINS + MAIN.format(argv=RUN))
        timed(MAIN.format(argv=RUN))  # the first run puts the environment report in the cache
        new = timed(MAIN.format(argv=RUN))
        print(f"python -c 'import evalpack.cli.cli': {pack_import:6.2f} s")
        print(f"one-document run, lm-eval's built-in tasks indexed (before): {old:6.2f} s")
        print(
            f"one-document run, the include path only (now):               {new:6.2f} s "
            f"= import + {new - pack_import:.2f} s"
        )
        rows = [breakdown(WITH_BUILTINS, scratch), breakdown("", scratch)]
        print("\nwhere the time goes (cProfile, cumulative seconds; profiling slows Python code)")
        print(f"{'phase':42s} {'before':>8s} {'now':>8s}")
        for label in rows[0]:
            print(f"{label:42s} {rows[0][label]:8.2f} {rows[1][label]:8.2f}")
        seconds = worker_pairs(args.pairs, scratch)
        print(
            f"\n{args.pairs} one-document pairs in one leaderboard worker (done markers' "
            f"seconds): {', '.join(f'{s:.2f}' for s in seconds)}"
        )
        later = seconds[1:] or seconds
        print(
            f"a pair after the first (model, imports, task index in place): "
            f"{sum(later) / len(later):.2f} s, everything of the pair included"
        )
        builtin_tasks(scratch)


if __name__ == "__main__":
    main()
