"""deepmind_math_cot_tulu (OLMES `deepmind_math:0shot_cot::tulu3`): the shipped sample is OLMES's,
requests are identical to OLMES's, OLMES's verdicts on its own rows and on adversarial answers
for each rule, deterministic random points, the parse guard, the time bound, and a run end to
end with replay."""

import gzip
import json

import pytest

from evalpack.hooks import deepmind_math
from evalpack.report.report import prefix_scores
from evalpack.scoring.deepmind_answers import score_deepmind
from tests.conftest import (
    OLMES_REF,
    REPO,
    TASKS_DIR,
    read_jsonl,
    replay_eval,
    requires_shared,
    task_manager,
)

GROUP = "deepmind_math_cot_tulu"
SHARED_SAMPLE = OLMES_REF.parents[1] / "data" / "olmes__deepmind_math_sample100"
CLOSING = "Therefore, the final answer is {}. I hope it is correct."


def generator():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "gen", REPO / "tasks/deepmind_math/_generate_configs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CATEGORIES = generator().CATEGORIES


@pytest.fixture(scope="module")
def loaded():
    return task_manager().load([GROUP])


def chat_instances(task) -> dict:
    """{doc key: instance} as lm-eval builds them in chat mode (the replay model's template:
    each context is the JSON of the message list)."""
    from evalpack.models.requests import render_messages

    task.build_all_requests(
        rank=0,
        world_size=1,
        apply_chat_template=True,
        fewshot_as_multiturn=True,
        chat_template=lambda msgs, add_generation_prompt=True: render_messages(msgs),
    )
    return {inst.doc["doc_key"]: inst for inst in task.instances}


def test_the_generator_lists_the_56_categories_in_order():
    # its files are checked against the committed YAMLs in test_generated_configs.py
    gen = generator()
    assert len(gen.CATEGORIES) == 56 and list(gen.CATEGORIES) == sorted(gen.CATEGORIES)


def test_the_group_builds_with_5600_docs_and_its_metadata(loaded):
    assert loaded["group_map"] == {GROUP: [f"{GROUP}_{c}" for c in CATEGORIES]}
    assert {len(task.eval_docs) for task in loaded["tasks"].values()} == {100}
    from evalpack.core import catalog

    facts = catalog.facts(GROUP)
    assert facts["primary"] == {"metric": "exact_match", "filter": "olmes"}
    assert facts["breakdown"] == [{"by": "subtasks"}, {"by": "subtask_prefix", "separator": "__"}]
    areas = {c.split("__")[0] for c in CATEGORIES}
    assert areas == {
        "algebra",
        "arithmetic",
        "calculus",
        "comparison",
        "measurement",
        "numbers",
        "polynomials",
        "probability",
    }


@requires_shared
def test_the_shipped_sample_is_olmes_file_for_file():
    shipped = sorted(
        p.parent.name for p in (TASKS_DIR / "deepmind_math/data").glob("*/test.jsonl.gz")
    )
    assert shipped == list(CATEGORIES) == sorted(p.name for p in SHARED_SAMPLE.iterdir())
    for category in CATEGORIES:
        with gzip.open(deepmind_math.data_file(category), "rb") as fh:
            assert fh.read() == (SHARED_SAMPLE / category / "test.jsonl").read_bytes(), category


@requires_shared
def test_requests_identical_to_olmes_on_every_dev_record(loaded):
    records = [
        r
        for r in read_jsonl(OLMES_REF / "requests_dev_unseen.jsonl")
        if r["task"].startswith("deepmind_math_")
    ]
    assert len(records) == 168  # 3 docs x 56 categories
    built = {}
    for task in loaded["tasks"].values():
        built.update(chat_instances(task))
    assert len(built) == 5600
    for ref in records:
        inst = built[ref["key"]]
        assert json.loads(inst.args[0]) == ref["messages"], ref["key"]
        assert inst.doc["answer"] == ref["label"]
        kwargs = inst.args[1]
        want = ref["generation_kwargs"]
        assert (
            kwargs["until"],
            kwargs["max_gen_toks"],
            kwargs["temperature"],
            kwargs["do_sample"],
        ) == (ref["stop_sequences"], want["max_gen_toks"], want["temperature"], want["do_sample"])
        assert ref["assistant_prefix"] == "" and ref["repeats"] == 1
    # OLMES strips only `b'...\n'`: a `b"..."` question keeps its wrapper, as in OLMES
    quirk = built["olmes__deepmind_math_sample100/algebra__sequence_nth_term/test#0"]
    assert "\nb\"What is the n'th term of" in json.loads(quirk.args[0])[0]["content"]


