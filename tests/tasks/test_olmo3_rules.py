"""The rule-scored olmo3 tasks (OLMES `olmo3:adapt`): requests identical to OLMES's on every dev
record, OLMES's verdicts on every row of its olmo3 score file through the tasks' own filters,
with the thinking switch off (as OLMES scored them) and on, and end to end with replay."""

import json

import pytest

from evalpack.hooks import agi_eval, olmo3_rules
from evalpack.scoring.thinking import split_r1_style
from tests.conftest import (
    DATA_DIR,
    OLMES_REF,
    by_doc,
    chat_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
    task_manager,
)
from tests.tasks.conftest import replay_file, sha

GROUPS = {  # OLMES spec prefix -> (the pack's task prefix, OLMES spec of a member -> ours)
    "mmlu_": lambda spec: "mmlu_cot_olmo3_" + spec[5:].split(":")[0],
    "bbh_": lambda spec: "bbh_cot_olmo3_" + spec[4:].split(":")[0],
    "agi_eval_": lambda spec: "agi_eval_english_olmo3_" + spec[9:].split(":")[0].replace("-", "_"),
    "minerva_math_": lambda spec: "minerva_math_olmo3_" + spec[13:].split(":")[0],
    "gsm8k": lambda spec: "gsm8k_olmo3",
}
FAMILY = {"mmlu_": "mmlu", "bbh_": "bbh", "agi_eval_": "agi_eval", "minerva_math_": "minerva_math"}


def our_task(spec: str) -> str | None:
    if not spec.endswith("::olmo3:adapt"):
        return None
    return next((name(spec) for prefix, name in GROUPS.items() if spec.startswith(prefix)), None)


def family(spec: str) -> str:
    return next((f for prefix, f in FAMILY.items() if spec.startswith(prefix)), "gsm8k")


@pytest.fixture(scope="module")
def olmes_requests():
    return [r for r in read_jsonl(OLMES_REF / "requests_dev_olmo3.jsonl") if our_task(r["task"])]


@pytest.fixture(scope="module")
def built(module_mirror, olmes_requests):
    """Our instances of every doc in the dev file, by doc key (3 per spec: the first 3 docs)."""
    out = {}
    for task in sorted({our_task(r["task"]) for r in olmes_requests}):
        out.update(by_doc(chat_requests(task, samples=[0, 1, 2])))
    return out


@requires_shared
def test_requests_identical_to_olmes_on_every_dev_record(built, olmes_requests):
    # 57 MMLU + 27 BBH + 8 AGIEval + 7 MATH subjects + GSM8K, 3 docs each
    assert len(olmes_requests) == 3 * (57 + 27 + 8 + 7 + 1)
    instances = [built[ref["key"]][0] for ref in olmes_requests]
    golds = scored_in_batches(
        [family(ref["task"]) for ref in olmes_requests],
        [""] * len(instances),
        [i.doc for i in instances],
    )
    for ref, inst, scored in zip(olmes_requests, instances, golds):
        messages = json.loads(inst.args[0])
        assert messages == ref["messages"], ref["key"]
        assert sha(messages) == ref["sha256_messages"]
        kwargs = inst.args[1]
        assert kwargs["until"] == ref["stop_sequences"] == []
        sent = {k: kwargs[k] for k in ("do_sample", "temperature", "top_p", "max_gen_toks")}
        expected = {k: ref["generation_kwargs"][k] for k in sent}
        assert sent == expected, ref["key"]
        assert inst.repeats == ref["repeats"] == 1
        assert scored["gold"] == ref["label"], ref["key"]


def olmo3_rows():
    return [r for r in read_jsonl(OLMES_REF / "scores_dev_olmo3.jsonl") if our_task(r["task"])]


def score_row(row, doc, switch):
    return score_rows([row], [doc], switch)[0]


def score_rows(rows, docs, switch):
    """Each row's record, as the tasks' filters score it (switch: the docs' `process_output`)."""
    families = [family(row["task"]) for row in rows]
    docs = [{**doc, "process_output": switch} for doc in docs]
    return scored_in_batches(families, [row["completion"] for row in rows], docs)


