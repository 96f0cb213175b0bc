"""Ctrl-C during a served run, as a user presses it: SIGINT to the `evalpack` process group while
a slow server (tests/http_stub.py) is answering. Nothing more is sent, the answers in hand are
kept, the process exits within seconds with one line, and a rerun sends only the rest."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO, sigint_as_at_a_terminal
from tests.models.http_stub import Stub

DOCS, REPEATS, CONCURRENT = 8, 4, 2


@pytest.fixture
def stub():
    server = Stub().start()
    yield server
    server.stop()


def start_run(stub, tmp_path) -> subprocess.Popen:
    data = tmp_path / "problems.jsonl"
    data.write_text(
        "".join(
            json.dumps({"question": f"What is {i}+1?", "answer": str(i + 1)}) + "\n"
            for i in range(DOCS)
        )
    )
    args = (
        f"base_url={stub.url('/v1/chat/completions')},model=m,seed=1,"
        f"num_concurrent={CONCURRENT},retry_delay=0.1"
    )
    metadata = json.dumps({"data_file": str(data), "repeats": REPEATS})
    command = [
        sys.executable,
        "-m",
        "evalpack",
        "--model",
        "evalpack-chat",
        "--model_args",
        args,
        "--tasks",
        "aime24",
        "--apply_chat_template",
        "--metadata",
        metadata,
        "--use_cache",
        str(tmp_path / "cache"),
    ]
    sigint_as_at_a_terminal()
    return subprocess.Popen(
        command,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def answered(stub) -> list[int]:
    return [r["payload"]["seed"] for r in stub.records if "end" in r]


def interrupt(process: subprocess.Popen) -> float:
    os.killpg(process.pid, signal.SIGINT)
    return time.monotonic()


def finish(process: subprocess.Popen, seconds: float) -> tuple[int, str]:
    try:
        _, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"still running {seconds} s after Ctrl-C")
    return process.returncode, err


def test_ctrl_c_stops_sending_keeps_answers_and_a_rerun_sends_only_the_rest(stub, tmp_path):
    total = DOCS * REPEATS
    stub.delay = 1.0
    process = start_run(stub, tmp_path)
    wait_for(lambda: len(answered(stub)) >= 4, 90, "the first answers")
    pressed = interrupt(process)
    code, err = finish(process, 5)
    exited = time.monotonic()
    assert exited - pressed < 5
    assert code == 130
    late = [r for r in stub.records if r["start"] > pressed + 0.5]
    assert late == []  # nothing was sent after Ctrl-C
    assert len(stub.records) < total / 2
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    kept = answered(stub)
    assert lines[-1] == (
        f"evalpack: interrupted: {len(kept)} of {total} completions from "
        f"{stub.url('/v1/chat/completions')} are in hand; rerun the same "
        f"command to send only the other {total - len(kept)}"
    )

    stub.records.clear()
    stub.delay = 0.0
    rerun = start_run(stub, tmp_path)
    code, err = finish(rerun, 120)
    assert code == 0, err[-2000:]
    sent = [r["payload"]["seed"] for r in stub.records]
    assert len(sent) == total - len(kept)
    assert set(sent).isdisjoint(kept) and len(set(sent) | set(kept)) == total


def test_a_second_ctrl_c_exits_at_once(stub, tmp_path):
    stub.delay = 30.0  # nothing will arrive in the grace period
    process = start_run(stub, tmp_path)
    wait_for(lambda: len(stub.records) >= CONCURRENT, 90, "the first requests")
    interrupt(process)
    time.sleep(0.3)
    second = interrupt(process)
    code, err = finish(process, 5)
    # out before the 3 s the first Ctrl-C waits for answers in flight (load on CI included)
    assert time.monotonic() - second < 2.5
    assert code == 130 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"evalpack: interrupted: 0 of {DOCS * REPEATS}")