@requires_shared
def test_olmes_verdicts_on_every_deepmind_row():
    rows = [
        r
        for r in read_jsonl(OLMES_REF / "scores_dev_unseen.jsonl")
        if r["task"].startswith("deepmind_math_")
    ]
    assert len(rows) == 9 and not any(r["nondeterministic"] for r in rows)
    docs = [{"answer": r["label"], "doc_key": r["key"]} for r in rows]
    records = deepmind_math.score_docs([[r["completion"]] for r in rows], docs)
    for row, record in zip(rows, records):
        for field in ("exact_match", "answer_format_correct", "answer_parse_error", "model_answer"):
            assert record[field] == row[field], (row["case"], field)


# (completion, gold, OLMES's exact_match, answer_parse_error, answer_format_correct,
# model_answer), each verdict taken from OLMES's own code at 5a51f50 and the same for every
# numpy seed tried.
P = CLOSING.format
ADVERSARIAL = [
    # the phrase regex: last match, case-insensitive, unescaped dots
    ("Therefore, the final answer is 5 I hope it is correct.", "5", 0, 1, 1.0, ""),
    ("Therefore, the final answer is 42! I hope it is correct!", "42", 1, 0, 1.0, "42"),
    (P("0.5"), "0.5", 1, 0, 1.0, "0.5"),
    ("Therefore, the final answer is 7. I hope it is correct", "7", 1, 0, 0.5, "7"),
    ("So the final answer is 7.\nDone", "7", 1, 0, 0.5, "7"),
    ("The answer is 7. Wait, the final answer is 8", "8", 1, 0, 0.5, "8"),
    (P("3") + "\n" + P("4"), "4", 1, 0, 1.0, "4"),
    ("THEREFORE, THE FINAL ANSWER IS 9. I HOPE IT IS CORRECT.", "9", 1, 0, 1.0, "9"),
    ("", "3", 0, 1, 0.5, ""),
    (P(""), "3", 0, 1, 1.0, ""),
    # numbers: underscores, separators, exponents
    (P("1_000"), "1000", 1, 0, 1.0, "1_000"),
    (P("1,000"), "1000", 0, 0, 1.0, "1,000"),
    (P("1e3"), "1000", 1, 0, 1.0, "1e3"),
    (P("1000.0"), "1000", 1, 0, 1.0, "1000.0"),
    (P("101_2"), "5", 0, 0, 1.0, "101_2"),
    (P("0b101"), "5", 1, 0, 1.0, "0b101"),
    (P("5!"), "120", 1, 0, 1.0, "5!"),
    # lists with and without brackets
    (P("[-2, 1, 4]"), "-2, 1, 4", 0, 0, 1.0, "[-2, 1, 4]"),
    (P("(-2, 1, 4)"), "-2, 1, 4", 1, 0, 1.0, "(-2, 1, 4)"),
    (P("-2,1,4"), "-2, 1, 4", 1, 0, 1.0, "-2,1,4"),
    (P("4, 1, -2"), "-2, 1, 4", 0, 0, 1.0, "4, 1, -2"),
    (P("{-2, 1, 4}"), "-2, 1, 4", 0, 0, 1.0, "{-2, 1, 4}"),
    # fractions vs decimals, wrappers
    (P("0.25"), "1/4", 1, 0, 1.0, "0.25"),
    (P("1/4"), "0.25", 1, 0, 1.0, "1/4"),
    (P("0.333333"), "1/3", 0, 0, 1.0, "0.333333"),
    (P("2/6"), "1/3", 1, 0, 1.0, "2/6"),
    (P("-12/10000"), "-0.0012", 1, 0, 1.0, "-12/10000"),
    (P("$\\frac{1}{4}$"), "1/4", 0, 1, 1.0, "\\frac{1}{4}"),
    (P("**1/4**"), "1/4", 1, 0, 1.0, "1/4"),
    (P("\\(x**2\\)"), "x**2", 1, 0, 1.0, "x**2"),
    # yes/no against True/False
    (P("Yes"), "True", 1, 0, 1.0, "yes"),
    (P("no"), "False", 1, 0, 1.0, "no"),
    (P("yes"), "False", 0, 0, 1.0, "yes"),
    (P("Yes."), "True", 1, 0, 1.0, "yes"),
    (P("y"), "True", 0, 0, 1.0, "y"),
    # clean_prediction's special tokens are regexes: "<|eot_id|>" deletes every "<" and ">"
    (P("x > 3"), "x > 3", 0, 1, 1.0, "x  3"),
    (P("a<b"), "ab", 1, 0, 1.0, "ab"),
    (P("5</s>"), "5", 0, 0, 1.0, "5/s"),
    # sympy: equal expressions, different symbols, complex values, unparsable answers
    (P("2*(x + 1)"), "2*x + 2", 1, 0, 1.0, "2*(x + 1)"),
    (P("2*y + x"), "x + 2*y", 1, 0, 1.0, "2*y + x"),
    (P("2*y + 2"), "2*x + 2", 0, 0, 1.0, "2*y + 2"),
    (P("2x + 2"), "2*x + 2", 0, 1, 1.0, "2x + 2"),
    (P("x^2"), "x**2", 0, 1, 1.0, "x^2"),
    (P("sqrt(-x)"), "sqrt(x)", 0, 1, 1.0, "sqrt(-x)"),
    (P("13 hours"), "13", 0, 1, 1.0, "13 hours"),
    (P("09:36 AM"), "9:36 AM", 0, 1, 1.0, "09:36 AM"),
    (P("x = 3"), "3", 0, 1, 1.0, "x = 3"),
    (P("(3).real"), "3", 0, 1, 1.0, "(3).real"),
    (P("'3'"), "3", 0, 0, 1.0, "'3'"),
]


