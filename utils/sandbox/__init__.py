"""The sandboxed executor behind `evalpack.execution` (its public API lives there).

trusted side: harness (proxies, time budgets), checks (a test's assertions as recorded checks,
so that a candidate's view does not depend on the expected answers), jobs (`Job`, `Verdict`),
pool (one zygote per worker), cgroups (per-slot resource control, read back for CPU time);
untrusted side: zygote (set-up, a slot's prelude, one candidate per job), rootfs (the minimal
read-only root), seccomp (the candidate's syscall filter); both: protocol (the plain-data wire
format) and limits. This file imports nothing, so the untrusted side never loads the harness.
"""
