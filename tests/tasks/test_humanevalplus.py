"""codex_humanevalplus_tulu: OLMES-identical requests, OLMES's HumanEval+ verdicts, and the
samples HumanEval passes and HumanEval+ fails."""

import hashlib
import importlib.util
import json

import pytest

from evalpack import execution
from evalpack.hooks import humaneval, humanevalplus
from tests.conftest import (
    DATA_DIR,
    OLMES_REF,
    OUTPUTS,
    REPO,
    chat_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
    task_manager,
)


def sweeps():
    """benchmarks/execution_sweeps.py, which runs every dev row: the tests run a slice of it."""
    spec = importlib.util.spec_from_file_location("sweeps", REPO / "benchmarks/execution_sweeps.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PLUS = "evalplus__humanevalplus/default/test"
FENCE = "Here is the completed function:\n\n```python\n"

# Real completions (../shared/reference/outputs/humaneval.jsonl) that pass HumanEval's tests and
# fail HumanEval+'s in OLMES (scores_dev_humanevalplus.jsonl), none of them timing-sensitive.
PASS_HUMANEVAL_FAIL_PLUS = [
    "reflexion-humaneval/normalized.jsonl#48",
    "reflexion-humaneval/normalized.jsonl#55",
    "reflexion-humaneval/normalized.jsonl#174",
    "reflexion-humaneval/normalized.jsonl#240",
    "reflexion-humaneval/normalized.jsonl#505",
    "reflexion-humaneval/normalized.jsonl#541",
    "reflexion-humaneval/normalized.jsonl#704",
    "reflexion-humaneval/normalized.jsonl#711",
    "reflexion-humaneval/normalized.jsonl#732",
    "reflexion-humaneval/normalized.jsonl#733",
    "reflexion-humaneval/normalized.jsonl#765",
    "reflexion-humaneval/normalized.jsonl#790",
    "ldb-humaneval-seeds/normalized.jsonl#0",
    "ldb-humaneval-seeds/normalized.jsonl#62",
    "ldb-humaneval-seeds/normalized.jsonl#128",
    "ldb-humaneval-seeds/normalized.jsonl#190",
    "ldb-humaneval-seeds/normalized.jsonl#229",
    "ldb-humaneval-seeds/normalized.jsonl#256",
    "ldb-humaneval-seeds/normalized.jsonl#514",
]


def plus_docs():
    return read_jsonl(DATA_DIR / "evalplus__humanevalplus/default/test.jsonl")


@requires_shared
def test_messages_and_prefix_identical_to_olmes(mirror):
    reference = [
        r
        for r in read_jsonl(OLMES_REF / "requests_dev_next.jsonl")
        if r["task"] == "codex_humanevalplus::tulu"
    ]
    built = {inst.doc["doc_key"]: inst for inst in chat_requests("codex_humanevalplus_tulu")}
    assert len(reference) == 40
    for ref in reference:
        context, gen_kwargs = built[ref["key"]].args
        messages = json.loads(context)
        # lm-eval passes the assistant prefix as a final assistant message to continue
        assert messages[:-1] == ref["messages"]
        canonical = json.dumps(messages[:-1], ensure_ascii=False, separators=(",", ":"))
        assert hashlib.sha256(canonical.encode()).hexdigest() == ref["sha256_messages"]
        assert messages[-1] == {"role": "assistant", "content": ref["assistant_prefix"]}
        assert gen_kwargs["until"] == ref["stop_sequences"]
        olmes = ref["generation_kwargs"]
        assert gen_kwargs["do_sample"] is olmes["do_sample"] is True
        assert (gen_kwargs["temperature"], gen_kwargs["top_p"]) == (
            olmes["temperature"],
            olmes["top_p"],
        )
        assert built[ref["key"]].repeats == ref["repeats"] == 20


@requires_shared
def test_every_doc_renders_with_its_own_prompt(mirror):
    docs = plus_docs()
    instances = chat_requests("codex_humanevalplus_tulu")
    assert len(instances) == len(docs) == 164
    for inst in instances:
        messages = json.loads(inst.args[0])
        doc = docs[int(inst.doc["doc_key"].rsplit("#", 1)[1])]
        assert messages == [
            {"role": "user", "content": doc["prompt"] + FENCE},
            {"role": "assistant", "content": FENCE},
        ]
        assert inst.doc["timeout"] == 20.0 and "def check(" in inst.doc["humaneval_test"]


@requires_shared
def test_metadata_sets_the_time_limit_and_repeats(mirror):
    tasks = task_manager({"timeout": 5, "repeats": 3}).load(
        ["codex_humanevalplus_tulu", "codex_humanevalplus_tulu_greedy"]
    )["tasks"]
    assert tasks["codex_humanevalplus_tulu"].dataset["test"][0]["timeout"] == 5.0
    assert tasks["codex_humanevalplus_tulu"].config.repeats == 3
    assert tasks["codex_humanevalplus_tulu_greedy"].config.repeats == 1


@requires_shared
def test_reference_solutions_pass_except_the_unpassable_humaneval_32(mirror):
    # every 4th doc, /32 among them (benchmarks/execution_sweeps.py runs all 164: 163 pass)
    docs = list(range(0, 164, 4))
    out = replay_eval(
        ["codex_humanevalplus_tulu_greedy"],
        "from_doc={canonical_solution}",
        confirm_run_unsafe_code=True,
        log_samples=True,
        samples={"codex_humanevalplus_tulu_greedy": docs},
    )
    results = out["results"]["codex_humanevalplus_tulu_greedy"]
    assert 32 in docs and len(out["samples"]["codex_humanevalplus_tulu_greedy"]) == len(docs)
    assert results["pass_at_1,execution"] == pytest.approx((len(docs) - 1) / len(docs))
    failed = {
        s["doc"]["task_id"]: s["filtered_resps"][0][0]
        for s in out["samples"]["codex_humanevalplus_tulu_greedy"]
        if not s["filtered_resps"][0][0]["olmes"]["passed"]
    }
    # the released test calls `_poly(*candidate(*inp), inp)`: unpacking a float is a TypeError
    assert list(failed) == ["HumanEval/32"]
    assert failed["HumanEval/32"]["olmes"]["reason"].startswith("TypeError")
    # HumanEval's own test of /32 accepts the same solution: the one HumanEval-only pass
    assert failed["HumanEval/32"]["humaneval"]["passed"]
    assert results["passes_humaneval_fails_plus,execution"] == 1


def dev_rows() -> list[dict]:
    return read_jsonl(OLMES_REF / "scores_dev_humanevalplus.jsonl")


# OLMES timed out two rows on its busy machine (timing-sensitive); both pass on their own CPU
# time, one shows it: this one needs about 9 s of CPU, the other 12 s.
TIMED_OUT_RUN = "reflexion-humaneval/normalized.jsonl#795"


def dev_slice(rows: list[dict]) -> list[dict]:
    """The rows the tests run: every row OLMES failed (where its quirks show), one of the two
    it timed out, and every 5th row it passed, from the second (a passing program runs every
    input of HumanEval+: 0.03 s of CPU for most, 2 to 8 s for 13 of them, which this offset
    leaves out; the slice still has every kind of row). benchmarks/execution_sweeps.py runs
    all 291 and prints any disagreement."""
    passed = [row for row in rows if row["exec_result"] == "passed"]
    return [
        row
        for row in rows
        if row["exec_result"] == "failed" or row["id"] == TIMED_OUT_RUN or row in passed[1::5]
    ]


def kinds(rows) -> set:
    """(OLMES's verdict, HumanEval's verdict where recorded, where the completion comes from)."""
    return {
        (row["exec_result"], row.get("passed_humaneval"), row["id"].split("/")[0]) for row in rows
    }


@pytest.fixture(scope="module")
def dev_records():
    """Our records for the `dev_slice` of OLMES's scores_dev_humanevalplus.jsonl, run in one
    batch: the task's loader and runs (OLMES's program against HumanEval+'s and HumanEval's
    tests) on the raw completion, as OLMES scored it (the filter would first cut at the stop
    strings, where a real backend stops: see test_text_after_a_stop_string_is_not_run)."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"real benchmark data not found at {DATA_DIR}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALPACK_DATA_DIR", str(DATA_DIR))
        docs = {
            doc["doc_key"]: doc for doc in humanevalplus.load(path="evalplus/humanevalplus")["test"]
        }
    rows = dev_slice(dev_rows())
    outputs = {r["id"]: r["completion"] for r in read_jsonl(OUTPUTS / "humaneval.jsonl")}
    plus, original = (
        plus_docs(),
        read_jsonl(DATA_DIR / "openai__openai_humaneval/default/test.jsonl"),
    )
    # HumanEval's own tests only where OLMES recorded their verdict (`passed_humaneval`)
    jobs, runs_of_row = [], []
    for row in rows:
        all_runs = humanevalplus.sample_jobs(
            docs[row["key"]], sweeps().dev_completion(row, outputs, plus, original)
        )
        runs = ("olmes", "humaneval") if "passed_humaneval" in row else ("olmes",)
        jobs += [all_runs[name] for name in runs]
        runs_of_row.append(runs)
    records = iter([humaneval.verdict_record(v) for v in execution.run_jobs(jobs)])
    return [(row, {name: next(records) for name in runs}) for row, runs in zip(rows, runs_of_row)]


@requires_shared
def test_olmes_verdicts_reproduced_on_dev_rows_of_every_kind_not_timing_sensitive(dev_records):
    every_row = dev_rows()
    assert len(every_row) == 291
    # the slice holds every kind of row the reference has (9), every row OLMES failed
    assert kinds(row for row, _ in dev_records) == kinds(every_row)
    assert len(kinds(every_row)) == 9
    assert [row for row in every_row if row["exec_result"] == "failed"] == [
        row for row, _ in dev_records if row["exec_result"] == "failed"
    ]
    checked = [(row, record) for row, record in dev_records if not row["timing_sensitive"]]
    assert len(dev_records) == 117 and len(checked) == 116
    wrong = [
        (row["id"], row["exec_result"], record["olmes"])
        for row, record in checked
        if record["olmes"]["olmes_result"] != row["exec_result"]
    ]
    assert wrong == []
    with_humaneval = [(row, record) for row, record in checked if "passed_humaneval" in row]
    assert len(with_humaneval) == 100
    assert [
        row["id"]
        for row, record in with_humaneval
        if record["humaneval"]["passed"] != row["passed_humaneval"]
    ] == []


@requires_shared
def test_timing_sensitive_rows_are_judged_by_their_own_cpu_time(dev_records):
    # OLMES timed these out in one of two runs: its 20 s are wall-clock time on a busy machine
    sensitive = [(row, record["olmes"]) for row, record in dev_records if row["timing_sensitive"]]
    assert [(row["id"], row["exec_result"]) for row, _ in sensitive] == [
        (TIMED_OUT_RUN, "timed out")
    ]
    if "cgroups" not in execution.isolation():
        pytest.skip("no cgroups here: jobs are limited by wall-clock time, as in OLMES")
    for row, record in sensitive:
        assert record["passed"] and record["cpu_seconds"] < 20.0, (row["id"], record)


@requires_shared
def test_real_completions_passing_humaneval_and_failing_plus_by_name(dev_records):
    records = {row["id"]: record for row, record in dev_records}
    for name in PASS_HUMANEVAL_FAIL_PLUS:
        assert records[name]["humaneval"]["passed"], name
        assert records[name]["olmes"]["olmes_result"] == "failed", name
    named = {
        row["id"]
        for row, _ in dev_records
        if row.get("passed_humaneval") and not row["passed"] and not row["timing_sensitive"]
    }
    assert named == set(PASS_HUMANEVAL_FAIL_PLUS)


@requires_shared
def test_text_after_a_stop_string_is_not_run(mirror):
    # OLMES failed this answer on its own trailing asserts ("\n# Unit tests\nassert ...");
    # a backend stops at "\n#", and the filter cuts there too: what remains passes.
    completion = next(
        r["completion"]
        for r in read_jsonl(OUTPUTS / "humaneval.jsonl")
        if r["id"] == "ldb-humaneval-seeds/normalized.jsonl#392"
    )
    doc = next(
        d
        for d in humanevalplus.load(path="evalplus/humanevalplus")["test"]
        if d["task_id"] == "HumanEval/64"
    )
    # its own assert that fails: "quickly" ends in y, so the function (rightly) says 3
    assert "\n# Unit tests\nassert vowels_count('abcde') == 2" in completion
    assert "assert vowels_count('quickly') == 2" in completion
    (record,) = humanevalplus.execute_samples([[completion]], [doc])[0]
    assert record["olmes"]["passed"] and record["humaneval"]["passed"]


@requires_shared
def test_humaneval_only_passes_are_counted_end_to_end(mirror, tmp_path):
    outputs = {r["id"]: r for r in read_jsonl(OUTPUTS / "humaneval.jsonl")}
    first_per_doc = {}
    for name in PASS_HUMANEVAL_FAIL_PLUS:
        key = outputs[name]["key"].replace("openai__openai_humaneval/default/test", PLUS)
        first_per_doc.setdefault(key, outputs[name]["completion"])
    file = tmp_path / "completions.jsonl"
    file.write_text(
        "".join(json.dumps({"key": k, "completion": c}) + "\n" for k, c in first_per_doc.items())
    )
    # one sample per doc; the docs run beside them (every 10th) answer with nothing and fail
    named = {int(key.rsplit("#", 1)[1]) for key in first_per_doc}
    docs = sorted(named | set(range(0, 164, 10)))
    out = replay_eval(
        ["codex_humanevalplus_tulu_greedy"],
        f"completions={file},missing=empty",
        confirm_run_unsafe_code=True,
        samples={"codex_humanevalplus_tulu_greedy": docs},
    )
    results = out["results"]["codex_humanevalplus_tulu_greedy"]
    assert len(first_per_doc) == 13 and len(docs) > 13
    assert results["passes_humaneval_fails_plus,execution"] == 13
    assert results["pass_at_1,execution"] == 0.0


# HumanEval/0 with numpy: returns a numpy.bool_
NUMPY_SOLUTION = (
    "    import numpy as np\n    gaps = np.diff(np.sort(np.array(numbers)))\n"
    "    return np.any(gaps < threshold)\n"
)


def one_doc(timeout):
    docs = humanevalplus.load(path="evalplus/humanevalplus")["test"]
    return {**docs[0], "timeout": timeout}


@requires_shared
def test_timeout_compilation_error_and_numpy_are_judged_as_olmes_does(mirror):
    doc = one_doc(timeout=2.0)
    samples = [
        "    while True:\n        pass\n",
        "    return (\n",
        plus_docs()[0]["canonical_solution"],
        NUMPY_SOLUTION,
    ]
    loops, broken, good, numpy_scalar = humanevalplus.execute_samples([samples], [doc])[0]
    assert (loops["olmes"]["outcome"], loops["olmes"]["olmes_result"]) == ("timeout", "timed out")
    assert not loops["olmes"]["passed"] and loops["olmes"]["limit"] in ("cpu", "wall")
    assert broken["olmes"]["olmes_result"] == "compilation error"
    assert broken["olmes"]["reason"].startswith("program failed to load: SyntaxError")
    assert good["olmes"]["olmes_result"] == "passed" and good["olmes"]["limit"] == ""
    assert good["humaneval"]["passed"]
    # numpy imports in the sandbox; the numpy bool it returns compares as OLMES compares it
    assert numpy_scalar["olmes"]["passed"], numpy_scalar["olmes"]["reason"]


def test_process_results_counts_samples_passing_only_humaneval():
    def sample(plus, original):
        return {
            "olmes": {"passed": plus},
            "extracted": {"passed": plus},
            "humaneval": {"passed": original},
        }

    # 2 pass both, 3 pass HumanEval only, 1 passes HumanEval+ only, 4 fail both
    samples = (
        [sample(True, True)] * 2
        + [sample(False, True)] * 3
        + [sample(True, False)]
        + [sample(False, False)] * 4
    )
    scores = humanevalplus.process_results({}, [samples])
    assert scores["passes_humaneval_fails_plus"] == 3
    assert scores["pass_at_1"] == pytest.approx(3 / 10)
    assert scores["pass_at_10"] == 1.0
    assert humanevalplus.total([3, 0, 2]) == 5