@pytest.mark.parametrize("case", ADVERSARIAL, ids=lambda c: repr(c[0][31:55] or c[0]))
def test_olmes_verdicts_on_adversarial_answers_at_every_seed(case):
    completion, gold, exact, parse_error, fmt, answer = case
    for seed in range(5):
        record = score_deepmind(completion, gold, seed=seed)
        assert (
            record["exact_match"],
            record["answer_parse_error"],
            record["answer_format_correct"],
            record["model_answer"],
        ) == (exact, parse_error, fmt, answer)


def test_a_verdict_olmes_leaves_to_chance_is_fixed_per_doc():
    """log(x - 1/2) is complex at half of OLMES's random points (float() fails: a parse error)
    and equal at the others: OLMES gives either verdict. Here a doc's seed fixes it."""
    completion, gold = P("log(x - 1/2)"), "log(x-1/2)"
    verdicts = {
        seed: score_deepmind(completion, gold, seed=seed)["exact_match"] for seed in range(8)
    }
    assert set(verdicts.values()) == {0, 1}  # the point matters ...
    for seed, verdict in verdicts.items():  # ... and the seed decides it, every time
        assert score_deepmind(completion, gold, seed=seed)["exact_match"] == verdict
    doc = {"answer": gold, "doc_key": "olmes__deepmind_math_sample100/x/test#0"}
    first = deepmind_math.score_docs([[completion]], [doc])
    assert deepmind_math.score_docs([[completion]], [doc]) == first


