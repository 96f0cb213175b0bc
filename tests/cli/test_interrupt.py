"""Ctrl-C during a served run, as a user presses it: SIGINT to the `evalpack` process group while
a server (tests/http_stub.py) holds answers in flight. Nothing more is sent, the answers in hand
and those in flight are kept, the process exits with one line, and a rerun sends only the rest.

The stub holds answers until the test releases them, so every assertion is on what happened
(requests sent, answers kept), none on how long it took: the run's grace period for answers in
flight is set far beyond any test's wait (`GRACE`), so the run ends because the answers came or
a second Ctrl-C said stop, never because a clock ran out."""

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from tests.conftest import BACKSTOP, REPO, sigint_as_at_a_terminal, wait_for
from tests.models.http_stub import Stub

DOCS, REPEATS, CONCURRENT = 8, 4, 2
GRACE = 3600.0  # seconds the run waits for answers in flight after Ctrl-C (product: 3)
HANDLED = "Ctrl-C: sending nothing more"  # the run's line once it took the Ctrl-C
# `python -m evalpack` with the grace period set to GRACE
COMMAND = (
    "import evalpack.models.served as served; "
    f"served.INTERRUPT_GRACE = {GRACE}; "
    "from evalpack.cli.cli import main; main()"
)


@pytest.fixture
def stub():
    server = Stub().start()
    yield server
    server.release.set()
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
        "-c",
        COMMAND,
        "--model",
        "evalpack-chat",
        "--model_args",
        args,
        "--tasks",
        "aime24_reasoning",
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
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def answered(stub) -> list[int]:
    return [r["payload"]["seed"] for r in stub.records if "end" in r]


class Stderr:
    """The process's stderr lines as they come (read on a thread until it closes)."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, args=(process.stderr,), daemon=True)
        self._reader.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append(line)

    def says(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def all(self) -> str:
        self._reader.join(BACKSTOP)
        return "".join(self.lines)


def ctrl_c_taken(process: subprocess.Popen, stderr: Stderr) -> None:
    """Press Ctrl-C and wait until the run says it took it."""
    os.killpg(process.pid, signal.SIGINT)
    wait_for(lambda: stderr.says(HANDLED), "the run to take Ctrl-C")


def finish(process: subprocess.Popen, stderr: Stderr) -> tuple[int, str]:
    try:
        process.wait(timeout=BACKSTOP)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail(f"still running {BACKSTOP} s after Ctrl-C")
    return process.returncode, stderr.all()


def test_ctrl_c_stops_sending_keeps_answers_and_a_rerun_sends_only_the_rest(stub, tmp_path):
    total = DOCS * REPEATS
    stub.held_after = 4  # 4 answers come back, the next requests wait in flight
    process = start_run(stub, tmp_path)
    stderr = Stderr(process)
    wait_for(lambda: len(answered(stub)) == 4 and stub.in_flight == CONCURRENT, "4 answers")
    ctrl_c_taken(process, stderr)
    assert f"waiting up to {GRACE:g} s for the {CONCURRENT} answers in flight" in "".join(
        stderr.lines
    )
    stub.release.set()  # the answers in flight arrive after Ctrl-C
    code, err = finish(process, stderr)
    assert code == 130
    assert len(stub.records) == 4 + CONCURRENT  # nothing was sent after Ctrl-C
    assert "Traceback" not in err
    kept = answered(stub)
    assert len(kept) == 4 + CONCURRENT  # the answers in flight are kept too
    assert err.strip().splitlines()[-1] == (
        f"evalpack: interrupted: {len(kept)} of {total} completions from "
        f"{stub.url('/v1/chat/completions')} are in hand; rerun the same "
        f"command to send only the other {total - len(kept)}"
    )

    stub.records.clear()
    stub.held_after = None
    rerun = start_run(stub, tmp_path)
    code, err = finish(rerun, Stderr(rerun))
    assert code == 0, err[-2000:]
    sent = [r["payload"]["seed"] for r in stub.records]
    assert len(sent) == total - len(kept)
    assert set(sent).isdisjoint(kept) and len(set(sent) | set(kept)) == total


def test_a_second_ctrl_c_exits_at_once(stub, tmp_path):
    stub.held_after = 0  # no answer comes back until the test ends
    process = start_run(stub, tmp_path)
    stderr = Stderr(process)
    wait_for(lambda: stub.in_flight == CONCURRENT, "the first requests")
    ctrl_c_taken(process, stderr)
    os.killpg(process.pid, signal.SIGINT)
    # it exits although the answers in flight never come and the grace period is an hour
    code, err = finish(process, stderr)
    assert code == 130 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"evalpack: interrupted: 0 of {DOCS * REPEATS}")
