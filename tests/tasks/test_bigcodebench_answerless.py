"""The test the replayed verdict's recording run holds (`evalpack.hooks.bigcodebench.answerless`): the task's
test with its checks and what only they used taken out, so that the program whose record the
replay judges runs with the inputs and none of the expected values.

On every test of BigCodeBench (Hard and full): it still parses, defines the same test methods
and imports, makes no assertion, and none of the constants only the assertions held is left.
The rules one by one on small tests; the recording run on real programs: test_bigcodebench.py
(`HARD_SUBSET`), and a program that reads the answers from its test:
test_bigcodebench_redteam_values.py."""

import ast

import pytest

from evalpack.hooks.bigcodebench import task as bigcodebench
from evalpack.hooks.bigcodebench.answerless import answerless
from tests.conftest import DATA_DIR, read_jsonl, requires_shared

# Hard whole, and every 8th task of the full set (the whole: benchmarks/bigcodebench.py --full)
SETS = [
    ("bigcode__bigcodebench-hard/default/v0.1.2.jsonl", 1),
    ("bigcode__bigcodebench/default/v0.1.2.jsonl", 8),
]


def assertion_calls(tree):
    """The assertions of a test (not its own helpers named so, which it defines)."""
    own = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert)
        or isinstance(node, ast.Call)
        and (name := getattr(node.func, "attr", getattr(node.func, "id", ""))).startswith("assert")
        and name not in own
    ]


def statements(body):
    """A method body's lines, without their indentation."""
    return [line.strip() for line in body.strip().splitlines()]


def answer_constants(tree):
    """Constants (strings of 4 characters or more, floats, integers from 1000) that occur in
    the test's assertions outside their calls of `task_func`, and nowhere else."""

    def constants(node, skip):
        return {
            repr(n.value)
            for n in ast.walk(node)
            if isinstance(n, ast.Constant)
            and id(n) not in skip
            and (
                isinstance(n.value, str)
                and len(n.value) >= 4
                or type(n.value) is float
                or type(n.value) is int
                and abs(n.value) >= 1000
            )
        }

    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    inputs = [call for call in calls if getattr(call.func, "id", "") == "task_func"]
    inputs += [  # self.assertRaises(Error, task_func, *inputs)
        arg
        for call in calls
        if getattr(call.func, "attr", "") == "assertRaises"
        and getattr(call.args[1:2] and call.args[1], "id", "") == "task_func"
        for arg in call.args[2:]
    ]
    in_calls = {id(c) for node in inputs for c in ast.walk(node)}
    checks = assertion_calls(tree)
    in_checks = {id(c) for check in checks for c in ast.walk(check)}
    answers = set().union(*(constants(check, in_calls) for check in checks))
    return answers - constants(tree, in_checks)


@requires_shared
@pytest.mark.parametrize("name, every", SETS)
def test_every_test_loses_its_answers_and_keeps_its_runs(name, every):
    left, kinds = {}, 0
    for row in read_jsonl(DATA_DIR / name)[::every]:
        test = answerless(row["test"])
        tree = ast.parse(test)
        assert bigcodebench.test_plan(test) == bigcodebench.test_plan(row["test"]), row["task_id"]
        assert not assertion_calls(tree), (row["task_id"], ast.unparse(assertion_calls(tree)[0]))
        answers = answer_constants(ast.parse(row["test"]))
        kinds += bool(answers)
        leaked = answers & {repr(n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant)}
        if leaked:
            left[row["task_id"]] = sorted(leaked)
    assert kinds >= 50  # (the check below has answers to look for)
    assert not left, left


def test_checks_go_and_calls_stay():
    test = answerless(
        "import unittest\n"
        "from unittest.mock import patch, MagicMock\n"
        "class TestCases(unittest.TestCase):\n"
        "    def test_a(self):\n"
        "        '''the answer is 42'''\n"
        "        expected = compute_expected(3)\n"
        "        mock = MagicMock()\n"
        "        self.assertEqual(task_func(3, mock), expected)\n"
        "        assert task_func(4) == 'forty-four', 'wrong'\n"
        "        mock.assert_called_once_with('secret-argument')\n"
        "        self.assertTrue(task_func(5).equals(expected))\n"
        "        self.assertEqual([task_func(x) for x in (1, 2)], [11, 22])\n"
        "        self.assertEqual(self.run_it(6), 'sixty-six')\n"
        "    def run_it(self, n):\n"
        "        return task_func(n)\n"
        "    def helper_expected(self):\n"
        "        return 'never-used'\n"
        "def compute_expected(n):\n"
        "    return n * 14\n"
    )
    assert "42" not in test and "forty" not in test and "secret" not in test
    assert "compute_expected" not in test and "helper_expected" not in test
    assert "11" not in test and "sixty" not in test and "expected" not in test
    assert "mock = MagicMock()" in test  # (the replay finds the test's mocks by their order)
    body = test.split("def test_a(self):\n")[1].split("    def run_it")[0]
    assert statements(body) == [
        "mock = MagicMock()",
        "task_func(3, mock)",
        "task_func(4)",
        "task_func(5)",
        "[(task_func(x),) for x in (1, 2)]",
        "self.run_it(6)",
    ]
    assert "def run_it(self, n):\n        return task_func(n)" in test


