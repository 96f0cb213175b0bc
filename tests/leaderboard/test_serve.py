"""The board starts, feeds and stops its checkpoints' servers (`serve:`, `--gpus`): servers are
stub processes (serve_stub.py) that record what they got; every test checks by pid that no server
is left."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from evalpack.leaderboard import rundirs, serve
from tests.boards import evalpack
from tests.conftest import BACKSTOP, REPO, requires_shared, wait_for

STUB = Path(__file__).resolve().parent / "serve_stub.py"
TASKS = ["minerva_math_tulu_algebra", "minerva_math_tulu_geometry"]
LIMIT = 3


def stub_command(record: Path, *flags: str) -> str:
    return f"{sys.executable} {STUB} --port {{port}} --record {record} " + " ".join(flags)


def checkpoint(name: str, command: str, **serve_block) -> dict:
    return {
        "name": name,
        "model": "evalpack-chat",
        "model_args": {"model": "stub", "num_concurrent": 2, "max_retries": 1, "retry_delay": 0.05},
        "serve": {"command": command, "gpus_per_replica": 1, **serve_block},
    }


def write_board(root: Path, checkpoints: list[dict]) -> list[str]:
    """models.yaml and a suite of TASKS; the `leaderboard run` arguments for them."""
    (root / "models.yaml").write_text(json.dumps({"checkpoints": checkpoints}))
    (root / "suites.yaml").write_text(
        json.dumps({"two": {"tasks": [{"task": t, "chat": True} for t in TASKS]}})
    )
    return [
        *("--models", str(root / "models.yaml"), "--suites", str(root / "suites.yaml")),
        *("--suite", "two", "--output", str(root / "board"), "--limit", str(LIMIT)),
    ]


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def alive(pid: int) -> bool:
    """Running (a zombie whose parent died is gone: init reaps it, or in a PID namespace no
    one does)."""
    return serve.running(pid)


def assert_no_server_left(rows: list[dict]) -> None:
    """Every stub process that started (its own record) is gone, its group too."""
    pids = {row["pid"] for row in rows if row.get("event") == "start"}
    assert pids
    assert not [pid for pid in pids if alive(pid) or serve.group_alive(pid)]


def done(board: Path, ckpt: str) -> bool:
    return all((board / ckpt / task / rundirs.DONE_MARKER).is_file() for task in TASKS)


@requires_shared
def test_three_checkpoints_share_two_gpus_each_server_stopped_when_done(mirror, tmp_path):
    record = tmp_path / "served.jsonl"
    names = ["a", "b", "c"]
    args = write_board(tmp_path, [checkpoint(n, stub_command(record)) for n in names])
    result = evalpack("leaderboard", "run", *args, "--gpus", "0,1")
    assert result.returncode == 0, result.stderr
    board = tmp_path / "board"
    assert all(done(board, name) for name in names)
    rows = records(record)
    starts = [row for row in rows if row.get("event") == "start"]
    assert len(starts) == 3 and {row["cuda"] for row in starts} <= {"0", "1"}
    answers = [row for row in rows if "seed" in row]
    assert len(answers) == 3 * len(TASKS) * LIMIT  # every request answered once
    for name in names:  # each checkpoint's server stopped by the board, recorded by pid
        state = serve.recorded(board / name)
        assert state["stopped"] is True and len(state["servers"]) == 1
    assert "servers stopped; GPUs [" in result.stderr
    assert_no_server_left(rows)


@requires_shared
def test_replicas_share_one_stream_through_the_router(mirror, tmp_path):
    record = tmp_path / "served.jsonl"
    args = write_board(tmp_path, [checkpoint("r", stub_command(record), replicas=2)])
    result = evalpack("leaderboard", "run", *args, "--gpus", "0,1")
    assert result.returncode == 0, result.stderr
    rows = records(record)
    starts = {row["pid"]: row["cuda"] for row in rows if row.get("event") == "start"}
    assert sorted(starts.values()) == ["0", "1"]  # a GPU each
    per_server = [
        sum(row.get("seed") is not None and row["pid"] == p for row in rows) for p in starts
    ]
    assert sum(per_server) == len(TASKS) * LIMIT and min(per_server) > 0
    assert "requests per replica" in (tmp_path / "board" / "r" / rundirs.WORKER_LOG).read_text()
    assert_no_server_left(rows)


@requires_shared
def test_a_server_that_never_comes_up_fails_its_pairs_and_frees_its_gpu(mirror, tmp_path):
    record = tmp_path / "served.jsonl"
    never = checkpoint("never", stub_command(record, "--never-up"), start_timeout=2)
    fine = checkpoint("fine", stub_command(record))
    args = write_board(tmp_path, [never, fine])
    result = evalpack("leaderboard", "run", *args, "--gpus", "0", "--max_retries", "0")
    assert result.returncode == 1
    board = tmp_path / "board"
    for task in TASKS:
        reason = (board / "never" / task / rundirs.FAILED_MARKER).read_text()
        assert "did not answer /health within 2 s" in reason
        assert "stub: serving on port" in reason  # the last lines of the server's log
    assert done(board, "fine")  # on the GPU the failed one gave back
    assert_no_server_left(records(record))


@requires_shared
def test_a_server_that_dies_mid_run_is_restarted_and_nothing_is_generated_again(mirror, tmp_path):
    record = tmp_path / "served.jsonl"
    dying = stub_command(record, "--die-after", "2", "--once", str(tmp_path / "died"))
    args = write_board(tmp_path, [checkpoint("d", dying)])
    result = evalpack("leaderboard", "run", *args, "--gpus", "0", "--max_retries", "1")
    assert result.returncode == 0, result.stderr
    assert done(tmp_path / "board", "d")
    rows = records(record)
    assert len([row for row in rows if row.get("event") == "start"]) == 2
    seeds = [row["seed"] for row in rows if "seed" in row]
    assert len(seeds) == len(set(seeds)) == len(TASKS) * LIMIT  # none answered twice
    assert_no_server_left(rows)


def test_a_checkpoint_path_that_does_not_exist_is_found_before_anything_starts(tmp_path):
    record = tmp_path / "served.jsonl"
    missing = checkpoint("gone", stub_command(record))
    missing["model_args"]["model"] = str(tmp_path / "no-such-checkpoint")
    args = write_board(tmp_path, [missing])
    result = evalpack("leaderboard", "run", *args, "--gpus", "0", "--strict")
    assert result.returncode == 2
    assert f"checkpoint path {tmp_path / 'no-such-checkpoint'} does not exist" in result.stdout
    assert not record.exists() and not (tmp_path / "board" / "gone").exists()


def test_bad_serve_blocks_and_too_few_gpus_are_refused_with_one_line_each(tmp_path):
    bad = checkpoint("bad", "vllm serve {model} --port {port} --tp {tensor_parallel}")
    bad["serve"]["replica"] = 2
    big = checkpoint("big", "vllm serve {model} --port {port}", replicas=3)
    args = write_board(tmp_path, [bad])
    result = evalpack("leaderboard", "run", *args, "--gpus", "0")
    assert result.returncode == 2
    assert "serve: unknown key 'replica'" in result.stderr
    assert "unknown placeholder 'tensor_parallel'" in result.stderr
    args = write_board(tmp_path, [big])
    result = evalpack("leaderboard", "run", *args, "--gpus", "0,1")
    assert result.returncode == 2
    assert "'big' needs 3 GPUs (replicas x gpus_per_replica) and the board has 2" in result.stderr


def all_up(board: Path, names) -> bool:
    return all(serve.recorded(board / name).get("up") is not None for name in names)


def board_with_servers_up(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """A board of two checkpoints whose servers never answer, once both servers are up."""
    record = tmp_path / "served.jsonl"
    held = [checkpoint(n, stub_command(record, "--hold")) for n in ("x", "y")]
    args = write_board(tmp_path, held)
    board = subprocess.Popen(
        [sys.executable, "-m", "evalpack", "leaderboard", "run", *args, "--gpus", "0,1"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    wait_for(
        lambda: all_up(tmp_path / "board", ("x", "y")) or board.poll() is not None,
        "both servers up",
    )
    return board, record


def still_running(session: int, rows: list[dict]) -> str:
    """A line per process of the board's session (the board, its workers and what they started
    there) and per recorded server still alive: pid, parent, state, command line."""
    servers = {row["pid"] for row in rows if row.get("event") == "start"}
    lines = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():  # self, thread-self, the kernel's files
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
        except (OSError, ValueError):
            continue  # gone meanwhile
        fields = stat[stat.rfind(")") + 2 :].split()  # after the command's name
        if int(fields[3]) == session or int(entry.name) in servers:
            lines.append(f"{entry.name} parent {fields[1]} state {fields[0]}: {command}")
    return "\n".join(lines) or "nothing"


def stop_board(board: subprocess.Popen) -> None:
    if board.poll() is None:
        os.killpg(board.pid, signal.SIGKILL)
    board.wait()
    board.stderr.close()


@requires_shared
def test_ctrl_c_stops_every_server_the_board_started(mirror, tmp_path):
    board, record = board_with_servers_up(tmp_path)
    try:
        os.killpg(board.pid, signal.SIGINT)  # Ctrl-C reaches the terminal's whole group
        _, err = board.communicate(timeout=BACKSTOP)
    except subprocess.TimeoutExpired:
        stuck = still_running(board.pid, records(record))
        pytest.fail(f"no exit within {BACKSTOP} s of Ctrl-C; still running:\n{stuck}")
    finally:
        stop_board(board)
    assert board.returncode == 130, err.decode()
    assert b"interrupted during" in err
    assert_no_server_left(records(record))


@requires_shared
def test_no_server_outlives_a_board_killed_with_sigkill(mirror, tmp_path):
    board, record = board_with_servers_up(tmp_path)
    try:
        os.kill(board.pid, signal.SIGKILL)  # the board alone: no chance to stop anything
        board.wait()
        starts = [row["pid"] for row in records(record) if row.get("event") == "start"]
        # its workers die with it; each server's guard then kills the server's group
        wait_for(lambda: not any(alive(pid) for pid in starts), "the servers gone")
    finally:
        stop_board(board)
    assert_no_server_left(records(record))


def test_the_pool_places_checkpoints_by_the_gpus_they_need(tmp_path):
    from evalpack.leaderboard.executors import Unit
    from evalpack.leaderboard.gpu_pool import PoolExecutor, gpu_problems, parse_gpus

    pool = PoolExecutor(tmp_path, [], ["0", "1", "2"])
    two = Unit(checkpoint("two", "s {port}", gpus_per_replica=2), [])
    one = Unit(checkpoint("one", "s {port}"), [])
    cpu = Unit(checkpoint("cpu", "s {port}", gpus_per_replica=0), [])
    plain = Unit({"name": "plain", "model": "replay"}, [])
    assert pool.has_room(two) and pool.has_room(cpu) and pool.has_room(plain)
    pool.free = ["2"]  # as if `two` held 0 and 1
    pool.running = {1: (two, None)}
    assert not pool.has_room(two) and pool.has_room(one)  # a smaller one passes a larger one
    pool.running[2] = (cpu, None)
    assert not pool.has_room(cpu) and pool.has_room(plain)  # one CPU server, one plain at a time
    pool.running[3] = (plain, None)
    assert not pool.has_room(plain) and pool.has_room(one)
    assert parse_gpus("0, 1") == ["0", "1"] and parse_gpus("none") == []
    with pytest.raises(ValueError, match="distinct device ids"):
        parse_gpus("0,0")
    assert gpu_problems([two.checkpoint, one.checkpoint], ["0"]) == [
        "checkpoint 'two' needs 2 GPUs (replicas x gpus_per_replica) and the board has 1 (--gpus 0)"
    ]


def test_a_server_still_starting_gets_a_line_with_its_log(tmp_path, caplog):
    import time

    from evalpack.leaderboard.executors import Unit
    from evalpack.leaderboard.gpu_pool import STARTING_EVERY, PoolExecutor

    pool = PoolExecutor(tmp_path, [], ["0"])
    unit = Unit(checkpoint("slow", "s {port}"), [])
    (tmp_path / "slow").mkdir()
    log = tmp_path / "slow" / "server-0.log"
    log.write_text("INFO starting\nLoading safetensors checkpoint shards: 45%\n")
    (tmp_path / "slow" / serve.SERVE_FILE).write_text(
        json.dumps({"servers": [{"pid": None, "port": 1, "log": str(log)}], "stopped": False})
    )
    pool.running, pool.held = {id(unit): (unit, None)}, {id(unit): ["0"]}
    pool.since[id(unit)] = time.monotonic() - STARTING_EVERY - 1
    with caplog.at_level("INFO", logger="evalpack.leaderboard"):
        pool.look()
        pool.look()  # within the next STARTING_EVERY seconds: no second line
    lines = [r.getMessage() for r in caplog.records if "starting," in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].startswith("slow: server(s) starting, 3")
    assert lines[0].endswith(": Loading safetensors checkpoint shards: 45%")
