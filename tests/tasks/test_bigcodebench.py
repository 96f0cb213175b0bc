"""bigcodebench_hard_tulu / bigcodebench_tulu: OLMES-identical requests, OLMES's calibration
(sanitise against the entry point, code_prompt prepended) on hand-written completions, and
BigCodeBench's unittest classes run in the sandbox (scratch folder, time limits, no network).

Tests that execute need BigCodeBench's libraries (`python -m evalpack.hooks.bigcodebench.libs
install`); without them they skip, saying so."""

import json
import subprocess
import sys

import pytest

from evalpack import execution
from evalpack.core.text import cut_at_stops
from evalpack.hooks.bigcodebench import libs as bigcodebench_libs
from evalpack.hooks.bigcodebench import task as bigcodebench
from evalpack.scoring.code_sanitize import code_extract, sanitize
from tests.conftest import (
    DATA_DIR,
    OLMES_REF,
    chat_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
    task_manager,
)

requires_libs = pytest.mark.skipif(
    not bigcodebench_libs.installed(),
    reason=f"BigCodeBench's libraries are not installed in {bigcodebench_libs.folder()} "
    "(python -m evalpack.hooks.bigcodebench.libs install)",
)
FULL = "bigcode__bigcodebench/default/v0.1.2.jsonl"
HARD = "bigcode__bigcodebench-hard/default/v0.1.2.jsonl"
TASKS = {
    "bigcodebench_hard_tulu": "bigcodebench_hard::tulu",
    "bigcodebench_tulu": "bigcodebench::tulu",
}


def unseen_requests(task):
    return [r for r in read_jsonl(OLMES_REF / "requests_dev_unseen.jsonl") if r["task"] == task]


def rows(name):
    return read_jsonl(DATA_DIR / name)


@requires_shared
@pytest.mark.parametrize("task", TASKS)
def test_requests_identical_to_olmes(mirror, task):
    reference = unseen_requests(TASKS[task])
    built = {inst.doc["doc_key"]: inst for inst in chat_requests(task)}
    assert len(reference) == 3 and len(built) == (148 if "hard" in task else 1140)
    for ref in reference:
        inst = built[ref["key"]]
        context, gen_kwargs = inst.args
        messages = json.loads(context)
        # lm-eval passes the assistant prefix as a final assistant message to continue
        assert messages[:-1] == ref["messages"]
        assert messages[-1] == {"role": "assistant", "content": ref["assistant_prefix"]}
        assert gen_kwargs["until"] == ref["stop_sequences"] == bigcodebench.STOP_STRINGS
        olmes_kwargs = ref["generation_kwargs"]
        assert gen_kwargs["max_gen_toks"] == olmes_kwargs["max_gen_toks"] == 1280
        assert gen_kwargs["do_sample"] is olmes_kwargs["do_sample"] is False
        assert gen_kwargs["temperature"] == olmes_kwargs["temperature"] == 0.0
        assert inst.repeats == ref["repeats"] == 1


@requires_shared
def test_metadata_names_the_primary_metric(mirror):
    tasks = task_manager().load(list(TASKS))["tasks"]
    for task in tasks.values():
        metadata = task.config.metadata
        assert metadata["primary"] == {"metric": "pass_at_1", "filter": "execution"}
        assert metadata["chat"] is True and "BigCodeBench" in metadata["label"]


# --- OLMES's calibration on hand-written completions (BigCodeBench/1: count random letters,
# whose test calls random.seed without importing random: the calibrated program's imports
# supply it) ------------------------------------------------------------------------------
BODY = (
    "    if length < 0:\n        raise ValueError('negative')\n"
    "    letters = random.choices(string.ascii_letters, k=length)\n"
    "    return dict(collections.Counter(letters))\n"
)
COMPLETIONS = {
    # a whole script with its own imports, a main guard and a trailing fence (cut at the stops)
    "full_script": (
        "import collections\nimport random\nimport string\n\n\n"
        "def task_func(length=100):\n"
        + BODY
        + "\n\nif __name__ == '__main__':\n    print(task_func(5))\n```\n"
    ),
    # the function alone: code_prompt's imports make it work
    "function_only": "def task_func(length=100):\n" + BODY + "```",
    # no fence, prose before and after the code: sanitising keeps the code
    "prose_around": (
        "Here is the solution.\n\nimport random\ndef task_func(length=100):\n"
        + BODY
        + "\nThe function draws letters and counts them with a Counter."
    ),
    # a helper it uses is kept; top-level demo code is dropped
    "helper_and_demo": (
        "def _draw(length):\n    return random.choices(string.ascii_letters, "
        "k=length)\n\ndef task_func(length=100):\n    if length < 0:\n"
        "        raise ValueError\n    return dict(collections.Counter(_draw("
        "length)))\n\nresult = task_func(3)\nassert len(result) <= 3\n"
    ),
    # the right code under another name: task_func stays code_prompt's `pass`
    "wrong_entry_point": "def count_letters(length=100):\n" + BODY,
    # OLMES quirk: a decorated definition is not a definition to the sanitiser, so it is dropped
    "decorated": "import functools\n@functools.wraps(len)\ndef task_func(length=100):\n" + BODY,
}
EXPECTED = {
    "full_script": True,
    "function_only": True,
    "prose_around": True,
    "helper_and_demo": True,
    "wrong_entry_point": False,
    "decorated": False,
}


