"""mbppplus_olmo3 (OLMES `mbppplus::olmo3:adapt`, new to the pack): the function each test
calls, OLMES's program from the reference solutions, pass@k end to end with thinking outputs.
Its requests and the thinking switch: test_olmo3_code.py (shared with HumanEval+)."""

import pytest

from evalpack.hooks import olmo3_code
from tests.conftest import replay_eval, requires_shared, task_manager
from tests.tasks.conftest import replay_file
from tests.tasks.test_olmo3_code import MBPP, fenced, mbpp_docs

# MBPP+ reference solutions that do not pass as OLMES runs them: OLMES's program keeps the
# reference's text up to its first ":", which for these is inside an annotated signature (a
# SyntaxError in OLMES too)
UNCOMPILABLE = {4: "heap_queue_largest", 6: "differ_At_One_Bit_Pos"}
# Those whose values are more than JSON-like data, which cross the sandbox's boundary as they
# are (a Counter, complex numbers) or as what they hold (re.Match)
BEYOND_JSON = {
    88: "Counter",
    124: "complex arguments",
    252: "complex arguments",
    590: "complex",
    737: "re.Match",
    787: "re.Match",
    794: "re.Match",
}
# and the one returning more values than a message carries: 128 million (README: Differences).
# (599, which passes with 15 s of CPU, is left to benchmarks/mbppplus_references.py: its cost)
TOO_MANY_VALUES = {255: "combinations_colors"}


@requires_shared
def test_every_mbpp_doc_names_the_function_its_test_calls(mirror):
    task = task_manager().load(["mbppplus_olmo3"])["tasks"]["mbppplus_olmo3"]
    docs = list(task.dataset["test"])
    assert len(docs) == 378
    for doc in docs:
        assert f"assertion({doc['entry_point']}(" in doc["test"]
        assert doc["timeout"] == 20.0 and doc["process_output"] == ""
    # the reference's first def is a helper here: the test calls another function
    assert {d["task_id"]: d["entry_point"] for d in docs}[123] == "amicable_numbers_sum"


@requires_shared
def test_mbpp_reference_solutions_pass_as_olmes_runs_them_but_known_ones(mirror):
    chosen = [2, 3, 7, 8, 123, 301, 580, *UNCOMPILABLE, *BEYOND_JSON, *TOO_MANY_VALUES]
    prepared = [prepared_doc(task_id) for task_id in chosen]
    resps = [[fenced(doc["code"].strip())] for doc in prepared]
    records = olmo3_code.execute_mbppplus(resps, prepared)
    verdicts = {doc["task_id"]: rec[0] for doc, rec in zip(prepared, records)}
    for task_id, verdict in verdicts.items():
        assert verdict["answer_format_correct"] == 1.0
        if task_id in UNCOMPILABLE:
            assert verdict["olmes_result"] == "compilation error", task_id
        elif task_id in TOO_MANY_VALUES:
            assert not verdict["passed"] and "more than 4194304 values" in verdict["reason"]
        else:
            assert verdict["passed"], (task_id, verdict["reason"])


def prepared_doc(task_id: int) -> dict:
    """The doc of an MBPP+ problem as the task's loader makes it, 20 s per program."""
    row, doc = next((i, d) for i, d in enumerate(mbpp_docs()) if d["task_id"] == task_id)
    return {
        **doc,
        "doc_key": f"{MBPP}#{row}",
        "timeout": 20.0,
        "entry_point": olmo3_code.mbpp_entry_point(doc),
        "process_output": "",
    }


@requires_shared
def test_mbpp_match_problems_are_judged_as_olmes_whose_assertion_asserts_nothing(mirror):
    """737's test (as 787's and 794's) computes whether the match agrees with the expected
    boolean and asserts nothing: in OLMES every program that returns passes, whatever it
    returns (a wrong match, None, a bool); one that raises fails."""
    doc = prepared_doc(737)
    codes = [
        "import re\ndef check_str(string):\n    return re.search('q', string)",
        "def check_str(string):\n    return string[:1] in 'aeiou'",
        "def check_str(string):\n    return string[1]",
    ]
    records = olmo3_code.execute_mbppplus([[fenced(code) for code in codes]], [doc])
    assert [r["passed"] for r in records[0]] == [True, True, False]
    assert records[0][2]["reason"].startswith("IndexError")  # ['y'][1]: one-letter input


@requires_shared
def test_end_to_end_with_thinking_outputs_logged_and_pass_at_k(mirror, tmp_path):
    docs = mbpp_docs()
    rows = []
    for row in (0, 1):
        code = docs[row]["code"].strip()
        outputs = [fenced(code, "plan"), fenced("def nothing(): pass", "plan"), "<think>long"]
        rows += [{"key": f"{MBPP}#{row}", "completion": text} for text in outputs]
    out = replay_eval(
        ["mbppplus_olmo3"],
        f"completions={replay_file(tmp_path, rows)}",
        limit=2,
        metadata={"repeats": 3, "process_output": "r1_style"},
        log_samples=True,
        confirm_run_unsafe_code=True,
    )
    result = out["results"]["mbppplus_olmo3"]
    assert result["pass_at_1,execution"] == pytest.approx(1 / 3)
    assert "pass_at_5,execution" not in result  # 3 samples only
    assert result["thinking_unfinished,execution"] == 2
    sample = out["samples"]["mbppplus_olmo3"][0]
    assert sample["resps"][0][0].startswith("<think>plan</think>")  # the raw output, kept
    logged = sample["filtered_resps"][0]
    assert [s["reasoning"] for s in logged] == ["plan", "plan", None]
    assert [s["passed"] for s in logged] == [True, False, False]
