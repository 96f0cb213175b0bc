"""Sandboxed, unforgeable execution of untrusted model code against trusted tests.

    verdicts = run_jobs([Job(program, test, entry_point, timeout=3.0, trusted_prelude=prompt)])

`Job(program, test, entry_point, timeout=3.0, trusted_prelude="")`: `program` is the untrusted
candidate module (for HumanEval: prompt + completion); `test` is trusted code that calls
`entry_point` (HumanEval: the dataset's `test` + `check(<entry_point>)`); `trusted_prelude` is
trusted code run before the test, so that helpers the test calls directly exist on the trusted
side (HumanEval: the dataset's prompt, e.g. `encode_cyclic`, `poly`). Two optional trusted
speed-ups leave verdicts as they are: `calls`, an expression for the arguments of the calls the
test will make (HumanEval+'s `inputs`; see `evalpack.sandbox.plans`), and `pure`, names of
functions the test defines whose results depend on their arguments alone (HumanEval+'s
`ref_func`; see `evalpack.sandbox.memo`). A candidate reads an in-memory copy of the standard
library and numpy (so that the page cache carries nothing between jobs); `full_runtime=True`
shows it the whole installation on disk instead (BigCodeBench's jobs; docs/security.md), or
with `held_runtime=(folders)` an in-memory copy of the view, those folders and a few programs
and system files (BigCodeBench's recording runs and replays; `evalpack.sandbox.held`), and
`zygote_prelude`, trusted code the zygote of such jobs runs once before forking their
candidates (BigCodeBench's library imports; jobs with another prelude get another zygote).
`run_jobs(jobs)` returns, in order, one
`Verdict(passed, outcome, reason, seconds, output, cpu_seconds, limit, memo_seconds)` per job,
outcome one of passed | failed | timeout | error | killed; `limit` says whether the CPU-time
limit, the wall-clock limit or the memory limit decided it; `memo_seconds`, how much of
`cpu_seconds` memoized results were charged. Both are dataclasses
(`dataclasses.asdict` works).

`isolation()` names the layers this host gives candidates, e.g.
"namespaces+uid+seccomp+cgroups" (root, as on this machine and CI) or "session+limits+seccomp";
`network_isolation()` says how they are kept off the network. The implementation and its
threat model: `evalpack.sandbox` and docs/security.md.
"""

from __future__ import annotations

from functools import cache

from .sandbox import pool
from .sandbox.harness import CandidateFailure, Job, Verdict, run_jobs
from .sandbox.limits import JOB_MEMORY_LIMIT, MAX_MESSAGE, MAX_VALUES, OUTPUT_CAP, PROCESS_LIMIT
from .sandbox.pool import sandbox_processes
from .sandbox.protocol import NotPlainData, from_wire, to_wire

__all__ = [
    "JOB_MEMORY_LIMIT",
    "MAX_MESSAGE",
    "MAX_VALUES",
    "OUTPUT_CAP",
    "PROCESS_LIMIT",
    "CandidateFailure",
    "Job",
    "NotPlainData",
    "Verdict",
    "from_wire",
    "isolation",
    "network_isolation",
    "run_jobs",
    "sandbox_processes",
    "to_wire",
]


@cache
def isolation() -> str:
    """The layers this host allows, found by running the zygote's own set-up: "namespaces+uid"
    (root: empty network namespace, read-only minimal root, PID and IPC namespaces and an
    unprivileged uid per candidate) or "session+limits" (own session, resource limits, Python
    socket layer closed), then "+seccomp" where the syscall filter is available and
    "+cgroups" where each job's memory, processes and CPU are controlled and its CPU time
    measured (without it: limits per process and wall-clock time limits).
    EVALPACK_SANDBOX=session+limits forces the fallback level."""
    return pool.probe()


def network_isolation(full_runtime: bool = False) -> str:
    """How candidates are kept off the network: "empty network namespace" (no interface up),
    for a full-runtime job (`Job.full_runtime`) "loopback only" (a network namespace of its
    own), else "closed socket layer", which seccomp (where available) narrows to "unix
    sockets only" even for code that reaches the C library through ctypes."""
    layers = isolation()
    if layers.startswith("namespaces+uid"):
        return "loopback only" if full_runtime else "empty network namespace"
    return "unix sockets only" if "+seccomp" in layers else "closed socket layer"
