"""The replay trusts nothing the record says (issue 47, fourth red team): records written by
hand, as a program that rewrites its own record can make them (test_what_remains' CLAIMS),
each replayed to the genuine test and followed by an honest record, which passes.

- Class 4: a record names only the links a mock has (its return value, its children, as
  `mock_calls` names them), never another attribute, a dunder outside the magic methods, a
  global or a builtin, and the replay calls nothing but the test's mocks: a record calling
  `configure_mock` on the test's mock (making its return value equal anything) fails.
- Class 7: the recording run's record is capped where the trusted side reads it, before its
  body is received: a record over the cap leaves no record (the replay fails); an honest one
  is kept; replays are recorded and built in rounds.
- Class 5: a test that loads program-written data as code (a pickle) is not replayed: the
  record's pickle would run in the replay."""

import ast
import dataclasses
import os
from unittest import mock

import pytest

from evalpack import execution
from evalpack.hooks.bigcodebench import rounds
from evalpack.hooks.bigcodebench import task as bigcodebench
from evalpack.hooks.bigcodebench.job.codec import descend, encode
from evalpack.hooks.bigcodebench.unsafe import code_loading

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="full isolation needs root")
TEST = """
import unittest
from unittest import mock
class TestCases(unittest.TestCase):
    def test_logged(self):
        log = mock.MagicMock()
        result = task_func(2, log)
        log.info.assert_called_once_with("done")
        self.assertEqual(log.info.return_value, result)
"""
DOC = {"test": TEST, "timeout": 10.0, "code_prompt": "def task_func(x, log):\n"}
HONEST = "def task_func(x, log):\n    return log.info('done')\n"


def test_a_record_names_only_the_links_a_mock_has():
    log = mock.MagicMock()
    log.configured.return_value = 5
    for path in ("info", "info().json", "()", "__enter__", "configured"):
        assert mock._is_instance_mock(descend(log, path)), path
    assert descend(log, "info().json") is log.info.return_value.json
    hostile = [
        "configure_mock",  # what configures a mock, not a mock
        "configure_mock.__builtins__",
        "assert_called_once_with",
        "return_value",  # (a property of the class: "()" is the link)
        "side_effect",
        "_mock_parent",
        "__class__",
        "__dict__",
        "__init__",
        "info.__globals__",
        "configured().bit_length",  # past the mocks: the test's own value
    ]
    for path in hostile:
        assert descend(log, path) is None, path
    assert descend(mock.Mock(), "__eq__") is None  # (no magic methods on a plain Mock)


def recorded(program):
    """The recording run of `program` on DOC: its record, as a dict."""
    (verdict,) = execution.run_jobs([bigcodebench.job(DOC, program, "", answerless=True)])
    assert type(verdict.kept) is str, verdict.reason
    return ast.literal_eval(verdict.kept)


def replayed(records):
    jobs = [bigcodebench.replay_job(DOC, repr(record)) for record in records]
    return execution.run_jobs(jobs)


@needs_root
def test_a_record_cannot_configure_the_tests_mocks():
    honest = recorded(HONEST)
    forged = ast.literal_eval(repr(honest))
    entry = forged["calls"][0]
    entry["value"] = encode([0, []])  # a wrong answer, made equal by the mock's own __eq__
    configure = ["configure_mock", [], {"info.return_value.__eq__.return_value": True}]
    entry["mocks"][0].append(encode(configure))
    reach = ["configure_mock.__builtins__.update", [{"abs": 0}], {}]  # and past the mock
    entry["mocks"][0].append(encode(reach))
    attack, after = replayed([forged, honest])
    assert not attack.passed, "a record configured the test's mock"
    assert "1 of 1 tests failed" in attack.reason, attack.reason
    assert after.passed, after.reason


# A recording run whose candidate owns its interpreter (as raw memory lets it: test_what_remains)
# and answers for the runner with a report whose record is twice the runner's cap
OVERSIZED = (
    "def run_bigcodebench(*args):\n"
    "    return {'tests': {}, 'failures': [], 'error': '', 'made': '', 'mac': '',\n"
    "            'record': 'x' * (32 << 20)}\n"
)


