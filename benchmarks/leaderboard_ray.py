"""The same leaderboard (replay checkpoints x the core suite, --limit) with `--executor local`
and on a local Ray cluster: wall time, model loads, workers, and whether the metrics agree.

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/leaderboard_ray.py \\
        [--checkpoints 3] [--limit 2] [--cpus 3] [--suite tulu_3_dev_core]

Model loads are read from each checkpoint's `workers.jsonl` (one row per load); they must
equal checkpoints x workers used (one worker per checkpoint when nothing fails), not pairs.
Run as root, the script re-runs itself inside private network and PID namespaces (`unshare`,
loopback only), so the Ray cluster talks over loopback and every process it starts ends with
it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalpack.leaderboard import rundirs

REPO = Path(__file__).resolve().parents[1]
OUTPUTS = REPO.parent / "shared" / "reference" / "outputs"
# replay answers per task-name prefix: str.format templates over the doc (`{input:.0}` formats
# a field as "", which makes a constant text a template rather than a field name)
ANSWERS = {
    "constant": {
        "minerva_math": "The answer is $\\boxed{{4}}$.",
        "bbh": "So the answer is (A).{input:.0}",
        "codex_humaneval": "    return None{prompt:.0}\n",
    },
    "solutions": {
        "minerva_math": "{solution}",
        "bbh": "So the answer is {target}.",
        "codex_humaneval": "{canonical_solution}",
    },
}


def models_file(root: Path, count: int) -> Path:
    """`count` replay checkpoints: reference solutions, a constant answer, recorded outputs."""
    recorded = [str(p) for p in sorted(OUTPUTS.glob("*.jsonl"))]
    kinds = [
        {"model": "replay", "model_args": {"from_doc": ANSWERS["solutions"]}},
        {"model": "replay", "model_args": {"from_doc": ANSWERS["constant"]}},
        {"model": "replay", "model_args": {"completions": recorded, "missing": "empty"}},
    ]
    checkpoints = [
        {"name": f"ckpt{i}", **kinds[i % len(kinds)], "resources": {"num_cpus": 1}}
        for i in range(count)
    ]
    path = root / "models.yaml"
    path.write_text(json.dumps({"checkpoints": checkpoints}))
    return path


def run_board(command: list[str], board: Path) -> dict:
    start = time.perf_counter()
    done = subprocess.run(
        command + ["--output", str(board)], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    loads = [
        row
        for ckpt in sorted(board.iterdir())
        if ckpt.is_dir()
        for row in rundirs.read_workers(ckpt)
    ]
    return {
        "rc": done.returncode,
        "wall": wall,
        "loads": len(loads),
        "workers": len({(row["node"], row["pid"]) for row in loads}),
        "pairs": len(list(board.glob(f"*/*/{rundirs.DONE_MARKER}"))),
        "tail": done.stderr.strip().splitlines()[-1:],
    }


def metrics(board: Path) -> dict:
    values = {}
    for results_file in rundirs.results_files(board):
        pair = rundirs.run_folder(results_file).relative_to(board).as_posix()
        results = json.loads(results_file.read_text())["results"]
        values[pair] = {t: {k: v for k, v in r.items() if "," in k} for t, r in results.items()}
    return values


def main(args: argparse.Namespace) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=False)
    root = Path(tempfile.mkdtemp(prefix="lbray"))
    os.environ["RAY_TMPDIR"] = str(root)
    (root / "ray").mkdir()
    command = [
        sys.executable,
        "-m",
        "evalpack",
        "leaderboard",
        "run",
        "--models",
        str(models_file(root, args.checkpoints)),
        "--suite",
        args.suite,
        "--limit",
        str(args.limit),
    ]
    local = run_board(command, root / "local")

    import ray.cluster_utils

    cluster = ray.cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": args.cpus,
            "include_dashboard": False,
            "object_store_memory": 80 * 2**20,
        },
    )
    try:
        on_ray = run_board(
            command + ["--executor", "ray", "--address", cluster.address], root / "ray"
        )
    finally:
        cluster.shutdown()
    same = metrics(root / "local") == metrics(root / "ray")
    print(
        f"{args.checkpoints} checkpoints x {args.suite} (--limit {args.limit}); "
        f"Ray: one node, {args.cpus} CPUs (units run {args.cpus} at a time)"
    )
    print(f"{'executor':<8} {'wall s':>7} {'pairs':>5} {'loads':>5} {'workers':>7}  status")
    for name, result in (("local", local), ("ray", on_ray)):
        print(
            f"{name:<8} {result['wall']:7.1f} {result['pairs']:5d} {result['loads']:5d} "
            f"{result['workers']:7d}  rc={result['rc']} {' '.join(result['tail'])}"
        )
        assert result["loads"] == result["workers"], "a worker loaded its model twice"
    print(f"metrics identical: {same}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", type=int, default=3)
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--cpus", type=int, default=3)
    parser.add_argument("--suite", default="tulu_3_dev_core")
    arguments = parser.parse_args()
    if os.geteuid() == 0 and not os.environ.get("EVALPACK_IN_NAMESPACE"):
        os.environ["EVALPACK_IN_NAMESPACE"] = "1"
        os.execvp(
            "unshare",
            [
                "unshare",
                "--net",
                "--pid",
                "--fork",
                "--mount-proc",
                "--kill-child",
                sys.executable,
                *sys.argv,
            ],
        )
    main(arguments)
