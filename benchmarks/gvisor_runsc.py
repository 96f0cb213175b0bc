"""The sandboxes of `gvisor.py`: gVisor's `runsc` running OCI bundles over one read-only root
(a sandbox per job, a long-lived one, one restored from a checkpoint) and `WORKER`, a program
that runs jobs one after another in forked children, in a sandbox or unsandboxed on the host."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

VENV, BASE = sys.prefix, os.path.realpath(sys.base_prefix)
PYTHON = str(Path(sys.prefix) / "bin" / "python")
PIPES = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
DONE = "=done "  # the worker's line after each job's own output

# A long-lived sandbox's worker: argv[1] is run once (a preload), then each stdin line is one
# job's source (JSON), run in a forked child with a CPU limit; the worker reports its exit code.
WORKER = f"""
import json, os, resource, sys
exec(sys.argv[1], {{}})
for line in sys.stdin:
    pid = os.fork()
    if pid == 0:
        resource.setrlimit(resource.RLIMIT_CPU, (4, 4))
        try:
            exec(json.loads(line), {{"__name__": "__main__"}})
            code = 0
        except BaseException:
            code = 1
        sys.stdout.flush()
        os._exit(code)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    sys.stdout.write(f"{DONE}{{code}}\\n")
    sys.stdout.flush()
"""


class Runsc:
    """OCI bundles over one read-only root in a temporary folder: `run` is a sandbox per job,
    `start` one that stays, `worker` one that stays and runs jobs."""

    def __init__(self, platform: str) -> None:
        self.platform, self.python, self.made = platform, PYTHON, 0
        self.work = Path(tempfile.mkdtemp(prefix="gvisor-bench-"))
        self.root = self.work / "rootfs"
        for path in ("usr", "proc", "tmp", "data", VENV[1:], BASE[1:]):
            (self.root / path).mkdir(parents=True, exist_ok=True)
        for link in ("bin", "lib", "lib64", "sbin"):
            (self.root / link).symlink_to(f"usr/{link}")
        self.data = self.work / "data"  # bound read-only at /data (the probes' shared file)
        self.data.mkdir()

    def bundle(self, args: list[str]) -> tuple[str, Path]:
        self.made += 1
        name = f"gvb{os.getpid()}-{self.made}"
        bundle = self.work / name
        bundle.mkdir()
        binds = [("/usr", "/usr"), (BASE, BASE), (VENV, VENV), (str(self.data), "/data")]
        mounts = [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs"},
        ] + [
            {"destination": d, "type": "bind", "source": s, "options": ["rbind", "ro"]}
            for s, d in binds
        ]
        process = {
            "args": args,
            "cwd": "/tmp",
            "env": ["PATH=/usr/bin", "HOME=/tmp", "PYTHONDONTWRITEBYTECODE=1"],
            "user": {"uid": 65534, "gid": 65534},
            "terminal": False,
        }
        # No pids limit: under the ptrace platform the sandbox's host processes are the
        # sentry's threads and a stub per address space, not the job's processes (64 ran out
        # after about 100 forked jobs in one sandbox).
        linux = {
            "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
            "resources": {"memory": {"limit": 2 << 30}},
            "cgroupsPath": f"/gvisor-bench/{name}",
        }
        config = {"ociVersion": "1.0.0", "process": process, "hostname": "job", "linux": linux}
        config |= {"root": {"path": str(self.root), "readonly": True}, "mounts": mounts}
        (bundle / "config.json").write_text(json.dumps(config))
        return name, bundle

    def runsc(self, *args: str) -> list[str]:
        state = f"--root={self.work / 'state'}"
        return ["runsc", state, f"--platform={self.platform}", "--network=none", *args]

    def run(self, args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
        name, bundle = self.bundle(args)
        command = self.runsc("run", f"--bundle={bundle}", name)
        try:
            return subprocess.run(
                command, check=False, capture_output=True, text=True, timeout=timeout
            )
        finally:
            self.delete(name, bundle)

    def start(self, args: list[str], image: Path | None = None) -> Worker:
        """A sandbox that stays, with pipes to its stdin and stdout; with `image`, restored
        from that checkpoint (of a sandbox with the same `args`) instead of started."""
        name, bundle = self.bundle(args)
        how = ["restore", f"--image-path={image}"] if image else ["run"]
        command = self.runsc(*how, f"--bundle={bundle}", name)
        return Worker(self, name, bundle, subprocess.Popen(command, **PIPES))

    def worker(self, preload: str = "", image: Path | None = None) -> Worker:
        return self.start([PYTHON, "-c", WORKER, preload], image)

    def checkpoint(self, preload: str = "") -> Path:
        """An image of a worker's sandbox that has run an empty job (after its `preload`),
        to restore sandboxes from (`worker(preload, image)`)."""
        worker = self.worker(preload)
        worker.job("pass")
        image = self.work / f"image-{worker.name}"
        image.mkdir()
        command = self.runsc("checkpoint", f"--image-path={image}", worker.name)
        subprocess.run(command, check=True, capture_output=True)
        worker.close()
        return image

    def delete(self, name: str, bundle: Path) -> None:
        subprocess.run(self.runsc("delete", "-force", name), check=False, capture_output=True)
        if bundle.parent == self.work:
            shutil.rmtree(bundle, ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)
        # runsc leaves a killed sandbox's groups behind, and their parent always
        groups = Path("/sys/fs/cgroup").glob(f"*/gvisor-bench/gvb{os.getpid()}-*")
        for group in [*groups, *Path("/sys/fs/cgroup").glob("*/gvisor-bench")]:
            with contextlib.suppress(OSError):  # in use (another run's)
                group.rmdir()


class Worker:
    """A long-lived sandbox (or, with no `runsc`, the same program on the host, unsandboxed):
    `job` for a `WORKER`'s jobs, `readline` for any other program."""

    def __init__(self, runsc: Runsc | None, name: str, bundle: Path, process: subprocess.Popen):
        self.runsc, self.name, self.bundle, self.process = runsc, name, bundle, process

    def job(self, source: str) -> tuple[int, list[str]]:
        """Runs one job in a fresh child of the worker: its exit code and output lines."""
        self.process.stdin.write(json.dumps(source) + "\n")
        self.process.stdin.flush()
        lines = []
        while not (line := self.process.stdout.readline()).startswith(DONE):
            if not line:
                raise RuntimeError(f"the worker in {self.name} ended")
            lines.append(line.rstrip("\n"))
        return int(line[len(DONE) :]), lines

    def readline(self) -> str:
        return self.process.stdout.readline().rstrip("\n")

    def cpu_seconds(self) -> float:
        """CPU time of the sandbox's processes on the host (its cgroup); on the host, of the
        worker and the jobs it has reaped."""
        if self.runsc is None:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        usage = Path(f"/sys/fs/cgroup/cpuacct/gvisor-bench/{self.name}/cpuacct.usage")
        return int(usage.read_text()) / 1e9

    def memory_mib(self) -> float:
        """Memory charged to the sandbox's cgroup on the host (its kernel's and the job's)."""
        usage = Path(f"/sys/fs/cgroup/memory/gvisor-bench/{self.name}/memory.usage_in_bytes")
        return int(usage.read_text()) / 2**20

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()
        if self.runsc is not None:
            self.runsc.delete(self.name, self.bundle)


def host_worker(preload: str = "") -> Worker:
    """`WORKER` on the host, no sandbox: the cost of the same jobs without gVisor."""
    return Worker(None, "host", Path(), subprocess.Popen([PYTHON, "-c", WORKER, preload], **PIPES))
