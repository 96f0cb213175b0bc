"""The untrusted side of `evalpack.execution`: a zygote interpreter that forks one sandboxed
candidate process per job. It never receives a test or an expected value.

    python -I -m evalpack.sandbox.zygote LEVEL CONTROL_FD UID VIEW_FD PRELUDE WHOLE  # a slot
    python -I -m evalpack.sandbox.zygote LEVEL probe           # print the isolation reached

LEVEL is "auto", or "session+limits" to force the fallback (the harness passes the user's
EVALPACK_SANDBOX on, as the zygote's environment is not the user's).

The harness starts it with a fresh minimal environment (limits.CANDIDATE_ENV), so no secret of
the user's shell is ever in its memory or in any candidate's. Set-up, once per zygote: as root
(where root may not create namespaces, or without root, the zygote falls back to
"session+limits" and says so; if namespaces are granted but a later step fails, it stops rather
than run half-isolated): an empty network namespace, the slot's cgroup (see `cgroups`) and the
minimal read-only root (see `rootfs`); at every level, the seccomp filter is compiled (see
`seccomp`), which the zygote then installs on itself, so that every candidate inherits it.

PRELUDE (trusted code from the jobs' task, usually empty) runs last, once: imports that every
candidate of the slot would make (BigCodeBench's libraries), so that each is forked with them
done. Such a zygote serves full-runtime jobs only, and shows itself the whole installation
first (`rootfs.show_full_runtime`; with a held runtime, WHOLE, that is its root already), so
that what it loads is where its candidates find it.

Per job: a fresh /tmp, then the candidate is cloned into new PID and IPC namespaces (see
`rootfs`); it drops to the slot's unprivileged uid, takes its resource limits and runs the
program, answering calls with plain data.
"""

from __future__ import annotations

import gc
import io
import json
import marshal
import mmap
import os
import resource
import signal
import socket
import sys
from collections import OrderedDict

from . import cgroups, counters, rootfs, seccomp
from .limits import (
    CANDIDATE_ENV,
    FALLBACK,
    FILE_SIZE_LIMIT,
    MRO_SENT,
    OPEN_FILES_LIMIT,
    OUTPUT_CAP,
    PROCESS_ADDRESS_LIMIT,
    PROCESS_LIMIT,
)
from .messages import encode_message, read_message, receive_message, remember
from .protocol import from_wire

PRELOADED = (
    "math",
    "re",
    "collections",
    "itertools",
    "functools",
    "string",
    "typing",
    "heapq",
    "bisect",
    "hashlib",
    "statistics",
    "fractions",
    "decimal",
    "datetime",
    "random",
    "operator",
    "copy",
    "json",
)
FULL = "namespaces+uid"
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 38, 36


class State:
    """What set-up reached: the level, the compiled seccomp filter, the slot's cgroup; the
    host-wide inode counters' places, made fresh between candidates (`counters`)."""

    def __init__(self, full: bool, bpf: bytes | None, group: cgroups.SlotGroup | None):
        self.full, self.bpf, self.group = full, bpf, group
        self.counters = counters.Scrambler()
        self.prelude_ran = False  # then it shows itself the whole installation: serves only
        #                           full-runtime jobs

    def describe(self) -> str:
        """e.g. "namespaces+uid+seccomp+cgroups"; a missing layer is left out."""
        return (
            (FULL if self.full else FALLBACK)
            + "+seccomp" * bool(self.bpf)
            + ("+cgroups" * bool(self.group))
        )


