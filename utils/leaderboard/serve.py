"""The model servers of a checkpoint that says how to serve it (its `serve:` block):

    serve:
      command: "vllm serve {model} --port {port} --tensor-parallel-size {gpus_per_replica}"
      gpus_per_replica: 1     # placeholders: {model} {port} {gpus} {gpus_per_replica}
      replicas: 1
      start_timeout: 900      # optional: seconds a server has to answer /health

The worker of such a checkpoint (`worker`) starts its servers here: each replica on a free port
of 127.0.0.1, with `CUDA_VISIBLE_DEVICES` set to its own share of the GPUs the board gave the
checkpoint, in a process group of its own (a shell command and everything it starts) led by a
`serve_guard` that kills the group if the worker dies, its output in
`<checkpoint>/server-<replica>.log`. It waits (bounded) until every replica answers
`GET /health`, points the pairs at them (one replica: its URL; more: a balancing `router`), and
stops every group by pid as soon as the checkpoint's last request is answered.
`<checkpoint>/serve.json` records the servers (pids, ports, GPUs) and whether they are stopped:
the board reads it to give the GPUs back early and to stop any group still alive after the
worker ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .rundirs import write_whole

PLACEHOLDERS = ("model", "port", "gpus", "gpus_per_replica")
KEYS = ("command", "gpus_per_replica", "replicas", "start_timeout")
# the path each served backend posts to, below the server's root
ENDPOINTS = {
    "evalpack-chat": "/v1/chat/completions",
    "evalpack-completions": "/v1/completions",
    "evalpack-sglang": "/generate",
    "local-chat-completions": "/v1/chat/completions",
    "local-completions": "/v1/completions",
}
HEALTH = "/health"
SERVE_FILE = "serve.json"
START_TIMEOUT = 900.0  # seconds: a large checkpoint's weights load and compile for minutes
STOP_GRACE = 15.0  # seconds between SIGTERM and SIGKILL
LOG_TAIL = 5  # lines of a server's log in a failed pair's reason


def serve_of(ckpt: dict) -> dict | None:
    """The checkpoint's `serve:` block with its defaults, or None."""
    serve = ckpt.get("serve")
    if not isinstance(serve, dict):
        return None
    return {
        "command": str(serve.get("command", "")),
        "gpus_per_replica": int(serve.get("gpus_per_replica", 1)),
        "replicas": int(serve.get("replicas", 1)),
        "start_timeout": float(serve.get("start_timeout", START_TIMEOUT)),
    }


def gpus_needed(ckpt: dict) -> int:
    serve = serve_of(ckpt)
    return serve["gpus_per_replica"] * serve["replicas"] if serve else 0


def served_model(ckpt: dict) -> str:
    """What `{model}` stands for: the checkpoint's `model_args.model` (the name requests carry)."""
    args = ckpt.get("model_args") or {}
    return str(args.get("model", "")) if isinstance(args, dict) else ""


def serve_problems(ckpt: dict) -> list[str]:
    """What is wrong with a checkpoint's `serve:` block (empty when nothing is)."""
    serve = ckpt.get("serve")
    if not isinstance(serve, dict):
        return ["serve must be a mapping {command, gpus_per_replica, replicas}"]
    problems = [
        f"serve: unknown key {k!r}; known: {', '.join(KEYS)}" for k in serve if k not in KEYS
    ]
    command = serve.get("command")
    if not isinstance(command, str) or "{port}" not in command:
        problems.append("serve: `command` must be a string with a {port} placeholder")
    else:
        try:
            command.format(**dict.fromkeys(PLACEHOLDERS, ""))
        except (KeyError, IndexError, ValueError) as exc:
            problems.append(
                f"serve: command has an unknown placeholder {exc}; known: "
                + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
            )
    for key, least in (("gpus_per_replica", 0), ("replicas", 1)):
        value = serve.get(key, 1)
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            problems.append(f"serve: {key} must be a whole number >= {least}")
    if ckpt.get("model") not in ENDPOINTS:
        problems.append(
            f"serve needs a served backend ({', '.join(ENDPOINTS)}), not {ckpt.get('model')!r}"
        )
    if not served_model(ckpt):
        problems.append("serve needs model_args.model (the {model} the server loads)")
    if isinstance(ckpt.get("model_args"), dict) and "base_url" in ckpt["model_args"]:
        problems.append("serve fills in base_url itself: remove it from model_args")
    return problems


