"""`serve:` under `--executor ray`: each checkpoint's Ray task asks for its servers' GPUs and its
worker starts them on the GPUs Ray gave it (a one-node cluster with two fake GPUs, in private
namespaces as in test_ray.py; the stub servers of test_serve.py)."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from evalpack.leaderboard import serve
from evalpack.leaderboard.executors import resources_for
from tests.conftest import DATA_DIR, REPO, requires_shared
from tests.leaderboard.test_ray import requires_ray
from tests.leaderboard.test_serve import (
    LIMIT,
    TASKS,
    alive,
    checkpoint,
    done,
    records,
    stub_command,
    write_board,
)


def test_a_served_checkpoint_asks_ray_for_its_servers_gpus():
    ckpt = checkpoint("a", "vllm serve {model} --port {port}", gpus_per_replica=2, replicas=2)
    assert resources_for(ckpt) == {"num_gpus": 4, "num_cpus": 1}
    assert resources_for({**ckpt, "resources": {"num_gpus": 1}})["num_gpus"] == 1


def scenario(root: Path) -> dict:
    """In the namespaces: a one-node cluster with two GPUs, two served checkpoints on it; what
    the servers recorded, and which of them are still alive once the board is done."""
    import ray.cluster_utils

    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    os.environ["RAY_TMPDIR"] = temp
    common = {"include_dashboard": False, "object_store_memory": 80 * 2**20}
    cluster = ray.cluster_utils.Cluster(
        initialize_head=True, head_node_args={"num_cpus": 2, "num_gpus": 2, **common}
    )
    record = root / "served.jsonl"
    args = write_board(root, [checkpoint(n, stub_command(record)) for n in ("a", "b")])
    try:
        run = subprocess.run(
            [sys.executable, "-m", "evalpack", "leaderboard", "run", *args]
            + ["--executor", "ray", "--address", cluster.address],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    finally:
        cluster.shutdown()
    rows = records(record)
    servers = [row for row in rows if row.get("event") == "start"]
    return {
        "rc": run.returncode,
        "log": run.stderr[-3000:],
        "cuda": sorted(row["cuda"] for row in servers),
        "left": [
            row["pid"] for row in servers if alive(row["pid"]) or serve.group_alive(row["pid"])
        ],
        "done": [done(root / "board", n) for n in ("a", "b")],
        "answers": sum("seed" in row for row in rows),
    }


@requires_shared
@requires_ray
def test_ray_tasks_own_their_checkpoints_servers(tmp_path):
    env = {**os.environ, "EVALPACK_DATA_DIR": str(DATA_DIR), "PYTHONPATH": str(REPO)}
    inside = subprocess.run(
        ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--kill-child"]
        + [sys.executable, __file__, str(tmp_path)],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert inside.returncode == 0, inside.stderr[-3000:]
    found = json.loads(inside.stdout.strip().splitlines()[-1])
    assert found["rc"] == 0, found["log"]
    assert found["done"] == [True, True]
    assert found["answers"] == 2 * len(TASKS) * LIMIT
    assert found["cuda"] in (["0", "1"], ["0", "0"], ["1", "1"])  # a GPU Ray gave each
    assert found["left"] == []


if __name__ == "__main__":
    print(json.dumps(scenario(Path(sys.argv[1]))))
