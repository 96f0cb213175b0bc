"""Forging a BigCodeBench pass through the values the tests compare, through helpers swapped
for a while, and the routes that stay open (tasks/bigcodebench/README.md, "Forged verdicts").

- Lying values: a wrong solution returns an object whose class answers the test's questions
  (`__eq__` saying True, ...). BigCodeBench's harness counts the pass, and so does the
  faithful `pass_at_1`; `pass_at_1_real_values` must not. Each is followed by an honest job,
  which must pass both.
- Helpers swapped while `task_func` runs and put back by the fake itself when the test calls
  it: the runner compares the test machinery when `task_func` returns and before every
  assertion, so these fail even the faithful verdict.
- `test_what_remains`: routes that still forge a pass (frames handed over by a library, raw
  memory through numpy), so that closing one flips it; each fails the replayed verdict
  (`pass_at_1_replayed`), which a program passes only with values the genuine test accepts,
  claimed in its record (a program that rewrites its record to claim them passes it); a
  program that reads its answers from the test passes the first run and fails the replay,
  whose record comes from a run of the test without its answers (where else answers could
  be read: test_bigcodebench_answers_out_of_reach.py).

The jobs need numpy and pandas (the pack's own), not BigCodeBench's libraries."""

import os

import pytest

from evalpack import execution
from evalpack.hooks.bigcodebench import task as bigcodebench

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="full isolation needs root")
EQUAL = """
import unittest
class TestCases(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(task_func(2), EXPECTED)
"""
ANYTHING = "class Anything:\n    def __eq__(self, other):\n        return True\n"
DOUBLE = "def task_func(x):\n    return 2 * x\n"
FRAME_TEST = """
import unittest
import pandas as pd
class TestCases(unittest.TestCase):
    def test_frame(self):
        self.assertTrue(task_func(2).equals(pd.DataFrame({"a": [4]})))
"""
KIND_TEST = """
import unittest
class TestCases(unittest.TestCase):
    def test_kind(self):
        result = task_func(2)
        self.assertIsInstance(result, dict)
        self.assertEqual(len(result), 4)
"""
ARRAY_TEST = """
import unittest
import numpy as np
class TestCases(unittest.TestCase):
    def test_array(self):
        np.testing.assert_array_equal(task_func(2), np.array([4]))
"""

# name: (test, lying program, honest program, a fragment of the note)
LIARS = {
    "__eq__ always True": (
        EQUAL.replace("EXPECTED", "4"),
        ANYTHING + "def task_func(x):\n    return Anything()\n",
        DOUBLE,
        "Anything (a class the program made)",
    ),
    "int's __ne__ as __eq__": (
        EQUAL.replace("EXPECTED", "4"),
        (
            "class Four(int):\n    __eq__ = int.__ne__\n    __hash__ = int.__hash__\n"
            "def task_func(x):\n    return Four(0)\n"
        ),
        DOUBLE,
        "Four (a class the program made)",
    ),
    "a liar in a real list": (
        EQUAL.replace("EXPECTED", "[4]"),
        ANYTHING + "def task_func(x):\n    return [Anything()]\n",
        "def task_func(x):\n    return [2 * x]\n",
        "Anything (a class the program made)",
    ),
    "a liar in a numpy object array": (
        ARRAY_TEST,
        ANYTHING + "import numpy as np\ndef task_func(x):\n"
        "    return np.array([Anything()], dtype=object)\n",
        "import numpy as np\ndef task_func(x):\n    return np.array([2 * x])\n",
        "Anything (a class the program made)",
    ),
    "a DataFrame whose equals says True": (
        FRAME_TEST,
        (
            "import pandas as pd\nclass Frame(pd.DataFrame):\n    def equals(self, other):\n"
            "        return True\ndef task_func(x):\n    return Frame({'a': [0]})\n"
        ),
        "import pandas as pd\ndef task_func(x):\n    return pd.DataFrame({'a': [2 * x]})\n",
        "Frame (a class the program made)",
    ),
    "__class__ and __len__": (
        KIND_TEST,
        (
            "class Fake:\n    __class__ = property(lambda self: dict)\n"
            "    def __len__(self):\n        return 4\ndef task_func(x):\n    return Fake()\n"
        ),
        "def task_func(x):\n    return dict.fromkeys(range(2 * x))\n",
        "Fake (a class the program made)",
    ),
    "a mock told to be equal": (
        EQUAL.replace("EXPECTED", "4"),
        (
            "from unittest import mock\ndef task_func(x):\n    m = mock.MagicMock()\n"
            "    m.__eq__.return_value = True\n    return m\n"
        ),
        DOUBLE,
        "MagicMock (a class the program made)",
    ),
    "a library class changed": (
        EQUAL.replace("EXPECTED", "4"),
        (
            "import fractions\ndef task_func(x):\n"
            "    fractions.Fraction.__eq__ = lambda self, other: True\n"
            "    return fractions.Fraction(0)\n"
        ),
        DOUBLE,
        "Fraction (a class the program changed)",
    ),
}