def set_up(level: str, uid: int | None, view_fd: int | None = None, whole: bool = False) -> State:
    """Enter full isolation where this host allows it (and `level` is not FALLBACK). `uid`
    None: a probe, which prepares a cgroup of its own without joining it. `view_fd`: the
    in-memory view of the installation the candidates see (`view`), if the harness has one;
    `whole`: it is a held runtime (`held`), all that full-runtime jobs see too."""
    for module in PRELOADED:
        __import__(module)
    full = level != FALLBACK and os.geteuid() == 0 and rootfs.enter_namespaces()
    families = seccomp.FULL_FAMILIES if full else seccomp.FALLBACK_FAMILIES
    bpf = seccomp.build(families, zygote_clones=full) if seccomp.available() else None
    group = None
    if full:  # from here on a failure is fatal: never a half-isolated zygote
        if view_fd is not None:  # (its residency constant, as the view's)
            rootfs.hold_mapped_files()
        if uid is not None:
            group = cgroups.join_slot(uid)
        else:
            group = cgroups.prepare("probe")
        rootfs.build_root(view_fd, whole)
        rootfs.fresh_scratch(0)
    elif view_fd is not None:
        os.close(view_fd)
    if bpf:
        rootfs.check(rootfs.libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        seccomp.install(bpf)  # inherited by every candidate
    return State(full, bpf, group)


# ---------------------------------------------------------------- the candidate


def _close_socket_layer() -> None:
    """Fallback when no network namespace can be had: no new sockets from Python (seccomp,
    where available, also refuses internet sockets to code that bypasses Python)."""

    def refuse(*args, **kwargs):
        raise OSError("network access is disabled in the sandbox")

    socket.socket = refuse  # type: ignore[misc]
    socket.create_connection = refuse  # type: ignore[assignment]


def _limit_resources(cpu_seconds: int) -> None:
    for limit, value in (
        (resource.RLIMIT_AS, PROCESS_ADDRESS_LIMIT),
        (resource.RLIMIT_CPU, cpu_seconds),
        (resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT),
        (resource.RLIMIT_NOFILE, OPEN_FILES_LIMIT),
        (resource.RLIMIT_NPROC, PROCESS_LIMIT),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(limit, (value, value))


class _CappedOutput(io.TextIOBase):
    """sys.stdout / sys.stderr of a candidate: the first OUTPUT_CAP bytes go to the capture
    file, the rest is dropped, so a chatty honest program neither blocks nor fails."""

    def __init__(self, fd: int):
        self.fd, self.room = fd, OUTPUT_CAP

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        data = text.encode("utf-8", "replace")[: self.room]
        if data:
            self.room -= os.write(self.fd, data)
        return len(text)


def _enter_candidate(channel: socket.socket, output_fd: int, request: dict, state: State) -> None:
    """Turn this freshly forked process into the sandboxed candidate (irreversibly)."""
    os.setsid()
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    sys.stdout = sys.stderr = _CappedOutput(1)
    os.closerange(3, channel.fileno())
    os.closerange(channel.fileno() + 1, 1 << 16)
    workdir = rootfs.WORKDIR if state.full else request["workdir"]
    os.chdir(workdir)
    os.environ.clear()  # the zygote's own environment is CANDIDATE_ENV already
    os.environ.update(CANDIDATE_ENV, HOME=workdir)
    rootfs.check(rootfs.libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if state.full:
        if request["full_runtime"]:
            rootfs.loopback_up()
            rootfs.bound_listen_queues()
        rootfs.own_proc()
        rootfs.runtime(request["full_runtime"])
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write("1000")  # the OOM killer takes a candidate before the zygote
        uid = request["uid"]
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    else:
        _close_socket_layer()
    rootfs.check(rootfs.libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    _limit_resources(request["cpu_seconds"])


def _serve_candidate(channel: socket.socket, request: dict) -> None:
    """Run the program, answer the planned calls in order (each answer sent as soon as it is
    computed), then answer calls of the entry point with plain data until killed."""
    namespace = {"__name__": "__candidate__"}
    try:
        exec(compile(request["program"], "<candidate>", "exec"), namespace)  # noqa: S102
        function = namespace[request["entry_point"]]
    except BaseException as exc:  # noqa: BLE001 (reported to the trusted side)
        channel.sendall(encode_message({"error": _describe(exc)}))
        return
    channel.sendall(encode_message({"ready": True}))
    for args in request["calls"]:
        channel.sendall(_answer(function, args, {}))
    calls = channel.makefile("rb")
    while True:
        args, kwargs = read_message(calls)
        channel.sendall(_answer(function, args, kwargs))


def _answer(function, args: list, kwargs: dict) -> bytes:
    """The call's result, or its exception (with its classes, see `_describe`). A result that
    is not plain data is named alone, so that the trusted side makes it a failure no test can
    catch, never the TypeError a test might expect."""
    try:
        result = function(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 (SystemExit included: a failure)
        return encode_message({"error": _describe(exc)})
    try:
        return encode_message({"result": result})
    except BaseException as exc:  # noqa: BLE001 (e.g. a rigged __eq__'s class: not plain)
        return encode_message({"error": _describe(exc)[:2]})


def _describe(exc: BaseException) -> list[str]:
    """[name, message, "module:qualname" of each class of its MRO (the first MRO_SENT)]: the
    trusted side raises the first standard one of them into the test (`errors`)."""
    try:
        text = str(exc)[:300]
    except BaseException:  # noqa: BLE001 (an exception whose str() fails)
        text = "(no description)"
    classes = []
    for cls in type(exc).__mro__[:MRO_SENT]:
        try:  # (whatever a candidate's class says: the trusted side looks up standard ones)
            classes.append(f"{cls.__module__}:{cls.__qualname__}")
        except BaseException:  # noqa: BLE001, S112 (a class rigged to raise: skipped)
            continue
    return [type(exc).__name__, text, *classes]


# ---------------------------------------------------------------- the zygote


def _receive_mapped(control: socket.socket, size: int) -> mmap.mmap | None:
    """`size` bytes of job data from the control line, received straight into a memory map
    of their own (no Python object holds them), which the zygote unmaps when done. Private: a
    candidate gets a copy by the fork, and a shared map would take a number of the shmem inode
    counter (`counters`)."""
    if not size:
        return None
    mapped = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
    with memoryview(mapped) as view:
        got = 0
        while got < size:
            chunk = control.recv_into(view[got:])
            if not chunk:
                raise EOFError("peer closed")
            got += chunk
    return mapped


def _take_plan(header: dict, control: socket.socket, plans: OrderedDict) -> mmap.mmap | None:
    """The job's planned calls (marshalled, in a memory map): sent with it, or kept from an
    earlier job under its key (the slot mirrors which keys are kept)."""
    key = header["calls_key"]
    if not key:
        return None
    sent = _receive_mapped(control, header["calls"])
    kept = dict(plans)
    remember(plans, key, sent or plans[key])
    for old_key, mapped in kept.items():
        if old_key not in plans:
            mapped.close()
    return plans[key]


def _only_this_job(plans: OrderedDict, plan: mmap.mmap | None) -> None:
    """In a candidate: unmap every plan but its own, so its memory holds its job's data only
    (the zygote's other state never held a test or another job's program)."""
    for mapped in plans.values():
        if mapped is not plan:
            mapped.close()
    plans.clear()


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _spawn(
    header: dict,
    job: mmap.mmap,
    plan: mmap.mmap | None,
    plans: OrderedDict,
    fds: list[int],
    state: State,
) -> tuple[int, int]:
    """Fork the candidate for the job whose data is mapped in `job` (and `plan`): its pid
    and a pidfd for it."""
    if state.prelude_ran and not header["full_runtime"]:  # (the pool never sends one)
        raise ValueError("a zygote that ran a prelude serves full-runtime jobs only")
    if state.full:
        rootfs.fresh_scratch(header["uid"])
        pid, pidfd = rootfs.clone_into_new_namespaces(network=header["full_runtime"])
    else:
        pid = os.fork()
        pidfd = os.pidfd_open(pid) if pid else -1
    if pid == 0:
        channel = socket.socket(fileno=fds[0])
        try:
            _only_this_job(plans, plan)
            request = {**header, **from_wire(job[:]), "calls": []}
            job.close()
            if plan is not None:
                request["calls"] = marshal.loads(plan)
                plan.close()
            _enter_candidate(channel, fds[1], request, state)
            _serve_candidate(channel, request)
        finally:
            os._exit(0)
    return pid, pidfd


def _run_prelude(source: str, state: State) -> None:
    """The slot's trusted prelude, run once before any candidate exists (see the module)."""
    state.prelude_ran = True
    if state.full:
        rootfs.show_full_runtime()
    exec(compile(source, "<zygote prelude>", "exec"), {"__name__": "__prelude__"})  # noqa: S102


def serve(
    level: str,
    control: socket.socket,
    uid: int,
    view_fd: int | None,
    prelude: str = "",
    whole: bool = False,
) -> None:
    """Answer spawn requests: fork a candidate, send back its pid and a pidfd for it. The
    trusted side kills it and waits for it through the pidfd; children are reaped here. Any
    error ends the zygote quietly: the harness starts a fresh one."""
    rootfs.libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    rootfs.libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    state = set_up(level, uid, view_fd, whole)
    if prelude:
        _run_prelude(prelude, state)
    gc.freeze()  # candidates' collections skip the zygote's objects (fewer copy-on-write faults)
    group = state.group and {"version": state.group.version, "dirs": state.group.dirs}
    state.counters.scramble()  # (and after each candidate, when the slot asks: `counters`)
    control.sendall(json.dumps({"isolation": state.describe(), "cgroup": group}).encode())
    plans: OrderedDict[str, mmap.mmap] = OrderedDict()  # recent jobs' planned calls, by key
    while True:
        try:
            marker, fds, _, _ = socket.recv_fds(control, 1, 2)
            if marker == counters.SCRAMBLE and not fds:  # the last candidate is gone
                state.counters.scramble()
                control.sendall(counters.SCRAMBLE)
                continue
            if not marker or len(fds) != 2:
                return
            header = receive_message(control)
            job = _receive_mapped(control, header["job"])
            plan = _take_plan(header, control, plans)
            _reap()
            pid, pidfd = _spawn(header, job, plan, plans, fds, state)
            job.close()  # the program leaves the zygote's memory
            for fd in fds:
                os.close(fd)
            socket.send_fds(control, [json.dumps({"pid": pid}).encode()], [pidfd])
            os.close(pidfd)
        except Exception:  # noqa: BLE001 (a broken request or a vanished harness)
            return


if __name__ == "__main__":
    if sys.argv[2] == "probe":
        print(set_up(sys.argv[1], None).describe())
    else:
        view_fd = int(sys.argv[4]) if sys.argv[4] != "-" else None
        control = socket.socket(fileno=int(sys.argv[2]))
        serve(sys.argv[1], control, int(sys.argv[3]), view_fd, sys.argv[5], sys.argv[6] == "True")