def model_path_problem(ckpt: dict) -> str | None:
    """A served checkpoint whose `{model}` is a local path (absolute, ./, ../ or ~) that does not
    exist; a hub name (org/name) is the server's to resolve."""
    model = served_model(ckpt)
    if model.startswith(("/", "./", "../", "~")) and not Path(model).expanduser().exists():
        return f"checkpoint path {model} does not exist (its serve: {{model}})"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_command(serve: dict, model: str, port: int, gpus: list[str]) -> str:
    values = {
        "model": shlex.quote(model),
        "port": port,
        "gpus": ",".join(gpus),
        "gpus_per_replica": serve["gpus_per_replica"],
    }
    return serve["command"].format(**values)


def log_tail(log: Path, lines: int = LOG_TAIL) -> str:
    """The last lines of a server's log, on one line."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept) or "(empty log)"


@dataclass
class Server:
    """One replica: its GPUs, port, log and process (the leader of its own process group)."""

    replica: int
    gpus: list[str]
    port: int
    log: Path
    proc: subprocess.Popen | None = None

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, serve: dict, model: str) -> None:
        command = server_command(serve, model, self.port, self.gpus)
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(self.gpus)}
        guarded = [sys.executable, "-m", f"{__package__}.serve_guard", str(os.getpid())]
        with open(self.log, "a", encoding="utf-8") as out:
            out.write(f"$ CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']} {command}\n")
            out.flush()
            self.proc = subprocess.Popen(
                [*guarded, command],  # the group's leader kills it if this process dies
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: stopped as a whole
                env=env,
            )

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.root + HEALTH, timeout=2) as answer:
                return answer.status == 200
        except (OSError, ValueError):
            return False

    def exited(self) -> str | None:
        """Why the server is gone ('exited with status N'), or None while it runs."""
        code = self.proc.poll() if self.proc else None
        return None if code is None else f"exited with status {code}"

    def describe(self) -> dict:
        return {
            "replica": self.replica,
            "pid": self.proc.pid if self.proc else None,
            "port": self.port,
            "gpus": self.gpus,
            "log": str(self.log),
        }


def wait_healthy(servers: list[Server], timeout: float, step: float = 0.5) -> str | None:
    """Wait until every server answers /health; the problem (with the log's last lines) of the
    first that exits or is not up within `timeout` seconds, or None."""
    deadline = time.monotonic() + timeout
    waiting = list(servers)
    while waiting:
        waiting = [server for server in waiting if not server.healthy()]
        for server in waiting:
            gone = server.exited()
            if gone:
                return (
                    f"server of replica {server.replica} {gone} before it answered {HEALTH}; "
                    f"last lines of {server.log.name}: {log_tail(server.log)}"
                )
        if waiting and time.monotonic() > deadline:
            server = waiting[0]
            return (
                f"server of replica {server.replica} did not answer {HEALTH} within "
                f"{timeout:g} s; last lines of {server.log.name}: {log_tail(server.log)}"
            )
        if waiting:
            time.sleep(step)
    return None


def running(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie (one whose parent died before reaping
    it is a zombie until init does, and holds nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """The running processes of group `pgid` (Linux: from /proc; elsewhere [pgid] while the
    group can be signalled)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or the id is someone else's now
        return []
    if not Path("/proc/self/stat").exists():
        return [pgid]
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[2] == str(pgid) and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def group_alive(pgid: int) -> bool:
    """Whether any process of the group `pgid` is still running (zombies aside)."""
    return bool(group_members(pgid))


def ours(server: dict) -> bool:
    """Whether the group `serve.json` recorded for `server` is still that server's (a member's
    command line names its port), not another's that got the same id since."""
    for pid in group_members(server["pid"]):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            return True  # no /proc to ask
        if str(server["port"]) in command:
            return True
    return False


def stop_group(pid: int, proc: subprocess.Popen | None = None, grace: float = STOP_GRACE) -> None:
    """SIGTERM to the process group `pid` leads, SIGKILL to what is left after `grace` seconds;
    returns once none of the group is left (a child `proc` is reaped)."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if proc is not None:
                proc.poll()
            if not group_alive(pid):
                return
            time.sleep(0.05)


def record(ckpt_dir: Path, servers: list[Server], **state) -> None:
    """`serve.json`: the servers and their state (`up`: seconds to health, `stopped`, ...)."""
    path = ckpt_dir / SERVE_FILE
    current = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    current.update(state, servers=[server.describe() for server in servers])
    write_whole(path, json.dumps(current))


def recorded(ckpt_dir: Path) -> dict:
    path = ckpt_dir / SERVE_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def stop_recorded(ckpt_dir: Path, grace: float = STOP_GRACE) -> list[int]:
    """Stop every server group `serve.json` lists that is still alive (a worker killed before it
    stopped them, a board killed -9 before its guards acted); the pids stopped."""
    stopped = []
    for server in recorded(ckpt_dir).get("servers", []):
        if server.get("pid") and ours(server):
            stop_group(server["pid"], grace=grace)
            stopped.append(server["pid"])
    return stopped
