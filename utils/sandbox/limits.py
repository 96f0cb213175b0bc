"""Limits shared by the harness and the zygote (plain constants; no imports of either side)."""

MAX_MESSAGE = 64 * 1024 * 1024  # bytes of one encoded call, result or spawn request (HumanEval+
#                                 reference results reach 16 MB: a list of a million floats)
MAX_VALUES = 1 << 22  # values (scalars and containers) in one message
OUTPUT_CAP = 64 * 1024  # bytes of stdout+stderr kept per job
MRO_SENT = 16  # classes of a candidate's exception named to the trusted side (its MRO's first)
PLANS_KEPT = 4  # planned-call lists a zygote keeps for later jobs (it counts against the memory
#                 limit of the slot: a HumanEval+ plan decodes to a few MB at most)
MEMO_BYTES = 128 * 1024**2  # memoized results a trusted worker keeps (of one test: see `memo`)
JOB_MEMORY_LIMIT = 2 * 1024**3  # per job with cgroups (all its processes, memfd and tmpfs included)
PROCESS_ADDRESS_LIMIT = 2 * 1024**3  # every process's address space (RLIMIT_AS), cgroups or not
# per job with cgroups v1, its TCP socket buffers (a BigCodeBench job's loopback): v1 leaves them
# out of the memory limit and counts them against the host-wide net.ipv4.tcp_mem, which one job
# filling its loopback could exhaust for every TCP socket on the machine; v2 counts them in
# JOB_MEMORY_LIMIT. Slots times this stays far below tcp_mem (2.2 GiB on this 24 GiB machine).
TCP_MEMORY_LIMIT = 64 * 1024**2
# A full-runtime job's own network namespace (`rootfs.bound_listen_queues`). cgroups v1 charge a
# connection to the job's group only once it is accepted: what connections left in listen queues
# hold counts against tcp_mem alone. There each listener queues at most LISTEN_BACKLOG + 1 of them
# (net.core.somaxconn caps listen()'s backlog), each holding at most TCP_RECEIVE_BUFFER
# (net.ipv4.tcp_rmem's default; seccomp ignores SO_RCVBUF and SO_RCVLOWAT, which would raise it)
# until accepted. A job holds at most PROCESS_LIMIT x OPEN_FILES_LIMIT listeners, and as many in
# flight in Unix sockets: 2,112 x 6 x 16 KiB = 198 MiB at most, beside its TCP_MEMORY_LIMIT.
LISTEN_BACKLOG = 5  # socketserver's and http.server's own default
TCP_RECEIVE_BUFFER = 16 * 1024  # where autotuning starts for accepted and connected sockets
FILE_SIZE_LIMIT = 16 * 1024**2
OPEN_FILES_LIMIT = 64
PROCESS_LIMIT = 32  # per job (pids cgroup) and per sandbox uid (RLIMIT_NPROC)
SCRATCH_SIZE = "64m"  # the candidate's /tmp
UID_BASE = 61000  # sandbox uids UID_BASE .. UID_BASE + UID_SLOTS - 1, one per concurrent slot
UID_SLOTS = 256
KILL_GRACE = 30.0  # seconds a SIGKILLed candidate may take to be gone before the harness errs
# With CPU accounting a job is judged by its own CPU time (`timeout` seconds); wall time is
# only a backstop for jobs that wait instead of computing: WALL_FACTOR * timeout + WALL_EXTRA.
WALL_FACTOR = 3.0
WALL_EXTRA = 2.0
LEVEL_ENV = "EVALPACK_SANDBOX"  # "session+limits" forces the fallback (to test it as root)
FALLBACK = "session+limits"
CANDIDATE_ENV = {  # the whole environment of the zygote and its candidates, built fresh
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",  # numpy: one thread, as the slot has one core
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
