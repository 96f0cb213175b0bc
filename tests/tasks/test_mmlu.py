"""mmlu_mc_tulu and mmlu_cot_tulu through lm-eval: OLMES-identical requests on every dev record,
every one of the 14,042 docs rendered, OLMES's MC metrics on its own verdict file, and runs end to
end with replay."""

import json

import pytest

from evalpack.hooks import mmlu
from evalpack.scoring.multiple_choice import extract_cot_letter, mc_scores
from tests.conftest import (
    BACKSTOP,
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

DEV_SUBJECTS = [
    "abstract_algebra",
    "anatomy",
    "college_computer_science",
    "global_facts",
    "high_school_european_history",
]


def generator():
    import importlib.util

    from tests.conftest import REPO

    spec = importlib.util.spec_from_file_location("gen", REPO / "tasks/mmlu/_generate_configs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def subjects():
    return generator().SUBJECTS


@pytest.fixture(scope="module")
def dev_built(module_mirror):
    return {
        key: insts
        for s in DEV_SUBJECTS
        for key, insts in by_doc(chat_requests(f"mmlu_mc_tulu_{s}")).items()
    }


def test_the_generator_lists_the_57_subjects_in_order():
    # its files are checked against the committed YAMLs in test_generated_configs.py
    gen = generator()
    assert len(gen.SUBJECTS) == 57 and list(gen.SUBJECTS) == sorted(gen.SUBJECTS)


def test_both_groups_build_through_lm_eval(mirror):
    for group in ("mmlu_mc_tulu", "mmlu_cot_tulu"):
        loaded = task_manager().load([group])
        assert loaded["group_map"] == {group: [f"{group}_{s}" for s in subjects()]}
        assert sum(len(task.eval_docs) for task in loaded["tasks"].values()) == 14042


def test_mc_prompt_and_verdict_on_a_hand_written_doc():
    doc = {
        "doc_key": "cais__mmlu/high_school_us_history/dev#0",
        "question": "Q?",
        "choices": ["a", "b", "c", "d"],
        "answer": 1,
    }
    body = "Question: Q?\n A. a\n B. b\n C. c\n D. d\nAnswer:"
    assert mmlu.doc_to_text(doc) == (
        "The following are multiple choice questions (with answers) "
        "about high school us history.\n\n" + body
    )
    assert mmlu.doc_to_text({**doc, "doc_key": "cais__mmlu/virology/test#0"}) == body
    tie = mmlu.process_results_mc(doc, [(-1.0, False), (-1.0, False), (-2.0, False), (-9, False)])
    assert tie["acc_raw"] == 0.0 and tie["sum_logits_corr"] == -1.0  # first maximum wins
    won = mmlu.process_results_mc(doc, [(-2.0, False), (-1.0, False), (-2.0, False), (-9, False)])
    assert won["acc_raw"] == won["acc_raw_micro"] == won["acc_per_char"] == 1.0


@requires_shared
def test_requests_identical_to_olmes_on_every_dev_record(dev_built):
    records = [
        r
        for r in read_jsonl(OLMES_REF / "requests_dev_next.jsonl")
        if r["task"].startswith("mmlu_")
    ]
    assert len(records) == 600
    for ref in records:
        insts = dev_built[ref["key"]]
        contexts = {inst.args[0] for inst in insts}
        assert len(contexts) == 1, ref["key"]
        messages = json.loads(contexts.pop())
        continuations = [inst.args[1] for inst in insts]
        assert messages == ref["messages"], ref["key"]
        assert sha(messages) == ref["sha256_messages"]
        assert continuations == ref["continuations_chat"] == ["A", "B", "C", "D"]
        assert sha(continuations) == ref["sha256_continuations_chat"]
        assert insts[0].doc["answer"] == ref["label"]


@requires_shared
def test_docs_of_every_subject_render(module_mirror):
    """Every 10th doc and the last of each subject (benchmarks/mc_requests.py builds all 14,042)."""
    total = 0
    for subject in subjects():
        rows = read_jsonl(DATA_DIR / f"cais__mmlu/{subject}/test.jsonl")
        shots = read_jsonl(DATA_DIR / f"cais__mmlu/{subject}/dev.jsonl")[:5]
        picked = sorted({*range(0, len(rows), 10), len(rows) - 1})
        built = by_doc(chat_requests(f"mmlu_mc_tulu_{subject}", samples=picked))
        assert len(built) == len(picked), subject
        for i in picked:
            row = rows[i]
            insts = built[f"cais__mmlu/{subject}/test#{i}"]
            messages = json.loads(insts[0].args[0])
            assert [m["role"] for m in messages] == ["user", "assistant"] * 5 + ["user"]
            assert messages[0]["content"].startswith(
                "The following are multiple choice questions (with answers) about "
                f"{subject.replace('_', ' ')}.\n\nQuestion: {shots[0]['question']}\n A. "
            )
            assert [m["content"] for m in messages[1:10:2]] == ["ABCD"[s["answer"]] for s in shots]
            lines = "\n".join(f" {'ABCD'[j]}. {c}" for j, c in enumerate(row["choices"]))
            assert messages[-1]["content"] == f"Question: {row['question']}\n{lines}\nAnswer:"
            assert [inst.args[1] for inst in insts] == ["A", "B", "C", "D"]
        total += len(rows)
    assert total == 14042


@requires_shared
def test_zero_shot_puts_the_description_on_the_only_turn(module_mirror):
    inst = chat_requests("mmlu_mc_tulu_anatomy", num_fewshot=0)[0]
    (message,) = json.loads(inst.args[0])
    assert message["content"].startswith(
        "The following are multiple choice questions (with answers) about anatomy.\n\nQuestion: "
    )


@pytest.fixture(scope="module")
def olmes_scores():
    if not OLMES_REF.is_dir():
        pytest.skip(f"OLMES reference files not found at {OLMES_REF}")
    return [
        r for r in read_jsonl(OLMES_REF / "scores_dev_mc.jsonl") if r["task"].startswith("mmlu_")
    ]


OLMES_ONLY = ("id", "key", "task", "scenario", "inputs", "predicted_index_uncond", "acc_uncond")


@requires_shared
def test_olmes_mc_metrics_on_every_verdict_row(dev_built, olmes_scores):
    assert len(olmes_scores) == 117
    for row in olmes_scores:
        doc = dev_built[row["key"]][0].doc
        inputs = row["inputs"]
        full = mc_scores(
            inputs["sum_logits"], inputs["continuations_chat"], doc["answer"], inputs["num_tokens"]
        )  # with OLMES's token counts: every field
        assert full == {k: v for k, v in row.items() if k not in OLMES_ONLY}, row["id"]
        hook = mmlu.process_results_mc(doc, [(v, False) for v in inputs["sum_logits"]])
        for name in mmlu.MC_METRICS:
            assert hook[name] == row[name], (row["id"], name)
    assert {"tie_gold_later", "near_tie_1e-12", "token_count_flip", "no_answer_-999"} <= {
        row["scenario"] for row in olmes_scores
    }


@requires_shared
def test_end_to_end_replay_reproduces_olmes_aggregates(mirror, dev_built, olmes_scores, tmp_path):
    rows, samples, per_task = [], {}, {}
    for row in olmes_scores:
        insts = dev_built[row["key"]]
        task = f"mmlu_mc_tulu_{row['key'].split('/')[1]}"
        samples.setdefault(task, []).append(insts[0].doc_id)
        per_task.setdefault(task, []).append((insts[0].doc_id, row))
        rows += [
            {"key": row["key"], "continuation": inst.args[1], "loglikelihood": value}
            for inst, value in zip(insts, row["inputs"]["sum_logits"], strict=True)
        ]
    out = replay_eval(
        sorted(samples),
        {"completions": replay_file(tmp_path, rows)},
        samples={t: sorted(ids) for t, ids in samples.items()},
    )
    for task, entries in per_task.items():
        ordered = [row for _, row in sorted(entries, key=lambda e: e[0])]
        for metric in mmlu.MC_METRICS:
            expected = sum(r[metric] for r in ordered) / len(ordered)
            assert out["results"][task][f"{metric},none"] == pytest.approx(expected, rel=1e-12)


@requires_shared
def test_group_reports_macro_and_micro_means(mirror, tmp_path):
    """4 anatomy docs with the gold scored highest, 1 doc of each other subject with a wrong
    choice highest: the macro mean is 1/57, the micro mean 4/60."""
    rows, samples = [], {}
    for subject in subjects():
        count = 4 if subject == "anatomy" else 1
        task = f"mmlu_mc_tulu_{subject}"
        samples[task] = list(range(count))
        for doc_id, doc in enumerate(read_jsonl(DATA_DIR / f"cais__mmlu/{subject}/test.jsonl")):
            if doc_id == count:
                break
            best = doc["answer"] if subject == "anatomy" else (doc["answer"] + 1) % 4
            rows += [
                {
                    "task": task,
                    "doc_id": doc_id,
                    "continuation": letter,
                    "loglikelihood": -0.5 if i == best else -3.0,
                }
                for i, letter in enumerate("ABCD")
            ]
    out = replay_eval(
        ["mmlu_mc_tulu"], {"completions": replay_file(tmp_path, rows)}, samples=samples
    )
    group = out["results"]["mmlu_mc_tulu"]
    assert out["results"]["mmlu_mc_tulu_anatomy"]["acc_raw,none"] == 1.0
    assert group["acc_raw,none"] == pytest.approx(1 / 57)
    assert group["acc_raw_micro,none"] == pytest.approx(4 / 60)
    assert group["acc_per_char,none"] == pytest.approx(1 / 57)


# --- mmlu_cot_tulu ------------------------------------------------------------------------------


@requires_shared
def test_cot_prompt_is_olmes_summarize(module_mirror):
    inst = chat_requests("mmlu_cot_tulu_global_facts")[0]
    (message,) = json.loads(inst.args[0])
    row = read_jsonl(DATA_DIR / "cais__mmlu/global_facts/test.jsonl")[0]
    choices = "".join(f" {'ABCD'[i]}. {c}\n" for i, c in enumerate(row["choices"]))
    assert message == {
        "role": "user",
        "content": (
            "The following are multiple choice questions about global facts. Summarize your "
            "reasoning concisely, then conclude with 'Therefore, the answer is: X' where X is one "
            f"of A, B, C, or D.\n\nQuestion: {row['question']}\n{choices}"
        ),
    }
    until, kwargs = inst.args[1]["until"], inst.args[1]
    assert until == ["Question:"] and kwargs["max_gen_toks"] == 512 and not kwargs["do_sample"]


@pytest.mark.parametrize(
    "text, answer, fmt",
    [
        ("Reasoning...\nTherefore, the answer is: C", "C", 0.0),
        ("therefore the answer is (b).", "B", 0.0),
        ("The answer is a good guess", "A", 0.0),  # OLMES quirk: "is a" reads as A
        ("Option D is correct.", "D", 0.0),
        ("I pick (B) here", "B", 0.0),
        ("No letter on this line\nA or B, but B.\nD", "B", 0.0),  # first line with one, its last
        ("nothing to see", "", 1.0),  # OLMES leaves 1.0 when nothing matched
    ],
)
def test_cot_extraction_is_olmes_backup_patterns(text, answer, fmt):
    assert extract_cot_letter(text) == {"answer": answer, "answer_format_correct": fmt}


def test_cot_extraction_is_linear_on_a_long_line():
    import time

    start = time.monotonic()  # OLMES's backtracking patterns take hours on this line
    assert extract_cot_letter("x" * 200_000 + " A")["answer"] == "A"
    assert time.monotonic() - start < BACKSTOP


@requires_shared
def test_cot_end_to_end_with_replay(mirror, tmp_path):
    docs = [inst.doc for inst in chat_requests("mmlu_cot_tulu_anatomy")[:4]]
    texts = ["Therefore, the answer is: {}", "Therefore, the answer is: {}.", "It is ({}).", "Hmm."]
    rows = [
        {"key": doc["doc_key"], "completion": text.format("ABCD"[doc["answer"]])}
        for doc, text in zip(docs, texts)
    ]
    out = replay_eval(
        ["mmlu_cot_tulu_anatomy"], {"completions": replay_file(tmp_path, rows)}, limit=4
    )
    result = out["results"]["mmlu_cot_tulu_anatomy"]
    assert result["exact_match,none"] == 0.75
    assert result["answer_format_correct,none"] == 0.25