def test_answers_that_would_run_code_are_refused(tmp_path):
    marker = tmp_path / "ran"
    for answer in (
        f"__import__('os').system('touch {marker}')",
        f"sympify(\"__import__('os').system('touch {marker}')\")",
        f"sqrt(\"__import__('os').system('touch {marker}')\")",
        f"open('{marker}', 'w')",
        "(lambda: 3)()",
        "x.subs(x, 3)",
    ):
        record = score_deepmind(P(answer), "3")
        assert (record["exact_match"], record["answer_parse_error"]) == (0, 1), answer
        assert "refused" in record, answer
    assert not marker.exists()
    assert "refused" not in score_deepmind(P("Max(2, 3)*sqrt(4)/Abs(-2) + pi - pi"), "3")
    assert score_deepmind(P("Max(2, 3)*sqrt(4)/Abs(-2)"), "3")["exact_match"] == 1


def test_a_pathological_answer_is_cut_off_and_counted(monkeypatch, caplog):
    monkeypatch.setattr(deepmind_math, "DOC_TIMEOUT", 2.0)
    docs = [{"answer": "3", "doc_key": f"k#{i}"} for i in range(2)]
    records = deepmind_math.score_docs([[P("9**9**9**9")], [P("3")]], docs)
    assert records[0]["exact_match"] == 0 and "hard time bound" in records[0]["scoring_failure"]
    assert records[1]["exact_match"] == 1
    assert "1 were cut off entirely" in caplog.text


def test_area_breakdown_is_the_mean_of_its_categories():
    scores = {"ckpt": {"algebra__linear_1d": 0.5, "algebra__linear_2d": 0.25, "numbers__gcd": 1}}
    assert prefix_scores(scores, "__") == {"ckpt": {"algebra": 0.375, "numbers": 1.0}}
    # through the report: the group's declared breakdowns, by category and by area
    from evalpack.report.render import grid_table
    from evalpack.report.report import breakdowns

    results = {
        f"{GROUP}_{c}": {"exact_match,olmes": float(c == "calculus__differentiate")}
        for c in CATEGORIES
    }
    column = {"task": GROUP, "metric": "exact_match", "filter": "olmes"}
    by_category, by_area = breakdowns({"m": {"results": results, "samples": {}}}, [column])
    assert by_category["by"] == "subtasks" and len(by_category["scores"]["m"]) == 56
    assert by_area["scores"]["m"] == {
        "algebra": 0,
        "arithmetic": 0,
        "calculus": 0.5,
        "comparison": 0,
        "measurement": 0,
        "numbers": 0,
        "polynomials": 0,
        "probability": 0,
    }
    title, _header, rows = grid_table(by_area)
    assert title.startswith("DeepMind Mathematics (0-shot CoT): 8 ") and len(rows) == 8


def test_end_to_end_replay_of_the_reference_answers():
    tasks = [f"{GROUP}_{c}" for c in ("comparison__pair", "numbers__is_prime", "measurement__time")]
    out = replay_eval(tasks, {"from_doc": CLOSING.format("{answer}")}, limit=5)
    for task in tasks:
        result = out["results"][task]
        assert result["exact_match,olmes"] == 1.0 and result["answer_parse_error,olmes"] == 0.0
        assert result["answer_format_correct,olmes"] == 1.0


def test_the_group_is_the_macro_mean_over_categories(tmp_path):
    """Doc 0 of every category, answered right in the 8 algebra categories only: 8/56."""
    rows = []
    for category in CATEGORIES:
        gold = deepmind_math.read_sample(category)[0]["answer"]
        answer = gold if category.startswith("algebra__") else "unknown"
        rows.append(
            {
                "key": f"olmes__deepmind_math_sample100/{category}/test#0",
                "completion": CLOSING.format(answer),
            }
        )
    completions = tmp_path / "replay.jsonl"
    completions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = replay_eval([GROUP], {"completions": str(completions)}, limit=1)
    assert out["results"][GROUP]["exact_match,olmes"] == pytest.approx(8 / 56)
    assert out["results"][GROUP]["answer_format_correct,olmes"] == 1.0