def doc_1():
    doc = rows(FULL)[1]
    assert doc["task_id"] == "BigCodeBench/1"
    return {**doc, "timeout": bigcodebench.DEFAULT_TIMEOUT}


def calibrated(doc, name):
    return bigcodebench.calibrated_program(
        doc, cut_at_stops(COMPLETIONS[name], bigcodebench.STOP_STRINGS)
    )


@requires_shared
def test_calibration_programs_are_olmes_programs():
    doc = doc_1()
    head = doc["code_prompt"] + "\n    pass\n"
    assert calibrated(doc, "full_script") == head + (
        "import collections\nimport random\nimport string\ndef task_func(length=100):\n"
        + BODY.rstrip("\n")
    )
    assert calibrated(doc, "function_only") == head + "def task_func(length=100):\n" + BODY.rstrip(
        "\n"
    )
    assert calibrated(
        doc, "prose_around"
    ) == head + "import random\ndef task_func(length=100):\n" + BODY.rstrip("\n")
    helper = calibrated(doc, "helper_and_demo")
    assert "def _draw" in helper and "result = " not in helper and "assert" not in helper
    # nothing reaches task_func: no import, no definition is kept, so the raw code stays
    assert calibrated(
        doc, "wrong_entry_point"
    ) == head + "def count_letters(length=100):\n" + BODY.rstrip("\n")
    assert calibrated(doc, "decorated") == head + "import functools"


def test_code_extract_takes_the_longest_parsing_run():
    text = "Sure:\ndef f():\n    return 1\n\nx = f()\nThat is all."
    assert code_extract(text) == "def f():\n    return 1\n\nx = f()"
    assert code_extract("no code here") == "no code here"  # one line: itself
    assert code_extract("a b\nc d") == "a b"  # nothing parses: the first line
    # an unreached assignment is dropped, a reached one kept, imports always kept
    code = "import os\nLIMIT = 3\nOTHER = 4\ndef f():\n    return LIMIT\n"
    assert sanitize(code, "f") == "import os\nLIMIT = 3\ndef f():\n    return LIMIT"


def test_sanitising_prints_nothing_about_the_completions_text():
    # BigCodeBench/655's prompt has "\W" in a plain string: the compiler warns at every parse
    code = 'import re\ndef task_func(t):\n    return re.sub("[\\W_]+", " ", t)\n'

    def stderr_of(statement: str) -> str:
        command = [sys.executable, "-W", "always", "-c", statement]
        return subprocess.run(command, check=True, capture_output=True, text=True).stderr

    assert "invalid escape sequence" in stderr_of(f"import ast; ast.parse({code!r})")
    sanitising = "from evalpack.scoring.code_sanitize import sanitize; sanitize({!r}, 'task_func')"
    assert stderr_of(sanitising.format(code)) == ""


@requires_shared
@requires_libs
def test_calibration_verdicts():
    doc = doc_1()
    names = list(COMPLETIONS)
    jobs = [
        bigcodebench.job(doc, calibrated(doc, n), str(bigcodebench_libs.folder())) for n in names
    ]
    # the function alone without calibration: the test's `random` does not exist
    bare = sanitize(COMPLETIONS["function_only"], "task_func")
    jobs.append(bigcodebench.job(doc, bare, str(bigcodebench_libs.folder())))
    verdicts = execution.run_jobs(jobs)
    assert {n: v.passed for n, v in zip(names, verdicts)} == EXPECTED
    assert not verdicts[-1].passed and "NameError" in verdicts[-1].reason


# --- the runner in the sandbox -----------------------------------------------------------
def synthetic_doc(test, timeout=5.0):
    return {"test": "import unittest\n" + test, "timeout": timeout}


