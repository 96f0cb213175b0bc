"""mmlu_pro_cot_tulu (OLMES `mmlu_pro:0shot_cot::tulu3`) and mmlu_pro_cot_llama3 (OLMES
`mmlu_pro:cot::llama3.1`) through lm-eval: OLMES-identical requests on every MMLU-Pro record of
requests_dev_unseen.jsonl, every one of the 2 x 12,032 docs rendered, OLMES's verdicts on its
own rows and on adversarial completions for every rule of the answer cascade (those in
test_mmlu_pro_answers.py), group means, and an `evalpack run` with `replay` whose report breaks
the group down by category."""

import hashlib
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from evalpack.core.data import DataError
from evalpack.hooks import mmlu_pro
from evalpack.models.requests import render_messages
from tests.conftest import (
    DATA_DIR,
    OLMES_REF,
    REPO,
    by_doc,
    read_jsonl,
    replay_eval,
    requires_shared,
    task_manager,
)

GROUPS = {"0shot_cot::tulu3": "mmlu_pro_cot_tulu", "cot::llama3.1": "mmlu_pro_cot_llama3"}
MIRROR = DATA_DIR / "TIGER-Lab__MMLU-Pro/default"


def generator():
    spec = importlib.util.spec_from_file_location(
        "gen", REPO / "tasks/mmlu_pro/_generate_configs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = generator()
CATEGORIES, slug = GEN.CATEGORIES, GEN.slug


def sha(value) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def task_name(olmes_task: str) -> str:
    """`mmlu_pro_computer science:cot::llama3.1` -> `mmlu_pro_cot_llama3_computer_science`."""
    spec, formulation = olmes_task.split(":", 1)
    return f"{GROUPS[formulation]}_{spec.removeprefix('mmlu_pro_').replace(' ', '_')}"


@pytest.fixture(scope="module")
def olmes_requests():
    if not OLMES_REF.is_dir():
        pytest.skip(f"OLMES reference files not found at {OLMES_REF}")
    return [
        r
        for r in read_jsonl(OLMES_REF / "requests_dev_unseen.jsonl")
        if r["task"].startswith("mmlu_pro_")
    ]


@pytest.fixture(scope="module")
def loaded(module_mirror):
    """Both groups as lm-eval's TaskManager loads them."""
    return {group: task_manager().load([group]) for group in GROUPS.values()}


@pytest.fixture(scope="module")
def built(loaded):
    """{task: {doc key: instances}} for all 28 tasks, as lm-eval builds them in chat mode (with
    the `replay` model's template each context is the JSON of the message list)."""
    out = {}
    for group in loaded.values():
        for name, task in group["tasks"].items():
            task.build_all_requests(
                rank=0,
                world_size=1,
                apply_chat_template=True,
                fewshot_as_multiturn=True,
                chat_template=json_template,
            )
            out[name] = by_doc(task.instances)
    return out


def json_template(messages, add_generation_prompt=True):
    return render_messages(messages)


@pytest.fixture(scope="module")
def rows():
    if not MIRROR.is_dir():
        pytest.skip(f"MMLU-Pro mirror not found at {MIRROR}")
    return {split: read_jsonl(MIRROR / f"{split}.jsonl") for split in ("test", "validation")}


@requires_shared
def test_categories_are_olmes_list_in_olmes_order(olmes_requests, rows):
    olmes_order = list(
        dict.fromkeys(r["task"].split(":")[0].removeprefix("mmlu_pro_") for r in olmes_requests)
    )
    assert olmes_order == list(CATEGORIES)
    assert {row["category"] for row in rows["test"]} == set(CATEGORIES)


def test_both_groups_build_through_lm_eval(loaded):
    for group, tasks in loaded.items():
        assert tasks["group_map"] == {group: [f"{group}_{slug(c)}" for c in CATEGORIES]}
        assert sum(len(task.eval_docs) for task in tasks["tasks"].values()) == 12032


@requires_shared
def test_requests_identical_to_olmes_on_every_dev_record(built, olmes_requests):
    assert len(olmes_requests) == 84  # 3 docs x 14 categories x 2 formulations
    for ref in olmes_requests:
        name = task_name(ref["task"])
        (inst,) = built[name][ref["key"]]
        messages = json.loads(inst.args[0])
        assert messages == ref["messages"], (name, ref["key"])
        assert sha(messages) == ref["sha256_messages"]
        assert inst.doc["answer"] == ref["label"]
        gen = dict(inst.args[1])
        assert gen.pop("until") == ref["stop_sequences"] == []
        olmes = {k: v for k, v in ref["generation_kwargs"].items() if k != "truncate_context"}
        assert gen == olmes  # max_gen_toks 2048 / 1024, greedy
        assert ref["assistant_prefix"] == "" and ref["repeats"] == 1
    assert {len(r["messages"]) for r in olmes_requests if "llama" in r["task"]} == {11}


@requires_shared
def test_every_doc_of_every_category_renders(built, rows):
    """Both formulations of all 12,032 docs, rebuilt from the mirror's rows: the category's
    rows in file order under the whole split's keys, and the 5 shots are the category's
    validation rows in file order."""
    for category in CATEGORIES:
        name = slug(category)
        picked = [(i, r) for i, r in enumerate(rows["test"]) if r["category"] == category]
        shots = [r for r in rows["validation"] if r["category"] == category]
        assert len(shots) == 5
        tulu, llama = built[f"mmlu_pro_cot_tulu_{name}"], built[f"mmlu_pro_cot_llama3_{name}"]
        keys = [f"TIGER-Lab__MMLU-Pro/default/test#{i}" for i, _ in picked]
        assert list(tulu) == keys == list(llama)
        shot_turns = []
        for shot in shots:
            shot_turns += [
                {"role": "user", "content": llama31_turn(shot)},
                {
                    "role": "assistant",
                    "content": shot["cot_content"]
                    .removeprefix("A: Let's think step by step.")
                    .strip(),
                },
            ]
        for key, (_, row) in zip(keys, picked):
            (message,) = json.loads(tulu[key][0].args[0])
            assert message == {"role": "user", "content": tulu3_turn(row)}
            messages = json.loads(llama[key][0].args[0])
            assert messages == shot_turns + [{"role": "user", "content": llama31_turn(row)}]


def tulu3_turn(row: dict) -> str:
    options = "".join(f" ({'ABCDEFGHIJ'[i]}) {o}\n" for i, o in enumerate(row["options"]))
    return (
        "Answer the following multiple-choice question by giving the correct answer letter "
        "in parentheses. Provide CONCISE reasoning for the answer, and make sure to finish "
        'the response with "Therefore, the answer is (ANSWER_LETTER)" where (ANSWER_LETTER) '
        f"is one of (A), (B), (C), (D), (E), etc.\n\nQuestion: {row['question']}\n{options}"
        "\nAnswer the above question and REMEMBER to finish your response with the exact "
        'phrase "Therefore, the answer is (ANSWER_LETTER)" where (ANSWER_LETTER) is one of '
        "(A), (B), (C), (D), (E), etc."
    )


def llama31_turn(row: dict) -> str:
    options = "".join(f" {'ABCDEFGHIJ'[i]}. {o}\n" for i, o in enumerate(row["options"]))
    return (
        "Given the following question and candidate answers, choose the best answer.\n"
        f'Question: {row["question"]}\n{options}\nYour response should end with "The '
        'answer is [the_answer_letter]." where the [the_answer_letter] is a letter from the '
        "provided choices.\n\nLet's think step by step."
    )


def test_an_unknown_category_is_one_clear_error(mirror):
    with pytest.raises(DataError, match="no row has category 'astrology'"):
        mmlu_pro.load("TIGER-Lab/MMLU-Pro", category="astrology")


# --- runs end to end ----------------------------------------------------------------------------


def category_docs(rows: list[dict], category: str, count: int) -> list[dict]:
    return [r for r in rows if r["category"] == category][:count]


def replay_rows(group: str, rows: dict, phrase: str) -> tuple[list[dict], dict]:
    """4 math docs answered right, the first doc of every other category wrong: (replay rows,
    the docs of each task)."""
    replay, samples = [], {}
    for category in CATEGORIES:
        count = 4 if category == "math" else 1
        task = f"{group}_{slug(category)}"
        samples[task] = list(range(count))
        for doc_id, doc in enumerate(category_docs(rows["test"], category, count)):
            letter = (
                doc["answer"]
                if category == "math"
                else "ABCDEFGHIJ"[(doc["answer_index"] + 1) % len(doc["options"])]
            )
            replay.append({"task": task, "doc_id": doc_id, "completion": phrase.format(letter)})
    return replay, samples


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@requires_shared
def test_llama_group_is_the_micro_mean_over_docs(mirror, rows, tmp_path):
    replay, samples = replay_rows("mmlu_pro_cot_llama3", rows, "So the answer is {}.")
    results = replay_eval(
        ["mmlu_pro_cot_llama3"],
        {"completions": write_jsonl(tmp_path / "replay.jsonl", replay)},
        samples=samples,
    )["results"]
    group = results["mmlu_pro_cot_llama3"]
    assert results["mmlu_pro_cot_llama3_math"]["exact_match,none"] == 1.0
    assert group["exact_match,none"] == pytest.approx(4 / 17)
    assert group["exact_match_macro,none"] == pytest.approx(1 / 14)
    assert group["answer_format_correct,none"] == 0.5  # "So the answer is" is not "The answer is"


@requires_shared
def test_evalpack_run_offline_macro_mean_and_report_by_category(rows, tmp_path):
    """`evalpack run` with `replay` on the mirror (no hub): the tulu3 group is the macro mean
    over categories; the report shows it and one breakdown row per category."""
    from evalpack.report import render
    from evalpack.report import report as reports

    replay, samples = replay_rows("mmlu_pro_cot_tulu", rows, "Therefore, the answer is ({}).")
    out = tmp_path / "run"
    env = {"EVALPACK_DATA_DIR": str(DATA_DIR), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    command = [
        sys.executable,
        "-m",
        "evalpack.cli.cli",
        "run",
        "--model",
        "replay",
        "--model_args",
        f"completions={write_jsonl(tmp_path / 'replay.jsonl', replay)}",
        "--tasks",
        "mmlu_pro_cot_tulu",
        "--samples",
        json.dumps(samples),
        "--apply_chat_template",
        "--output_path",
        str(out),
        "--log_samples",
    ]
    done = subprocess.run(
        command, env={**os.environ, **env}, capture_output=True, text=True, check=False, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = reports.build_report(reports.collect([f"replay={out}"]), None, "mmlu_pro")
    (row,) = data["rows"]
    group = row["scores"]["mmlu_pro_cot_tulu"]
    assert group["value"] == pytest.approx(1 / 14)
    assert data["columns"] == [
        {
            "task": "mmlu_pro_cot_tulu",
            "metric": "exact_match",
            "filter": "none",
            "label": "MMLU-Pro (0-shot CoT)",
        }
    ]
    (breakdown,) = [b for b in data["breakdowns"] if b["task"] == "mmlu_pro_cot_tulu"]
    assert breakdown["label"] == "MMLU-Pro (0-shot CoT)"
    assert breakdown["scores"]["replay"] == {slug(c): float(c == "math") for c in CATEGORIES}
    (results_file,) = out.rglob("results_*.json")
    results = json.loads(results_file.read_text())["results"]["mmlu_pro_cot_tulu"]
    assert results["exact_match_micro,none"] == pytest.approx(4 / 17)
    markdown = render.write_report(data, tmp_path / "report")["markdown"].read_text()
    assert "| computer_science |" in markdown