def scored_in_batches(families, texts, docs):
    """score_docs's records in the order given, one call per family (each call starts its
    bounded workers: per doc, that start would cost more than the scoring)."""
    records = [None] * len(texts)
    for name in dict.fromkeys(families):
        where = [i for i, f in enumerate(families) if f == name]
        batch = olmo3_rules.score_docs(name, [[texts[i]] for i in where], [docs[i] for i in where])
        for i, record in zip(where, batch):
            records[i] = record
    return records


@pytest.fixture(scope="module")
def docs_by_key(module_mirror):
    """The doc of every score row, as the tasks' loaders give it (AGIEval: the packaged file)."""
    docs, files = {}, {}
    for row in olmo3_rows():
        path, index = row["key"].rsplit("#", 1)
        if path not in files:
            if path.startswith("ruixiangcui__AGIEval/"):
                files[path] = list(agi_eval.load(path.split("/")[1])["test"])
            else:
                files[path] = read_jsonl(DATA_DIR / f"{path}.jsonl")
        docs[row["key"]] = {**files[path][int(index)], "doc_key": row["key"]}
    return docs


@requires_shared
def test_olmes_verdicts_on_every_score_row_with_the_switch_off(docs_by_key):
    rows = olmo3_rows()
    assert len(rows) == 148
    compared = ("exact_match", "exact_match_simple", "exact_match_flex", "answer_format_correct")
    records = score_rows(rows, [docs_by_key[row["key"]] for row in rows], "")
    for row, record in zip(rows, records):
        for metric in compared + ("model_answer", "model_answer_flex"):
            if metric in row:
                assert record[metric] == row[metric], (row["id"], metric)
        assert "reasoning" not in record


@requires_shared
def test_switch_on_scores_what_follows_the_reasoning(docs_by_key):
    """With the switch on, each verdict is OLMES's extraction of the split answer (the same
    extraction the off-switch test checks against OLMES), and the reasoning is kept."""
    rows = olmo3_rows()
    docs = [docs_by_key[row["key"]] for row in rows]
    thoughts = [split_r1_style(row["completion"]) for row in rows]
    answers = [{**row, "completion": thought.answer} for row, thought in zip(rows, thoughts)]
    changed = 0
    for row, on, thought, off_on_answer in zip(
        rows, score_rows(rows, docs, "r1_style"), thoughts, score_rows(answers, docs, "")
    ):
        assert on["model_answer"] == off_on_answer["model_answer"], row["id"]
        assert on["exact_match"] == off_on_answer["exact_match"], row["id"]
        assert on["reasoning"] == thought.reasoning
        assert on["thinking_finished"] == ("</think>" in row["completion"])
        changed += on["model_answer"] != row["model_answer"]
    assert changed == 7  # the think_* cases whose reasoning held another answer


@requires_shared
@pytest.mark.parametrize(
    "case, off, on",
    [
        ("think_has_phrase_wrong", "A", "B"),  # MMLU: the phrase inside <think> wins only when off
        ("unfinished_think", "A", "A"),  # no </think>: the whole output is scored either way
    ],
)
def test_mmlu_thinking_cases(docs_by_key, case, off, on):
    (row,) = [
        r for r in olmo3_rows() if r["case"] == case and r["task"].startswith("mmlu_abstract")
    ]
    doc = docs_by_key[row["key"]]
    assert score_row(row, doc, "")["model_answer"] == row["model_answer"] == off
    record = score_row(row, doc, "r1_style")
    assert record["model_answer"] == on
    assert record["thinking_finished"] == (case != "unfinished_think")


@requires_shared
def test_every_task_builds_through_lm_eval(module_mirror):
    names = ["mmlu_cot_olmo3", "bbh_cot_olmo3", "agi_eval_english_olmo3"]
    names += ["minerva_math_olmo3", "gsm8k_olmo3", "gpqa_cot_olmo3"]
    index = task_manager().all_tasks
    assert all(name in index for name in names)
    loaded = task_manager().load(names[:-1])["tasks"]  # GPQA's data is gated: built elsewhere
    assert len(loaded) == 57 + 27 + 8 + 7 + 1