SCRATCH_TEST = """
class TestCases(unittest.TestCase):
    def test_writes_in_the_working_directory(self):
        path = task_func("out.txt")
        self.assertEqual(open("out.txt").read(), "hello")
        self.assertTrue(os.path.abspath(path).startswith("/tmp/"))
"""
SCRATCH_OK = (
    "import os\ndef task_func(name):\n    with open(name, 'w') as fh:\n"
    "        fh.write('hello')\n    return os.path.abspath(name)\n"
)
NETWORK_TEST = """
class TestCases(unittest.TestCase):
    def test_fetch(self):
        self.assertEqual(task_func(), 200)
"""
NETWORK = (
    "import urllib.request\ndef task_func():\n"
    "    return urllib.request.urlopen('http://example.com', timeout=2).status\n"
)
SLOW_TEST = """
class TestCases(unittest.TestCase):
    def test_slow(self):
        task_func()
    def test_quick(self):
        pass
"""
SLEEPS = "import time\ndef task_func():\n    time.sleep(600)\n"
# a server on a fixed localhost port, as BigCodeBench/1040's; it closes the port on its way out
# without waiting for the client, so the connection is left in TIME_WAIT on the server's side
LOOPBACK_TEST = """
import socket, threading
class TestCases(unittest.TestCase):
    def test_echo(self):
        server = socket.socket()
        server.bind(("localhost", 12345))
        server.listen(1)
        thread = threading.Thread(target=lambda: task_func(server.accept()[0]))
        thread.start()
        with socket.create_connection(("localhost", 12345), timeout=5) as client:
            client.sendall(b"hello")
            self.assertEqual(client.recv(5), b"HELLO")
        thread.join()
        server.close()
"""
ECHO = "def task_func(conn):\n    conn.sendall(conn.recv(5).upper())\n    conn.close()\n"
REFUSED_TEST = """
class TestCases(unittest.TestCase):
    def test_refused(self):
        self.assertNotEqual(task_func(), 0)
"""
# a job may have its network namespace made for it, never make one (or any namespace) itself
OWN_NAMESPACE = (
    "import subprocess\ndef task_func():\n"
    "    return subprocess.run(['unshare', '--net', 'true']).returncode\n"
)


@requires_libs
def test_runner_scratch_network_limits_and_exits():
    libs = str(bigcodebench_libs.folder())
    cases = [
        ("scratch", synthetic_doc(SCRATCH_TEST), SCRATCH_OK),
        ("network", synthetic_doc(NETWORK_TEST), NETWORK),
        ("slow", synthetic_doc(SLOW_TEST, timeout=3.0), SLEEPS),
        ("exit_at_import", synthetic_doc(SCRATCH_TEST), "import sys\nsys.exit(0)\n"),
        ("os_exit", synthetic_doc(SCRATCH_TEST), "import os\nos._exit(0)\n"),
        ("exit_builtin", synthetic_doc(SCRATCH_TEST), "def task_func(name):\n    exit()\n"),
        ("no_tests", synthetic_doc("class TestCases(unittest.TestCase):\n    pass\n"), ""),
        # a job's own loopback: the port the first job left in TIME_WAIT is free in the second
        ("loopback", synthetic_doc(LOOPBACK_TEST), ECHO),
        ("loopback_again", synthetic_doc(LOOPBACK_TEST), ECHO),
        ("own_namespace", synthetic_doc(REFUSED_TEST), OWN_NAMESPACE),
    ]
    verdicts = dict(
        zip(
            [c[0] for c in cases],
            execution.run_jobs([bigcodebench.job(doc, program, libs) for _, doc, program in cases]),
        )
    )
    records = {k: bigcodebench.verdict_record(v, "") for k, v in verdicts.items()}
    assert records["scratch"]["passed"], records["scratch"]["reason"]
    assert not records["network"]["passed"] and records["network"]["needs_network"]
    assert "needs the network: 1 of 1 tests failed (test_fetch)" in records["network"]["reason"]
    slow = records["slow"]
    assert not slow["passed"] and "Timed out (test_slow)" in slow["reason"]
    assert "module failed: SystemExit" in records["exit_at_import"]["reason"]
    assert not records["os_exit"]["passed"]
    assert "1 of 1 tests failed" in records["exit_builtin"]["reason"]
    assert records["no_tests"]["reason"] == "assertion failed no test ran"
    if execution.isolation().startswith("namespaces"):  # the fallback has no network at all
        assert records["loopback"]["passed"], records["loopback"]["reason"]
        assert records["loopback_again"]["passed"], records["loopback_again"]["reason"]
    assert records["own_namespace"]["passed"], records["own_namespace"]["reason"]
    assert not any(r["needs_network"] for k, r in records.items() if k != "network")


