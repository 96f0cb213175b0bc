"""The GPUs of this machine shared by the checkpoints that the board serves itself (`serve`).

`--gpus 0,1,2,3` names the devices the board may use (default: every visible one,
`CUDA_VISIBLE_DEVICES` or nvidia-smi's list; `--gpus none` for servers on CPU). A checkpoint with
a `serve:` block takes `replicas x gpus_per_replica` of them for its worker, which starts the
servers on them (`served_unit`); they come back to the pool as soon as the worker has stopped its
servers (its last request answered: `serve.json` says so), while its pairs are still scored, so
the next checkpoint's servers start meanwhile. As many checkpoints run side by side as the free
GPUs allow (one that needs none: one at a time); a waiting checkpoint that needs more GPUs than
are free lets smaller ones start first. Checkpoints without `serve:` run one at a time, as with
the plain local executor.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from .executors import LocalExecutor, Unit, start_worker, unit_spec
from .rundirs import FAILED_MARKER
from .serve import SERVE_FILE, gpus_needed, log_tail, recorded, serve_of, stop_recorded

log = logging.getLogger("evalpack.leaderboard")
STARTING_EVERY = 30.0  # seconds between the lines of a server that is still starting


def visible_gpus() -> list[str]:
    """The GPUs this process may use: `CUDA_VISIBLE_DEVICES`, else the ones nvidia-smi lists."""
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        return [g.strip() for g in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if g.strip()]
    if not shutil.which("nvidia-smi"):
        return []
    try:
        listing = subprocess.run(
            ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in listing.splitlines() if line.strip()]


def parse_gpus(text: str | None) -> list[str]:
    """`--gpus`: '0,1,2,3', 'none', or None for every visible GPU."""
    if text is None:
        return visible_gpus()
    if text.strip().lower() in ("none", ""):
        return []
    gpus = [g.strip() for g in text.split(",")]
    if not all(gpus) or len(set(gpus)) != len(gpus):
        raise ValueError(f"--gpus {text!r}: give distinct device ids, e.g. 0,1,2,3, or none")
    return gpus


def gpu_problems(checkpoints: list[dict], gpus: list[str]) -> list[str]:
    """Served checkpoints that need more GPUs than the board has (they could never start)."""
    return [
        f"checkpoint {ckpt['name']!r} needs {gpus_needed(ckpt)} GPUs (replicas x "
        f"gpus_per_replica) and the board has {len(gpus)} (--gpus {','.join(gpus) or 'none'})"
        for ckpt in checkpoints
        if serve_of(ckpt) and gpus_needed(ckpt) > len(gpus)
    ]


class PoolExecutor(LocalExecutor):
    """The local executor, with checkpoints that have `serve:` side by side on the GPU pool."""

    def __init__(self, output: Path, extra: list[str], gpus: list[str]) -> None:
        super().__init__(output, extra)
        self.free = list(gpus)
        self.held: dict[int, list[str]] = {}  # id(unit) -> its GPUs, until its servers stop
        self.up: set[int] = set()  # units whose servers were reported up
        self.since: dict[int, float] = {}  # id(unit) -> when its servers were started
        self.shown: dict[int, float] = {}  # id(unit) -> its last "starting" line (s after since)

    def has_room(self, unit: Unit | None = None) -> bool:
        running = [u for u, _ in self.running.values()]
        if unit is None or not serve_of(unit.checkpoint):
            return not any(not serve_of(u.checkpoint) for u in running)
        needed = gpus_needed(unit.checkpoint)
        if needed == 0:  # a CPU server: one at a time
            return not any(
                serve_of(u.checkpoint) and not gpus_needed(u.checkpoint) for u in running
            )
        return needed <= len(self.free)

    def start(self, unit: Unit) -> None:
        spec = unit_spec(unit, self.output, self.extra)
        for pair in spec["pairs"]:  # an earlier attempt's, read as this one's while servers start
            (Path(pair["dir"]) / FAILED_MARKER).unlink(missing_ok=True)
        if spec["serve"]:
            needed = gpus_needed(unit.checkpoint)
            gpus, self.free = self.free[:needed], self.free[needed:]
            self.held[id(unit)] = gpus
            self.since[id(unit)] = time.monotonic()
            spec["gpus"] = gpus
            stop_recorded(self.ckpt_dir(unit))  # an earlier board's, if it was killed -9
            (self.ckpt_dir(unit) / SERVE_FILE).unlink(missing_ok=True)
            log.info(
                "%s: starting %d server(s) on GPUs [%s]: %s",
                unit.name,
                spec["serve"]["replicas"],
                ",".join(gpus),
                spec["serve"]["command"],
            )
        self.running[id(unit)] = (unit, start_worker(spec, socket.gethostname()))

    def ckpt_dir(self, unit: Unit) -> Path:
        return self.output.resolve() / unit.name

    def release(self, unit: Unit, why: str) -> None:
        """The unit's GPUs back to the pool (once)."""
        gpus = self.held.pop(id(unit), None)
        self.up.discard(id(unit))
        self.since.pop(id(unit), None)
        self.shown.pop(id(unit), None)
        if gpus is not None:
            self.free += gpus
            log.info("%s: %s; GPUs [%s] back to the pool", unit.name, why, ",".join(gpus))

    def look(self) -> None:
        """Report servers that came up; take back the GPUs of servers that stopped."""
        for key, (unit, _) in list(self.running.items()):
            if key not in self.held:
                continue
            state = recorded(self.ckpt_dir(unit))
            if state.get("up") is not None and key not in self.up:
                self.up.add(key)
                log.info("%s: server(s) up after %.0f s", unit.name, state["up"])
            elif key not in self.up:
                self.still_starting(unit, state)
            if state.get("stopped"):
                self.release(unit, "servers stopped")

    def still_starting(self, unit: Unit, state: dict) -> None:
        """Every `STARTING_EVERY` seconds until the servers are up: a line with the last line
        of the first server's log (weights loading, compiling, ...)."""
        waited = time.monotonic() - self.since[id(unit)]
        if waited - self.shown.get(id(unit), 0.0) >= STARTING_EVERY and state.get("servers"):
            self.shown[id(unit)] = waited
            last = log_tail(Path(state["servers"][0]["log"]), 1)
            log.info("%s: server(s) starting, %.0f s: %s", unit.name, waited, last[:160])

    def wait(self, timeout: float) -> list[tuple[Unit, str | None]]:
        self.look()
        ended = super().wait(timeout)
        for unit, _ in ended:
            killed = stop_recorded(self.ckpt_dir(unit))  # a worker killed before it stopped them
            if killed:
                log.warning("%s: stopped server groups %s its worker left", unit.name, killed)
            self.release(unit, "worker ended")
        return ended

    def cancel(self) -> None:
        units = self.units()
        super().cancel()
        for unit in units:
            stop_recorded(self.ckpt_dir(unit))
            self.release(unit, "stopped")