@requires_shared
@pytest.mark.parametrize("switch", [None, "r1_style"])
def test_end_to_end_with_replay_counts_unfinished_thinking(mirror, tmp_path, switch):
    docs = [inst.doc for inst in chat_requests("gsm8k_olmo3", samples=[0, 1, 2])]
    texts = [
        "<think>\nIt is 3. Therefore, the final answer is \\boxed{{3}}.\n</think>\n\nThe answer is {}.",
        "Therefore, the final answer is \\boxed{{{}}}.",
        "<think>\nstill working, maybe {}",
    ]
    rows = [
        {"key": doc["doc_key"], "completion": text.format(olmo3_rules.gsm8k_target(doc))}
        for doc, text in zip(docs, texts)
    ]
    metadata = {"process_output": switch} if switch else None
    out = replay_eval(
        ["gsm8k_olmo3"],
        {"completions": replay_file(tmp_path, rows)},
        limit=3,
        metadata=metadata,
        log_samples=True,
    )
    logged = {s["doc"]["doc_key"]: s["filtered_resps"][0] for s in out["samples"]["gsm8k_olmo3"]}
    first = logged[docs[0]["doc_key"]]
    # the samples keep the reasoning beside the answer (switch on), the answer read in any case
    assert first["model_answer_flex"] == ("18" if switch else "3")
    assert first.get("reasoning") == (
        "It is 3. Therefore, the final answer is \\boxed{3}.\n" if switch else None
    )
    result = out["results"]["gsm8k_olmo3"]
    # off: doc 0 reads the first phrase (inside <think>, wrong) as OLMES does; on: the answer
    assert result["exact_match_flex,olmes"] == pytest.approx((3 if switch else 2) / 3)
    assert result["exact_match,olmes"] == pytest.approx((2 if switch else 1) / 3)
    assert ("thinking_unfinished,olmes" in result) == bool(switch)
    if switch:
        # with the switch on, an output without `</think>` never ended its thinking (doc 1's
        # bare answer too: the switch is for thinking models)
        assert result["thinking_unfinished,olmes"] == 2


LONG = 130_000
# per family: a 130,000-character output shaped against its patterns, and the answer OLMES reads
WORDS = "zebra apple " * (LONG // 12)
LONG_OUTPUTS = {  # name: (family, output, the answer OLMES reads)
    "mmlu": ("mmlu", "word " * (LONG // 5) + "\nTherefore, the answer is: C", "C"),
    "agi_eval": ("agi_eval", "(" * LONG + "\nTherefore, the answer is (B)", "B"),
    "gpqa": ("gpqa", "a" * LONG + " (D) is correct", "D"),
    "bbh words": ("bbh", WORDS, WORDS.strip()),  # the last template: the whole run
    # "X is correct" with word_sorting's `[a-z ]+`: OLMES's regex retries every word of the run
    "bbh is correct": ("bbh", "x is correct. " + WORDS, "x"),
    "gsm8k": ("gsm8k", "1 " * (LONG // 2) + "\\boxed{", "1"),  # no closed box: the last number
}


@pytest.mark.parametrize("name", LONG_OUTPUTS)
def test_long_outputs_score_within_the_bound(name):
    """OLMES's own patterns are quadratic on such outputs (template 11's `.*`, template 7 over
    a run of words, GSM8K's lazy boxed pattern); the filter scores each inside its bound."""
    family, text, answer = LONG_OUTPUTS[name]
    doc = {"answer": 2, "label": "B", "target": "apple zebra", "doc_key": "x/word_sorting/t#0"}
    doc = {**doc, "answer": "#### 2"} if family == "gsm8k" else doc
    (record,) = olmo3_rules.score_docs(family, [[text]], [{**doc, "process_output": ""}])
    assert "scoring_failure" not in record
    assert record.get("model_answer_flex", record["model_answer"]) == answer