# --- real tasks ---------------------------------------------------------------------------
# A small real subset of the Hard reference solutions: pandas, matplotlib, sklearn, numpy,
# files, regex, subprocess mocks; NLTK's data, which the programs download and a job has
# installed instead (177: punkt, 655: stopwords). All but 37 (a random forest, whose trees the
# record cannot carry) pass the replayed verdict too: files, mocked calls and exceptions (13),
# pyplot's current figure (89), a DataFrame and a seaborn plot (92).
HARD_SUBSET = [f"BigCodeBench/{n}" for n in (13, 37, 89, 92, 100, 139, 177, 655)]
NOT_REPLAYABLE = {"BigCodeBench/37": "a value of type sklearn.tree._tree.Tree"}  # its trees


# Full-set references the guard once refused: pandas' own `gc.get_referents` (234, 238, 986),
# and a DLL loaded by the solution whose test expects an `OSError` for a bad path (563-565).
GUARD_SUBSET = [f"BigCodeBench/{n}" for n in (234, 238, 986, 563, 564, 565)]
# References that need what BigCodeBench's image has and a job once lacked: `python` on the
# PATH (1101 runs scripts with it) and a loopback interface (1038 serves on localhost).
IMAGE_SUBSET = ["BigCodeBench/1101", "BigCodeBench/1038"]


def reference_docs(dataset: str, task_ids: list[str]) -> list[dict]:
    docs = [
        {**r, "timeout": bigcodebench.DEFAULT_TIMEOUT}
        for r in rows(dataset)
        if r["task_id"] in task_ids
    ]
    assert len(docs) == len(task_ids)
    return docs


def reference_records(dataset: str, task_ids: list[str]) -> dict[str, dict]:
    """The sample records (`verdict_record`) of `task_ids`' reference solutions, scored as a
    run scores them (`execute_samples`: run, then replayed)."""
    docs = reference_docs(dataset, task_ids)
    resps = [["```python\n" + d["code_prompt"] + d["canonical_solution"] + "\n```\n"] for d in docs]
    records = bigcodebench.execute_samples(resps, docs)
    return {d["task_id"]: r[0] for d, r in zip(docs, records)}


def failing_references(dataset: str, task_ids: list[str]) -> dict[str, str]:
    """The reasons of those of `task_ids`' reference solutions that fail in the sandbox (the
    first run only: no replay)."""
    docs, libs = reference_docs(dataset, task_ids), str(bigcodebench_libs.folder())
    programs = [
        bigcodebench.calibrated_program(d, d["code_prompt"] + d["canonical_solution"]) for d in docs
    ]
    verdicts = execution.run_jobs([bigcodebench.job(d, p, libs) for d, p in zip(docs, programs)])
    records = [bigcodebench.verdict_record(v, p) for v, p in zip(verdicts, programs)]
    return {d["task_id"]: r["reason"] for d, r in zip(docs, records) if not r["passed"]}


@requires_shared
@requires_libs
def test_hard_reference_solutions_pass():
    records = reference_records(HARD, HARD_SUBSET)
    assert {task: r["reason"] for task, r in records.items() if not r["passed"]} == {}
    not_replayed = {t: r["replay_reason"] for t, r in records.items() if not r["passed_replayed"]}
    assert set(not_replayed) == set(NOT_REPLAYABLE), not_replayed
    for task, value in NOT_REPLAYABLE.items():
        assert f"not replayable: call 1: {value}" in not_replayed[task]


@requires_shared
@requires_libs
def test_references_that_need_what_the_guard_refuses_their_own_code_pass():
    assert failing_references(FULL, GUARD_SUBSET) == {}


@requires_shared
@requires_libs
def test_references_that_run_python_or_serve_on_localhost_pass():
    if not execution.isolation().startswith("namespaces"):
        pytest.skip("a job has loopback only in a network namespace of its own (root)")
    assert failing_references(FULL, IMAGE_SUBSET) == {}


@requires_shared
@requires_libs
def test_end_to_end_hard_reference_solutions(mirror):
    out = replay_eval(
        ["bigcodebench_hard_tulu"],
        "from_doc={code_prompt}{canonical_solution}",
        confirm_run_unsafe_code=True,
        samples={"bigcodebench_hard_tulu": [0, 1, 3]},  # not 2: BigCodeBench/17 sleeps 15 s
        log_samples=True,
    )
    results = out["results"]["bigcodebench_hard_tulu"]
    assert len(out["samples"]["bigcodebench_hard_tulu"]) == 3
    assert results["pass_at_1,execution"] == 1.0
    assert results["pass_at_1_replayed,execution"] == 1.0  # files, mocks, exceptions (13, 15, 19)
    assert results["needs_network,execution"] == 0
    record = out["samples"]["bigcodebench_hard_tulu"][0]["filtered_resps"][0][0]
    assert record["outcome"] == "passed" and record["program"].startswith(
        rows(HARD)[0]["code_prompt"] + "\n    pass\n"
    )