MOCK_TEST = """
import os
import unittest
from unittest import mock
class Point:
    def __init__(self, x):
        self.x = x
    def __eq__(self, other):
        return self.x == other.x
class TestCases(unittest.TestCase):
    @mock.patch("os.getcwd")
    def test_mock(self, getcwd):
        result = task_func(2)
        self.assertEqual(result.cwd, getcwd.return_value)
        self.assertEqual(result.point, Point(4))
        self.assertEqual(list(result), [getcwd.return_value, Point(4)])
"""
OPEN_TEST = """
import unittest
from unittest.mock import mock_open, patch
import matplotlib.pyplot as plt
class TestCases(unittest.TestCase):
    @patch("builtins.open", new_callable=mock_open, read_data="abc")
    def test_read(self, opened):
        self.assertEqual(task_func("any.txt"), "abc")
        opened.assert_called_once_with("any.txt")
    def test_hist(self):
        with patch.object(plt.Axes, "hist", return_value=(None, None, None)) as hist:
            ax = task_func(None)
            self.assertIsInstance(ax, plt.Axes)
            hist.assert_called_once()
"""
# honest programs whose values are not plain, or that meet the test's own patches: a mock the
# test made, a class the test defines, a namedtuple the solution makes (its methods are
# collections'); builtins.open and a library class's method patched by the test
HONEST_VALUES = [
    (
        MOCK_TEST,
        (
            "import collections, os\nResult = collections.namedtuple('Result', 'cwd point')\n"
            "def task_func(x):\n    return Result(os.getcwd(), Point(2 * x))\n"
        ),
    ),
    (
        OPEN_TEST,
        (
            "import matplotlib.pyplot as plt\ndef task_func(name):\n    if name is None:\n"
            "        ax = plt.figure().add_subplot()\n        ax.hist([1, 2])\n        return ax\n"
            "    with open(name) as handle:\n        return handle.read()\n"
        ),
    ),
]


def records(pairs):
    """Each (test, program) run, then replayed if it passed, as a sample's record
    (`verdict_record`)."""
    docs = [{"test": t, "timeout": 10.0, "code_prompt": "def task_func(x):\n"} for t, _ in pairs]
    verdicts = execution.run_jobs([bigcodebench.job(d, p) for d, (_, p) in zip(docs, pairs)])
    replayed = bigcodebench.replay_verdicts(verdicts, docs, [p for _, p in pairs], "")
    return [bigcodebench.verdict_record(v, p, r) for v, (_, p), r in zip(verdicts, pairs, replayed)]


@needs_root
def test_lying_values_pass_bigcodebench_but_not_real_values():
    pairs = [(t, p) for t, liar, honest, _ in LIARS.values() for p in (liar, honest)]
    results, wrong = records(pairs + HONEST_VALUES), []
    for record in results[len(pairs) :]:
        if not (record["passed"] and record["passed_real_values"]):
            wrong.append(f"honest values: {record['reason']}")
    for (name, (*_, note)), liar, honest in zip(LIARS.items(), results[::2], results[1::2]):
        if not liar["passed"]:  # BigCodeBench's verdict, kept: the test said pass
            wrong.append(f"{name}: not a pass as BigCodeBench counts it: {liar['reason']}")
        if liar["passed_real_values"] or note not in liar["made_values"]:
            wrong.append(f"{name}: real values {liar['passed_real_values']}: {liar['reason']}")
        # a liar's class cannot be encoded: its record does not replay
        if liar["passed_replayed"] or "not replayable" not in liar["replay_reason"]:
            wrong.append(f"{name}: replayed {liar['passed_replayed']}: {liar['replay_reason']}")
        if not (honest["passed"] and honest["passed_real_values"] and honest["passed_replayed"]):
            wrong.append(f"honest job after {name}: {honest['reason']} {honest['replay_reason']}")
    assert not wrong, "\n".join(wrong)


