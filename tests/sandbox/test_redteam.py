"""Red team: every attack is a real candidate program for `add(a, b)` that tries to pass
without adding, to escape, or to break the harness (`.venv/bin/pytest tests/sandbox -k redteam
-v`, as root like CI). "Escape probes" behave honestly only if their escape worked, so their
failing proves the escape was blocked. After the batch: no attack passed, each for the expected
reason, nothing outside the sandbox changed, no sandbox process is left, and the honest job
that follows each attack in the same batch passed.
"""

import re
import socket
import threading
from pathlib import Path

import pytest

from evalpack import execution
from evalpack.execution import run_jobs
from tests.sandbox.conftest import HONEST, job, needs_root
from tests.sandbox.redteam_cheats import CHEATS
from tests.sandbox.redteam_escapes import (
    CANARY,
    CANARY_DIR,
    ESCAPES,
    HOST_SHM_FILE,
    HOST_TMP_FILE,
    IPC_KEY,
    UNIX_SOCKET,
)

# name -> (candidate program, regex the verdict "outcome: reason" must match), in batch order
ATTACKS = {**CHEATS, **ESCAPES}


def host_ipc_objects(key):
    """System V shared memory segments and message queues under `key` on the host."""
    return [
        line
        for kind in ("shm", "msg")
        for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        if int(line.split()[0]) == key
    ]


@pytest.fixture
def canary():
    CANARY_DIR.mkdir(exist_ok=True)
    CANARY.write_text("keep me")
    CANARY.chmod(0o644)
    for path in (HOST_TMP_FILE, HOST_SHM_FILE):
        path.unlink(missing_ok=True)
    yield
    for file in CANARY_DIR.iterdir():
        file.unlink()
    CANARY_DIR.rmdir()


def _record_connections(server, seen, stop):
    while not stop.is_set():
        try:
            seen.append(server.accept())
        except OSError:
            continue


@pytest.fixture
def listeners():
    """A loopback TCP server and a world-writable Unix socket in the host's /tmp, both
    recording every connection they get."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    UNIX_SOCKET.unlink(missing_ok=True)
    unix.bind(str(UNIX_SOCKET))
    UNIX_SOCKET.chmod(0o777)
    seen, stop = [], threading.Event()
    threads = []
    for server in (tcp, unix):
        server.listen()
        server.settimeout(0.2)
        threads.append(threading.Thread(target=_record_connections, args=(server, seen, stop)))
        threads[-1].start()
    yield tcp.getsockname()[1], seen
    stop.set()
    for thread in threads:
        thread.join()
    tcp.close()
    unix.close()
    UNIX_SOCKET.unlink()


@needs_root
def test_redteam_every_attack_fails_and_leaves_no_trace(canary, listeners):
    port, connections = listeners
    names = list(ATTACKS)
    batch = []
    for name in names:
        batch += [job(ATTACKS[name][0].replace("PORT", str(port))), job(HONEST)]
    verdicts = run_jobs(batch)
    assert len(names) >= 25
    for name, attack, honest in zip(names, verdicts[::2], verdicts[1::2]):
        assert not attack.passed, (name, attack)
        assert re.match(ATTACKS[name][1], f"{attack.outcome}: {attack.reason}"), (name, attack)
        assert honest.passed, (name, honest)
        assert len(attack.output.encode()) <= execution.OUTPUT_CAP
    assert CANARY.read_text() == "keep me"
    assert CANARY.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in CANARY_DIR.iterdir()) == ["keep.txt"]
    assert not HOST_TMP_FILE.exists() and not HOST_SHM_FILE.exists()
    assert not Path("/usr/pwned").exists()
    assert not host_ipc_objects(IPC_KEY)
    assert connections == []
    assert execution.sandbox_processes() == []
    assert "PASSED" in verdicts[2 * names.index("fake_success_markers")].output
