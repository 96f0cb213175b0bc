"""`--executor ray`: each unit (one checkpoint's pending tasks) is a Ray task that asks for the
checkpoint's resources (`executors.resources_for`) and runs the same worker process as the
local executor, on whichever node Ray picks. The output folder must be shared: every node
writes its pairs there under the same absolute path.

Ray's own task retries are off: a unit that fails or whose node dies comes back to the
leaderboard, which submits its unfinished pairs again (`--max_retries`), and they resume from
their completion logs.
"""

from __future__ import annotations

import logging
from pathlib import Path

from .executors import Unit, resources_for, start_worker, stop, unit_spec
from .gpu_pool import PoolExecutor
from .ray_address import address_problem
from .serve import stop_recorded

log = logging.getLogger("evalpack.leaderboard")


def run_unit(spec: dict) -> int:
    """The Ray task: the worker process on this node, which owns the checkpoint's servers (if it
    has `serve:`) on this node's GPUs; its exit status."""
    import ray

    if spec.get("serve"):  # its servers on the GPUs Ray gave this task
        spec = {**spec, "gpus": [str(gpu) for gpu in ray.get_gpu_ids()]}
    proc = start_worker(spec, ray.get_runtime_context().get_node_id())
    try:
        return proc.wait()
    finally:  # cancelled (ray.cancel) or the Ray worker is going down
        stop(proc)
        stop_recorded(Path(spec["checkpoint_dir"]))  # servers a killed worker left


def divert_cluster_messages(log_file: Path) -> None:
    """Ray prints the cluster's error messages (a raylet that died, ...) on the driver's
    console; the leaderboard reports each lost pair itself, so keep Ray's words in a file."""
    import ray._private.worker as ray_worker

    if not hasattr(ray_worker, "print_to_stdstream"):
        return
    log_file.parent.mkdir(parents=True, exist_ok=True)

    def to_file(data: dict, ignore_prefix: bool = False) -> None:
        with open(log_file, "a", encoding="utf-8") as fh:
            fh.writelines(f"({data.get('pid', '')}) {line}\n" for line in data.get("lines", []))

    ray_worker.print_to_stdstream = to_file


def import_ray():
    try:
        import ray
    except ImportError:
        raise ValueError(
            "--executor ray needs the ray package: pip install 'evalpack[ray]'"
        ) from None
    return ray


class RayExecutor:
    """Units as Ray tasks on the cluster at `address` (`auto`: the one `ray start` set up on
    this machine; `ray://host:10001` through Ray Client)."""

    name = "ray"

    def __init__(self, output: Path, extra: list[str], address: str | None) -> None:
        self.ray = import_ray()
        self.output, self.extra = output, extra
        problem = None if self.ray.is_initialized() else address_problem(address)
        if problem:  # Ray would retry it for minutes
            raise ValueError(problem)
        if not self.ray.is_initialized():
            self.ray.init(
                address=address or "auto", log_to_driver=False, logging_level=logging.WARNING
            )
        divert_cluster_messages(output / "ray_driver.log")
        self.remote = self.ray.remote(run_unit)
        self.running: dict = {}  # ObjectRef -> Unit

    def has_room(self, unit: Unit | None = None) -> bool:
        return True  # Ray queues what the cluster cannot place yet

    def start(self, unit: Unit) -> None:
        wanted = resources_for(unit.checkpoint)
        options = {
            "num_cpus": wanted.pop("num_cpus"),
            "num_gpus": wanted.pop("num_gpus"),
            "max_retries": 0,
        }
        if "memory" in wanted:
            options["memory"] = wanted.pop("memory")
        if wanted:
            options["resources"] = wanted
        spec = unit_spec(unit, self.output, self.extra)
        self.running[self.remote.options(**options).remote(spec)] = unit

    def wait(self, timeout: float) -> list[tuple[Unit, str | None]]:
        if not self.running:
            return []
        ready, _ = self.ray.wait(list(self.running), num_returns=1, timeout=timeout)
        ended = []
        for ref in ready:
            unit = self.running.pop(ref)
            try:
                status = self.ray.get(ref)
                error = None if status == 0 else f"worker exited with status {status}"
            except Exception as exc:  # noqa: BLE001  (node died, worker crashed, ...)
                first = (str(exc).strip().splitlines() or [""])[0].split(". ")[0]
                error = f"Ray: {type(exc).__name__}: {first[:200]}"
            ended.append((unit, error))
        return ended

    def units(self) -> list[Unit]:
        return list(self.running.values())

    def cancel(self) -> None:
        for ref in self.running:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001  (already finished)
                log.debug("could not cancel %s", ref)
        self.running.clear()


def make_executor(
    name: str, output: Path, extra: list[str], address: str | None, gpus: list[str] | None = None
):
    """The executor; locally, checkpoints with `serve:` share the GPUs `gpus` (`gpu_pool`)."""
    if name == "ray":
        return RayExecutor(output, extra, address)
    if address:
        raise ValueError("--address needs --executor ray")
    return PoolExecutor(output, extra, gpus or [])
