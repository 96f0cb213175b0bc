"""Per-slot resource control with cgroups (v1, as on this machine, or v2).

Each pool slot (one sandbox uid) gets its own group, named after the uid, in every controller
it uses; the slot's zygote moves itself into it once at set-up, so every candidate it forks, and
everything a candidate starts, is in it from its first instruction. Between jobs the group
holds only the zygote (a few tens of MiB; about 120 MiB where its prelude loaded
BigCodeBench's libraries, which its candidates share), so its limits are the job's limits:

* memory: JOB_MEMORY_LIMIT for all processes of the job together, page cache, tmpfs and memfd
  pages and kernel memory included, no swap; past it the kernel's OOM killer kills the job's
  largest candidate process (candidates have oom_score_adj 1000, the zygote 0); on v1, TCP
  socket buffers apart, at most TCP_MEMORY_LIMIT (past it the job's sockets wait for room);
* pids: PROCESS_LIMIT + 1 (the zygote) tasks, threads included;
* cpu: one core at most (CFS quota = period) with the default weight, so a job that starts
  many processes or sessions (each would get its own scheduler autogroup in the root group)
  competes as one entity and cannot starve another slot;
* cpu accounting: the group's CPU time, which the harness reads before and after a job to
  judge it by its own work (on v1 the slot's trusted worker is in the cpu groups too, so the
  test's own work is in it; on v2 the harness adds the worker's process time).

The groups sit at the top of each hierarchy (`evalpack/slot-<uid>`), beside the caller's own
group rather than under it: the sandbox sets its own limits per job. The zygote, root and not
yet in its chroot, creates the groups and joins them (`join_slot`);
the slot's trusted worker joins the cpu and cpuacct groups only (`enter_cpu`), so that CPU
time and the one-core cap cover the whole job, test included; the harness reads the group's
CPU time and OOM kills (`cpu_clock`, `oom_kills`). Groups persist between runs and are reused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .limits import JOB_MEMORY_LIMIT, PROCESS_LIMIT, TCP_MEMORY_LIMIT

ROOT = "/sys/fs/cgroup"
PARENT = "evalpack"
V1_CONTROLLERS = ("memory", "cpu", "cpuacct", "pids")
CPU_PERIOD_US = 100_000


@dataclass
class SlotGroup:
    """Where a slot's accounting is read: `version` 1 or 2, and the group's directory per
    controller (v2: one directory under the key "")."""

    version: int
    dirs: dict[str, str]

    def path(self, controller: str, name: str) -> str:
        return os.path.join(self.dirs[controller if self.version == 1 else ""], name)


def available_version() -> int | None:
    """1 or 2 when this process may create groups with every controller needed, else None."""
    if os.geteuid() != 0:
        return None
    if os.path.exists(f"{ROOT}/cgroup.controllers"):
        wanted = {"memory", "cpu", "pids"}
        with open(f"{ROOT}/cgroup.controllers") as fh:
            return 2 if wanted <= set(fh.read().split()) else None
    mounted = all(os.path.exists(f"{ROOT}/{c}/cgroup.procs") for c in V1_CONTROLLERS)
    return 1 if mounted else None


def slot_group(name: str, version: int) -> SlotGroup:
    if version == 1:
        return SlotGroup(1, {c: f"{ROOT}/{c}/{PARENT}/{name}" for c in V1_CONTROLLERS})
    return SlotGroup(2, {"": f"{ROOT}/{PARENT}/{name}"})


def prepare(name: str) -> SlotGroup | None:
    """Create (or reuse) the group `name` with its limits set; None where no cgroup with
    every controller needed is available or the limits cannot be set (then nothing joins it,
    and the sandbox keeps its per-process limits)."""
    version = available_version()
    if version is None:
        return None
    group = slot_group(name, version)
    try:
        if version == 2:
            _enable_v2_controllers()
        for directory in group.dirs.values():
            os.makedirs(directory, exist_ok=True)
        for setting, value in _limits(version):
            _write(group.path(setting.split(".")[0], setting), value)
    except OSError:
        return None
    return group


def join_slot(uid: int) -> SlotGroup | None:
    """Prepare the slot's group and move this process (the zygote) into it; None where no
    cgroup is available, an error where joining fails half-way."""
    group = prepare(f"slot-{uid}")
    for directory in group.dirs.values() if group else ():
        _write(os.path.join(directory, "cgroup.procs"), "0")
    return group


def enter_cpu(group: SlotGroup) -> dict[str, str] | None:
    """Move this process (the slot's trusted worker) into the group's cpu and cpuacct
    controllers, not its memory or pids: a job's test and candidate then compete for CPU as one
    entity (which also keeps their message ping-pong quick under load), and the group's CPU time
    includes the test's. The directories left, to return to; None on v2, whose single hierarchy
    would put the worker under the candidates' memory and pids limits too."""
    if group.version != 1:
        return None
    previous = {}
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(","):
                if controller in ("cpu", "cpuacct"):
                    previous[controller] = f"{ROOT}/{controller}{path.rstrip('/')}"
    for controller in ("cpu", "cpuacct"):
        _write(os.path.join(group.dirs[controller], "cgroup.procs"), "0")
    return previous


def return_to(previous: dict[str, str]) -> None:
    for directory in previous.values():
        _write(os.path.join(directory, "cgroup.procs"), "0")


def _limits(version: int) -> list[tuple[str, str]]:
    if version == 1:
        return [
            ("memory.limit_in_bytes", str(JOB_MEMORY_LIMIT)),
            ("memory.memsw.limit_in_bytes", str(JOB_MEMORY_LIMIT)),
            ("memory.kmem.tcp.limit_in_bytes", str(TCP_MEMORY_LIMIT)),
            ("memory.swappiness", "0"),
            ("cpu.shares", "1024"),
            ("cpu.cfs_period_us", str(CPU_PERIOD_US)),
            ("cpu.cfs_quota_us", str(CPU_PERIOD_US)),
            ("pids.max", str(PROCESS_LIMIT + 1)),
        ]
    return [
        ("memory.max", str(JOB_MEMORY_LIMIT)),
        ("memory.swap.max", "0"),
        ("cpu.weight", "100"),
        ("cpu.max", f"{CPU_PERIOD_US} {CPU_PERIOD_US}"),
        ("pids.max", str(PROCESS_LIMIT + 1)),
    ]


def _enable_v2_controllers() -> None:
    os.makedirs(f"{ROOT}/{PARENT}", exist_ok=True)
    for directory in (ROOT, f"{ROOT}/{PARENT}"):
        _write(f"{directory}/cgroup.subtree_control", "+memory +cpu +pids")


def _write(path: str, value: str) -> None:
    if path.endswith(("memsw.limit_in_bytes", "memory.swap.max")) and not os.path.exists(path):
        return  # swap accounting is off on this kernel: there is no swap to limit
    with open(path, "w") as fh:
        fh.write(value)


_OPEN: dict[str, int] = {}  # accounting files, opened once per process and slot


def _descriptor(path: str) -> int:
    if path not in _OPEN:
        _OPEN[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    return _OPEN[path]


def _read(path: str) -> str:
    return os.pread(_descriptor(path), 4096, 0).decode()


def cpu_clock(group: SlotGroup):
    """A function returning the CPU time (user + system, seconds) used so far by everything
    that ever ran in the group; cheap enough to call at every wait."""
    if group.version == 1:
        fd = _descriptor(group.path("cpuacct", "cpuacct.usage"))
        return lambda: int(os.pread(fd, 64, 0)) / 1e9
    path = group.path("cpu", "cpu.stat")
    return lambda: _field(path, "usage_usec") / 1e6


def threads(group: SlotGroup) -> list[int]:
    """The thread ids (this PID namespace's) of every task in the group: the job's processes
    and all their threads, the zygote's (and on v1 the slot's trusted worker's)."""
    path = group.path("cpu", "tasks" if group.version == 1 else "cgroup.threads")
    try:
        return [int(tid) for tid in _read(path).split()]
    except (OSError, ValueError):
        return []


def oom_kills(group: SlotGroup) -> int:
    """Processes the OOM killer has killed in the group so far."""
    name = "memory.oom_control" if group.version == 1 else "memory.events"
    return _field(group.path("memory", name), "oom_kill")


def _field(path: str, key: str) -> int:
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0
