"""What the trusted side runs (`Job`) and what it concludes (`Verdict`): plain data, the
fields explained in `evalpack.execution`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Job:
    program: str  # untrusted: the candidate's module source
    test: str  # trusted: code that calls `entry_point` (e.g. HumanEval `test` + `check(f)`)
    entry_point: str
    timeout: float = 3.0
    trusted_prelude: str = ""  # trusted: defined before the test runs (the prompt's helpers)
    calls: str = ""  # trusted: an expression for the positional arguments of each call the
    #                  test is expected to make, in order (optional; see "Planned calls")
    pure: tuple[str, ...] = ()  # trusted: functions the test defines whose results depend on
    #                             their arguments alone, computed once per worker (see `memo`)
    full_runtime: bool = False  # the whole installation, not the in-memory view (see `view`)
    held_runtime: tuple[str, ...] = ()  # full-runtime jobs: instead of the installation on
    #                                     disk, a copy held in memory of the view and these
    #                                     folders (or files; see `held`)
    zygote_prelude: str = ""  # trusted: code the job's zygote runs once, before it forks
    #                           candidates (imports every one of them makes); full-runtime
    #                           jobs only (see `zygote`)
    max_result: int = 0  # bytes of any message the candidate sends (its results), refused
    #                      before it is received past this; 0: `limits.MAX_MESSAGE`

    def __post_init__(self) -> None:
        if self.zygote_prelude and not self.full_runtime:
            raise ValueError("a zygote prelude is for full-runtime jobs only")
        if self.held_runtime and not self.full_runtime:
            raise ValueError("a held runtime is for full-runtime jobs only")


@dataclass
class Verdict:
    passed: bool
    outcome: str  # passed | failed | timeout | error | killed
    reason: str
    seconds: float  # wall time
    output: str = ""  # the candidate's stdout+stderr, capped
    cpu_seconds: float | None = None  # the job's own CPU time (None: no cgroup to measure it)
    limit: str = ""  # which limit decided the verdict: "cpu", "wall", "memory" or ""
    memo_seconds: float = 0.0  # of the job's time, what memoized results were charged (`memo`)
    kept: object = None  # what the trusted test left as `KEPT` (plain data), passed or not