@needs_root
def test_an_oversized_record_is_refused_before_it_is_read():
    honest = bigcodebench.job(DOC, HONEST, "", answerless=True)
    attack = dataclasses.replace(honest, program=OVERSIZED)
    refused, after = execution.run_jobs([attack, honest])
    assert refused.kept is None, "a record over the cap reached the caller"
    assert f"exceeds {rounds.RECORD_LIMIT}" in refused.reason, refused.reason
    assert type(after.kept) is str and "'info'" in after.kept, after.reason


def test_replays_are_built_as_they_run(monkeypatch):
    """At most ROUND records held, and replay jobs built per batch of BATCH_BYTES of records."""
    batches, alive = [], []
    record = "r" * (rounds.BATCH_BYTES // 3)

    def run_jobs(jobs):
        batches.append([job[0] for job in jobs])
        alive.append(len(jobs))
        kept = [record if kind == "record" else None for kind, _ in jobs]
        return [execution.Verdict(True, "passed", "", 0.0, kept=k) for k in kept]

    monkeypatch.setattr(rounds.execution, "run_jobs", run_jobs)
    count = rounds.ROUND + 5
    verdicts = rounds.replayed(
        list(range(count)), lambda i: ("record", i), lambda i, text: ("replay", i)
    )
    assert sorted(verdicts) == list(range(count))
    assert [set(b) for b in batches[:4]] == [{"record"}, {"replay"}, {"replay"}, {"replay"}]
    assert max(alive) == rounds.ROUND
    assert all(n <= 3 for b, n in zip(batches, alive) if b[0] == "replay")


# Class 5: a test that loads a pickle the program writes (as BigCodeBench/832 does)
PICKLE_TEST = """
import pickle
import unittest
class TestCases(unittest.TestCase):
    def test_sum(self):
        path = task_func([1, 2, 3], "out.pkl")
        with open(path, "rb") as handle:
            total = pickle.load(handle)
        self.assertEqual(total, 6)
"""
PICKLE_DOC = {"test": PICKLE_TEST, "timeout": 10.0, "code_prompt": "def task_func(x, path):\n"}
# answers 0, and its pickle, once loaded by the replay's test, makes assertEqual print
PICKLER = (
    "import os, pickle, unittest\n"
    "class Rigged:\n"
    "    def __reduce__(self):\n"
    "        return (setattr, (unittest.TestCase, 'assertEqual', print))\n"
    "def task_func(x, path):\n"
    "    with open(path, 'wb') as handle:\n"
    "        handle.write(pickle.dumps(Rigged()))\n"
    "    return os.path.abspath(path)\n"
)


@needs_root
def test_a_test_loading_the_programs_pickle_is_not_replayed():
    passed = execution.Verdict(True, "passed", "", 0.0)  # (as the first run could be forged)
    docs, programs = [PICKLE_DOC, DOC], [PICKLER, HONEST]
    attack, after = bigcodebench.replay_verdicts([passed, passed], docs, programs, "")
    assert not attack.passed, "a pickle the program wrote ran in the replay"
    assert "not replayable: the test runs data the program wrote as code" in attack.reason
    assert "pickle.load (line 8)" in attack.reason, attack.reason
    assert after.passed, after.reason


def test_code_loading_is_found_through_the_tests_imports():
    loading = {
        "import pickle as pk\npk.loads(b)": "pickle.loads (line 2)",
        "from joblib import load as jl\njl('m.joblib')": "joblib.load (line 2)",
        "import numpy as np\nnp.load('a.npy', allow_pickle=True)": "numpy.load (line 2)",
        "import yaml\nyaml.load(text)": "yaml.load (line 2)",
        "import pandas as pd\npd.read_pickle('f')": "pandas.read_pickle (line 2)",
        "eval(open('expr.txt').read())": "eval (line 1)",
        "import importlib\nimportlib.import_module('written')": "importlib.import_module (line 2)",
        "import sys, os\nsys.path.insert(0, os.getcwd())": "sys.path.insert (line 2)",
        "import sys\nsys.path.append('/tmp/x')": "sys.path.append (line 2)",
    }
    for test, found in loading.items():
        assert code_loading(test) == found, test
    safe = [
        "import numpy as np\nnp.load('a.npy')",
        "import numpy as np\nnp.load('a.npy', allow_pickle=False)",
        "import yaml\nyaml.load(text, Loader=yaml.SafeLoader)\nyaml.safe_load(text)",
        "import json\njson.load(open('f'))",
        "import sys\nsys.path.append('/mnt/data')",  # (a fixed folder the program cannot write)
    ]
    for test in safe:
        assert code_loading(test) == "", test