def test_expected_exceptions_run_guarded():
    test = answerless(
        "import unittest\n"
        "from unittest.mock import patch\n"
        "class TestCases(unittest.TestCase):\n"
        "    def test_a(self):\n"
        "        with self.assertRaises(ValueError) as context:\n"
        "            task_func(-1)\n"
        "        self.assertEqual(str(context.exception), 'negative-input')\n"
        "        with patch('os.remove'), self.assertRaisesRegex(KeyError, 'missing-key'):\n"
        "            task_func({})\n"
        "        self.assertRaises(TypeError, task_func, None)\n"
        "        self.assertRaises(OSError, lambda: task_func('path'))\n"
    )
    assert not [name for name in ("ValueError", "KeyError", "TypeError", "OSError") if name in test]
    assert "negative" not in test and "missing" not in test
    body = test.split("def test_a(self):\n")[1]
    assert body == (
        "        try:\n            task_func(-1)\n        except Exception:\n            pass\n"
        "        with patch('os.remove'):\n            try:\n                task_func({})\n"
        "            except Exception:\n                pass\n"
        "        try:\n            task_func(None)\n        except Exception:\n            pass\n"
        "        try:\n            (lambda: task_func('path'))()\n        except Exception:\n"
        "            pass\n"
    )


def test_tables_of_cases_lose_the_expected_column():
    test = answerless(
        "import unittest\n"
        "CASES = [(1, 'one-answer'), (2, 'two-answer')]\n"
        "class TestCases(unittest.TestCase):\n"
        "    def setUp(self):\n"
        "        self.pairs = {'a-input': 'a-answer'}\n"
        "        self.expected_frame = make_frame()\n"
        "    def test_table(self):\n"
        "        for data, expected in CASES:\n"
        "            with self.subTest(data=data, expected=expected):\n"
        "                self.assertEqual(task_func(data), expected)\n"
        "    def test_inline(self):\n"
        "        for data, expected in [(3, 'three-answer')]:\n"
        "            self.assertEqual(task_func(data), expected)\n"
        "    def test_zip(self):\n"
        "        inputs, outputs = [4, 5], ['four-answer', 'five-answer']\n"
        "        for data, expected in zip(inputs, outputs):\n"
        "            self.assertEqual(task_func(data), expected)\n"
        "    def test_dict(self):\n"
        "        for data, expected in self.pairs.items():\n"
        "            self.assertEqual(task_func(data), expected)\n"
        "        self.assertTrue(task_func(1).equals(self.expected_frame))\n"
        "def make_frame():\n"
        "    return pd.DataFrame({'column': [1]})\n"
    )
    assert "answer" not in test, test
    assert "CASES = [(1, None), (2, None)]" in test
    assert "for data, expected in [(3, None)]" in test
    assert "zip(inputs, iter(int, 1))" in test and "outputs" not in test
    assert "with self.subTest():" in test and "make_frame" not in test


def test_what_only_the_checks_read_goes_scope_by_scope():
    test = answerless(
        "import unittest\n"
        "class TestCases(unittest.TestCase):\n"
        "    columns = ['kept-column']\n"
        "    def check(self, data, expected, label='label-answer'):\n"
        "        self.assertEqual(task_func(data, self.columns), expected, label)\n"
        "    def test_helper(self):\n"
        "        self.check([1], 'helper-answer', label='other-label-answer')\n"
        "    def test_built(self):\n"
        "        expected = {}\n"
        "        for word in ['a', 'b']:\n"
        "            expected[word] = 'built-answer'\n"
        "        expected.update(extra='updated-answer')\n"
        "        frame = pd.DataFrame(['frame-answer'])\n"
        "        frame = frame.pivot('pivot-answer')\n"
        "        frame.sort_index(inplace=True)\n"
        "        print('printed-answer', expected)\n"
        "        self.assertEqual(task_func(2), (expected, frame))\n"
        "    def test_same_name_as_input(self):\n"
        "        expected = [3]\n"
        "        task_func(expected)\n"
    )
    assert "answer" not in test, test
    assert "columns = ['kept-column']" in test and "self.check([1], None, label=None)" in test
    assert "expected = [3]\n        task_func(expected)" in test


def test_what_configures_the_programs_world_stays():
    source = (
        "import os, unittest\n"
        "from unittest.mock import patch, MagicMock\n"
        "class FakeResponse:\n"
        "    def __init__(self):\n"
        "        self.content = b'served'\n"
        "    def raise_for_status(self):\n"
        "        pass\n"
        "class TestCases(unittest.TestCase):\n"
        "    @patch('requests.get')\n"
        "    def test_a(self, mock_get):\n"
        "        mock_get.return_value.json.return_value = {'k': 1}\n"
        "        mock_get.side_effect = [FakeResponse()]\n"
        "        os.environ['TASK_MODE'] = 'on'\n"
        "        table = {}\n"
        "        table['input'] = 2\n"
        "        unused = MagicMock()\n"
        "        book = Workbook()\n"
        "        sheet = book.create_sheet()\n"
        "        sheet.append(['row'])\n"
        "        task_func(table, book)\n"
    )
    body = answerless(source).split("def test_a(self, mock_get):\n")[1]
    assert statements(body) == statements(source.split("def test_a(self, mock_get):\n")[1])
    assert "def raise_for_status(self):" in answerless(source)


def test_inputs_that_look_like_answers_stay():
    source = (
        "import unittest\n"
        "class TestCases(unittest.TestCase):\n"
        "    def test_a(self):\n"
        "        def given(a, b=1): pass\n"
        "        expected = frame.copy()\n"
        "        expected[expected.columns] = scaler.fit_transform(expected)\n"
        "        result = task_func(given)\n"
        "        self.assertEqual(result['defaults'], (1,))\n"
    )
    test = answerless(source)
    assert "def given(a, b=1):" in test  # (an input: the program reads its signature)
    # an effect of the test's on its way to an answer stays, with what it reads
    assert "expected = frame.copy()\n        expected[expected.columns] = scaler" in test