SWAP_TEST = """
import unittest
import numpy as np
import pandas as pd
class TestCases(unittest.TestCase):
    def test_array(self):
        result = np.asarray(task_func(3), dtype=float)
        np.testing.assert_array_equal(result, [6.0])
    def test_frame(self):
        result = pd.DataFrame({"a": task_func(3)})
        pd.testing.assert_frame_equal(result, pd.DataFrame({"a": [6.0]}))
"""
SWAP_HONEST = "def task_func(x):\n    return [2.0 * x]\n"


def swapped(module, helper):
    """A wrong solution that swaps `module.helper` while `task_func` runs, the fake putting
    the real one back when the test calls it."""
    return (
        f"import {module.split('.')[0]}\nimport {module}\nORIGINAL = {module}.{helper}\n"
        f"def fake(*args, **kwargs):\n    {module}.{helper} = ORIGINAL\n"
        f"def task_func(x):\n    {module}.{helper} = fake\n    return [0.0]\n"
    )


ALMOST_TEST = """
import unittest
class TestCases(unittest.TestCase):
    def test_almost(self):
        result = task_func(2)
        self.assertAlmostEqual(result, 4.0, places=3)
"""
# name: (test, cheat, honest program, a fragment of the cheat's failing reason)
SWAPS = {
    "a numpy helper": (
        SWAP_TEST,
        swapped("numpy.testing", "assert_array_equal"),
        SWAP_HONEST,
        "changed the test machinery: numpy.testing.assert_array_equal",
    ),
    "a pandas helper": (
        SWAP_TEST,
        swapped("pandas.testing", "assert_frame_equal"),
        SWAP_HONEST,
        "changed the test machinery: pandas.testing.assert_frame_equal",
    ),
    # a patch the solution makes is not one the test made (those are allowed while in place)
    "a helper patched by the solution with unittest.mock": (
        SWAP_TEST,
        (
            "from unittest import mock\nimport numpy.testing\ndef task_func(x):\n"
            "    mock.patch('numpy.testing.assert_array_equal', lambda *a, **k: None).start()\n"
            "    return [0.0]\n"
        ),
        SWAP_HONEST,
        "changed the test machinery: numpy.testing.assert_array_equal",
    ),
    # assertAlmostEqual asks `round(diff, places) == 0` of unittest.case's globals first
    "a builtin shadowed in unittest.case": (
        ALMOST_TEST,
        (
            "import unittest.case\ndef task_func(x):\n"
            "    unittest.case.round = lambda *args: 0\n    return 0.0\n"
        ),
        DOUBLE,
        "changed the test machinery: unittest.case.round (added)",
    ),
}


@needs_root
def test_helpers_swapped_for_a_while_fail():
    pairs = [(t, p) for t, cheat, honest, _ in SWAPS.values() for p in (cheat, honest)]
    results, wrong = records(pairs), []
    for (name, (*_, reason)), cheat, honest in zip(SWAPS.items(), results[::2], results[1::2]):
        if cheat["passed"] or reason not in cheat["reason"]:
            wrong.append(f"{name}: {cheat['outcome']}: {cheat['reason']}")
        if not (honest["passed"] and honest["passed_real_values"]):
            wrong.append(f"honest job after {name}: {honest['reason']}")
    assert not wrong, "\n".join(wrong)


