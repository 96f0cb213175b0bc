"""`evalpack leaderboard run --executor ray` on a real two-node Ray cluster.

The cluster (a head with one fake GPU, a second node with two) runs inside private network,
PID and mount namespaces (`unshare`, loopback up): Ray binds to and talks over the machine's
interfaces otherwise, and when the namespace's first process ends the kernel stops every
process started in it. The part that runs in there is this file's `__main__` (`scenario`).
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from evalpack.leaderboard import rundirs
from tests.conftest import DATA_DIR, OUTPUTS, REPO, requires_shared

TASKS = ["minerva_math_tulu_algebra", "minerva_math_tulu_geometry", "minerva_math_tulu_prealgebra"]
LIMIT = 2
CHECKPOINTS = [
    {"name": "solutions", "model": "replay", "model_args": {"from_doc": "{solution}"}},
    {
        "name": "constant",
        "model": "replay",
        "model_args": {"from_doc": "The answer is $\\boxed{{4}}$."},
    },
    {
        "name": "qwen",
        "model": "replay",
        "model_args": {"completions": str(OUTPUTS / "math.jsonl"), "missing": "empty"},
    },
]


def ray_available() -> str:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs unshare and ip (util-linux, iproute2)"
    if os.geteuid() != 0:
        return "needs root for unshare --net"
    try:
        import ray  # noqa: F401
    except ImportError:
        return "ray is not installed (pip install 'evalpack[ray]')"
    return ""


requires_ray = pytest.mark.skipif(bool(ray_available()), reason=ray_available() or "ok")


def write_inputs(root: Path, gpus_each: int) -> list[str]:
    """models.yaml and suites.yaml; the leaderboard command line (without the executor)."""
    models = root / "models.yaml"
    models.write_text(
        json.dumps(
            {
                "checkpoints": [
                    {**ckpt, "resources": {"num_gpus": gpus_each}} for ckpt in CHECKPOINTS
                ]
            }
        )
    )
    suites = root / "suites.yaml"
    suites.write_text(json.dumps({"three": {"tasks": [{"task": t, "chat": True} for t in TASKS]}}))
    return [
        sys.executable,
        "-m",
        "evalpack",
        "leaderboard",
        "run",
        "--models",
        str(models),
        "--suites",
        str(suites),
        "--suite",
        "three",
        "--limit",
        str(LIMIT),
    ]


def markers(board: Path) -> dict:
    """{checkpoint/task: done marker} of the finished pairs (one still being written is not)."""
    found = {}
    for path in board.glob(f"*/*/{rundirs.DONE_MARKER}"):
        with contextlib.suppress(json.JSONDecodeError):
            found[path.parent.relative_to(board).as_posix()] = json.loads(path.read_text())
    return found


def scenario(root: Path) -> dict:
    """In the namespaces: start the cluster, run the leaderboard on it, stop the second node
    once it has finished a pair and still has work, rerun, report what happened."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths have a limit
    os.environ["RAY_TMPDIR"] = temp  # Ray's files (and the drivers') stay in there
    (Path(temp) / "ray").mkdir()
    import ray.cluster_utils

    common = {"include_dashboard": False, "object_store_memory": 80 * 2**20}
    cluster = ray.cluster_utils.Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 1, **common}
    )
    second = cluster.add_node(num_cpus=2, num_gpus=2, **common)
    nodes = {"head": cluster.head_node.node_id, "second": second.node_id}
    board = root / "ray_board"
    command = write_inputs(root, 1) + [
        "--output",
        str(board),
        "--executor",
        "ray",
        "--address",
        cluster.address,
    ]
    try:
        with open(root / "ray_run.log", "w") as log:
            run = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            stopped_at = stop_second_node(cluster, second, board, run)
            run.wait(timeout=600)
        rerun = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300)
    finally:
        cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
    return {
        **nodes,
        "rc": run.returncode,
        "stopped_at": stopped_at,
        "rerun_rc": rerun.returncode,
        "rerun_log": rerun.stderr,
        "log": (root / "ray_run.log").read_text(),
    }


def stop_second_node(cluster, second, board: Path, run: subprocess.Popen) -> dict:
    """Remove the second node once one of its pairs is done and it still has unfinished ones.
    Its workers that finished a pair (the pids their markers name) are stopped first, so that
    what is unfinished there is read while nothing can land, then SIGKILLed: a removed node's
    workers otherwise go on writing until they notice, and may finish every pair they had."""
    while run.poll() is None:
        if unfinished_on(second, board):
            workers = {m["pid"] for m in markers(board).values() if m["node"] == second.node_id}
            signal_all(workers, signal.SIGSTOP)
            unfinished = unfinished_on(second, board)
            if unfinished:
                signal_all(workers, signal.SIGKILL)
                cluster.remove_node(second, allow_graceful=False)
                return {"done": sorted(markers(board)), "unfinished_there": unfinished}
            signal_all(workers, signal.SIGCONT)  # its last pair landed meanwhile: wait on
        time.sleep(0.1)
    return {}


def signal_all(pids: set[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def unfinished_on(node, board: Path) -> list[str]:
    """The unfinished pairs of the checkpoints `node` has finished a pair of."""
    done = markers(board)
    running_there = {p.split("/")[0] for p, m in done.items() if m["node"] == node.node_id}
    return [f"{c}/{t}" for c in running_there for t in TASKS if f"{c}/{t}" not in done]


def metric_values(board: Path) -> dict:
    values = {}
    for results_file in rundirs.results_files(board):
        pair = rundirs.run_folder(results_file).relative_to(board).as_posix()
        results = json.loads(results_file.read_text())["results"]
        values[pair] = {
            task: {k: v for k, v in r.items() if "," in k} for task, r in results.items()
        }
    return values


@pytest.fixture(scope="module")
def ray_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("ray")
    env = {**os.environ, "EVALPACK_DATA_DIR": str(DATA_DIR), "PYTHONPATH": str(REPO)}
    (root / "local").mkdir()
    with open(root / "local.log", "w") as log:  # the local run goes on beside the Ray one
        local = subprocess.Popen(
            write_inputs(root / "local", 1) + ["--output", str(root / "local_board")],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            inside = subprocess.run(
                [
                    "unshare",
                    "--net",
                    "--pid",
                    "--fork",
                    "--mount-proc",
                    "--kill-child",
                    sys.executable,
                    __file__,
                    str(root),
                ],
                check=False,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
            local.wait(timeout=600)
        finally:
            local.kill()
            local.wait()
    assert inside.returncode == 0, inside.stderr[-3000:]
    return {
        "root": root,
        "local_rc": local.returncode,
        "local_log": (root / "local.log").read_text(),
        **json.loads(inside.stdout.strip().splitlines()[-1]),
    }


@requires_shared
@requires_ray
def test_ray_run_survives_a_node_and_matches_local(ray_run):
    root = ray_run["root"]
    assert ray_run["local_rc"] == 0, ray_run["local_log"][-2000:]
    assert ray_run["rc"] == 0, ray_run["log"][-3000:]
    # the second node had finished a pair and had unfinished ones when it was stopped
    assert ray_run["stopped_at"]["unfinished_there"], ray_run["stopped_at"]
    done = markers(root / "ray_board")
    assert len(done) == len(CHECKPOINTS) * len(TASKS)
    nodes = {marker["node"] for marker in done.values()}
    assert nodes == {ray_run["head"], ray_run["second"]}  # pairs were placed on both nodes
    # work the lost node had not finished was done again on the head (its killed workers can
    # finish nothing; a retry Ray starts there before the node is gone might, in principle)
    moved = [
        p for p in ray_run["stopped_at"]["unfinished_there"] if done[p]["node"] == ray_run["head"]
    ]
    assert moved, (ray_run["stopped_at"], done)
    assert "will retry" in ray_run["log"]
    # the lost pair's reason: Ray's, or the killed worker's status when its Ray task returned
    # that before the node was gone (which comes first is a race)
    assert "Ray:" in ray_run["log"] or "worker exited with status -9" in ray_run["log"]
    assert metric_values(root / "ray_board") == metric_values(root / "local_board")
    assert len(metric_values(root / "local_board")) == 9


@requires_shared
@requires_ray
def test_model_loaded_once_per_checkpoint_and_worker(ray_run):
    root = ray_run["root"]
    for ckpt in CHECKPOINTS:
        local = rundirs.read_workers(root / "local_board" / ckpt["name"])
        assert len(local) == 1  # one load for all three tasks
        on_ray = rundirs.read_workers(root / "ray_board" / ckpt["name"])
        # one load per worker that ran the checkpoint: 2 where the second node was stopped
        assert len(on_ray) == len({(row["node"], row["pid"]) for row in on_ray}) in (1, 2)


@requires_shared
@requires_ray
def test_a_ray_rerun_does_nothing(ray_run):
    assert ray_run["rerun_rc"] == 0
    assert ray_run["rerun_log"].count("finished earlier, skipped") == 9
    assert "finished in" not in ray_run["rerun_log"]


def test_each_checkpoint_asks_for_its_resources():
    from evalpack.leaderboard.executors import resources_for

    vllm = {
        "model": "vllm",
        "model_args": "pretrained=x,tensor_parallel_size=2,data_parallel_size=2",
    }
    assert resources_for(vllm) == {"num_gpus": 4, "num_cpus": 1}
    assert resources_for({"model": "hf", "model_args": {"pretrained": "x"}})["num_gpus"] == 1
    assert resources_for({"model": "replay"})["num_gpus"] == 0
    declared = {"model": "hf", "resources": {"num_gpus": 2, "num_cpus": 8, "H100": 1}}
    assert resources_for(declared) == {"num_gpus": 2, "num_cpus": 8, "H100": 1}


if __name__ == "__main__":
    print(json.dumps(scenario(Path(sys.argv[1]))))