# Open routes (README, "What remains"), each passing a wrong solution today.
DOUBLES = """
import unittest
class TestCases(unittest.TestCase):
    def test_double(self):
        result = task_func(2)
        self.assertEqual(result, 4)
    def test_again(self):
        result = task_func(3)
        self.assertEqual(result, 6)
"""
REMAINS = {
    # traceback.walk_stack hands over the worker thread's frames (its first one is the
    # library's own, which the guard allows): the test's `self`, whose bound assertEqual
    # is swapped for a fake that puts it back when called
    "frames handed over by a library": (
        "import traceback, unittest\ndef task_func(x):\n"
        "    for frame, _ in traceback.walk_stack(None):\n"
        "        test = frame.f_locals.get('self')\n"
        "        if isinstance(test, unittest.TestCase):\n"
        "            real = test.assertEqual\n"
        "            def fake(*args, **kwargs):\n"
        "                test.assertEqual = real\n"
        "            test.assertEqual = fake\n"
        "            break\n"
        "    return 0\n"
    ),
    # numpy reads and writes any address through __array_interface__ (no audit event):
    # the bytes of the interned string "failed", which the recorder then writes, become
    # "passed"; no secret is needed, so moving it out of the process would not help
    "raw memory through numpy": (
        "import sys\nimport numpy as np\nclass Raw:\n    pass\n"
        "def task_func(x):\n    word = 'failed'\n"
        "    raw = Raw()\n    start = id(word) + sys.getsizeof(word) - len(word) - 1\n"
        "    raw.__array_interface__ = {'shape': (6,), 'typestr': '|u1', "
        "'data': (start, False), 'version': 3}\n"
        "    np.asarray(raw)[:] = np.frombuffer(b'passed', dtype=np.uint8)\n    return 0\n"
    ),
}


# A wrong program that forges BigCodeBench's verdict (raw memory, above) and rewrites its own
# record to claim the right answers, which it computes: the replay judges claims, so this
# passes it too. What it cannot do is pass without values the genuine test accepts, and the
# run its record comes from holds the test without its answers (READS_ANSWERS, below).
CLAIMS = REMAINS["raw memory through numpy"].replace(
    "    return 0\n",
    "    import traceback\n"
    "    for frame, _ in traceback.walk_stack(None):\n"  # to the worker's, which has the box
    "        recording = (frame.f_locals.get('box') or {}).get('recording')\n"
    "        if recording and '_fill' not in vars(recording):\n"
    "            fill = recording._fill\n"
    "            encode = sys.modules['evalpack.hooks.bigcodebench.job.codec'].encode\n"
    "            def claim(entry, args, kwargs, result, raised):\n"
    "                fill(entry, args, kwargs, result, raised)\n"
    "                entry['value'] = encode([2 * args[0], None])\n"
    "            recording._fill = claim\n"
    "    return 0\n",
)


# A program that computes nothing and reads its answers from the test, which shares its module
# in BigCodeBench's run: the constants of the test method whose inputs it was given. It passes
# there on real values; the replay's record comes from a run whose test holds no answers.
READS_ANSWERS = (
    "def task_func(x):\n"
    "    for method in vars(TestCases).values():\n"
    "        constants = getattr(getattr(method, '__code__', None), 'co_consts', ())\n"
    "        if x in constants:\n"
    "            return next((c for c in constants if type(c) is int and c != x), 0)\n"
    "    return 0\n"
)
HONEST_DOUBLE = "def task_func(x):\n    return 2 * x\n"


@needs_root
def test_what_remains():
    programs = [*REMAINS.values(), CLAIMS, READS_ANSWERS, HONEST_DOUBLE]
    results = records([(DOUBLES, program) for program in programs])
    reader, honest = results[-2:]
    assert reader["passed"] and reader["passed_real_values"], reader["reason"]
    assert not reader["passed_replayed"], reader["replay_reason"]
    assert "2 of 2 tests failed" in reader["replay_reason"], reader["replay_reason"]
    assert honest["passed"] and honest["passed_real_values"] and honest["passed_replayed"]
    for name, record in zip(REMAINS, results):
        assert record["passed"], (
            f"{name} no longer forges a pass ({record['reason']}): update the README"
        )
        # replayed where the program cannot reach the test: its answers (0) fail
        assert not record["passed_replayed"], (name, record["replay_reason"])
        assert "2 of 2 tests failed" in record["replay_reason"], record["replay_reason"]
    assert results[2]["passed"] and results[2]["passed_replayed"], (
        f"rewriting the record no longer claims a pass ({results[2]['replay_reason']}): "
        "update the README"
    )
