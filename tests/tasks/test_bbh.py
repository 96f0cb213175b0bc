"""bbh_cot_v1_tulu / bbh_cot_tulu through lm-eval: build, OLMES-identical messages, scoring.

The CoT shots: lm-eval 0.4.13's texts, and OLMES's chat turns rebuilt from them."""

import json
from collections import defaultdict
from importlib import metadata, resources

import pytest
import yaml

from evalpack.core import fewshot
from tests.conftest import (
    DATA_DIR,
    OLMES_REF,
    OUTPUTS,
    chat_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
    task_manager,
)
from tests.scoring.test_bbh_answers import TARGETS_NOT_AN_OPTION, WORDS_WITH_PUNCTUATION

SUBTASKS = (
    sorted(p.name for p in (DATA_DIR / "lukaemon__bbh").iterdir()) if DATA_DIR.is_dir() else []
)


def _reference_by_subtask():
    by_subtask = defaultdict(list)
    for ref in read_jsonl(OLMES_REF / "requests_dev_bbh.jsonl"):
        by_subtask[ref["key"].split("/")[1]].append(ref)
    return by_subtask


def test_all_tasks_and_both_groups_build(mirror):
    loaded = task_manager().load(["bbh_cot_v1_tulu", "bbh_cot_tulu"])
    assert len(SUBTASKS) == 27
    for group in ("bbh_cot_v1_tulu", "bbh_cot_tulu"):
        assert loaded["group_map"][group] == [f"{group}_{s}" for s in SUBTASKS]
    sizes = [len(loaded["tasks"][f"bbh_cot_v1_tulu_{s}"].eval_docs) for s in SUBTASKS]
    assert sum(sizes) == 6511


@requires_shared
def test_messages_identical_to_olmes_for_every_reference_doc(mirror):
    reference = _reference_by_subtask()
    assert len(reference) == 9 and sum(map(len, reference.values())) == 2178
    for subtask, refs in reference.items():
        built = {i.doc["doc_key"]: i for i in chat_requests(f"bbh_cot_v1_tulu_{subtask}")}
        assert len(built) == len(refs)
        for ref in refs:
            context, gen_kwargs = built[ref["key"]].args
            assert json.loads(context) == ref["messages"], ref["key"]
            assert gen_kwargs["until"] == [] and gen_kwargs["max_gen_toks"] == 512
            assert gen_kwargs["do_sample"] is False


@requires_shared
def test_zero_shot_keeps_the_description_in_the_only_user_turn(mirror):
    ref = _reference_by_subtask()["snarks"][0]
    description = ref["messages"][0]["content"].split("Q: ")[0]
    instance = chat_requests("bbh_cot_v1_tulu_snarks", num_fewshot=0)[0]
    messages = json.loads(instance.args[0])
    assert messages == [{"role": "user", "content": description + ref["messages"][-1]["content"]}]


@requires_shared
def test_system_instruction_is_a_separate_system_message(mirror):
    task = task_manager().load(["bbh_cot_v1_tulu_snarks"])["tasks"]["bbh_cot_v1_tulu_snarks"]
    doc = task.eval_docs[0]
    context = task.fewshot_context(
        doc,
        num_fewshot=3,
        system_instruction="Be brief.",
        apply_chat_template=True,
        fewshot_as_multiturn=True,
        chat_template=lambda m, add_generation_prompt=True: json.dumps(m),
    )
    messages = json.loads(context)
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert messages[1]["content"].startswith("Determine which of two sentences is sarcastic.")


def every_tenth_doc(groups: list[str], also: set[str] = frozenset()) -> dict[str, list[int]]:
    """lm-eval's `samples` for the subtasks of `groups`: every 10th doc of each, and the docs
    named in `also` ("<subtask>#<row>")."""
    samples = {}
    for subtask in SUBTASKS:
        rows = len(read_jsonl(DATA_DIR / "lukaemon__bbh" / subtask / "test.jsonl"))
        named = {int(key.split("#")[1]) for key in also if key.startswith(f"{subtask}#")}
        for group in groups:
            samples[f"{group}_{subtask}"] = sorted({*range(0, rows, 10), *named})
    return samples


@requires_shared
def test_real_targets_as_final_sentences(mirror):
    # 18 targets cannot be read back by OLMES's patterns, 3 even by flex: through lm-eval here,
    # those and every 10th doc of each subtask (test_bbh_answers reads all 6,511 targets)
    unreadable = TARGETS_NOT_AN_OPTION | WORDS_WITH_PUNCTUATION
    samples = every_tenth_doc(["bbh_cot_v1_tulu"], also=unreadable)
    docs = sum(map(len, samples.values()))
    out = replay_eval(["bbh_cot_v1_tulu"], "from_doc=So the answer is {target}.", samples=samples)[
        "results"
    ]
    assert len(unreadable) == 18 and len(TARGETS_NOT_AN_OPTION) == 3
    assert out["bbh_cot_v1_tulu"]["exact_match,cot"] == pytest.approx((docs - 18) / docs)
    assert out["bbh_cot_v1_tulu"]["exact_match_flex,cot"] == pytest.approx((docs - 3) / docs)
    assert out["bbh_cot_v1_tulu_boolean_expressions"]["exact_match,cot"] == 1.0


@requires_shared
def test_real_completions_score_without_error(mirror, tmp_path):
    # every 10th doc of each subtask (test_bbh_answers scores all 6,511 real completions)
    real = [r for r in read_jsonl(OUTPUTS / "bbh.jsonl") if r["source"] != "synthetic"]
    file = tmp_path / "real.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in real))
    groups = ["bbh_cot_v1_tulu", "bbh_cot_tulu"]
    out = replay_eval(groups, f"completions={file}", samples=every_tenth_doc(groups))["results"]
    micro = out["bbh_cot_v1_tulu"]["exact_match,cot"]
    macro = out["bbh_cot_v1_tulu"]["exact_match_macro,cot"]
    subtask_mean = sum(out[f"bbh_cot_v1_tulu_{s}"]["exact_match,cot"] for s in SUBTASKS) / 27
    assert macro == pytest.approx(subtask_mean)
    assert 0.6 < micro < 0.85  # code-davinci-002, 3-shot CoT
    assert out["bbh_cot_v1_tulu"]["exact_match_flex,cot"] >= micro
    assert 0.0 < out["bbh_cot_tulu"]["exact_match,cot"] <= 1.0


# ------------------------------------------------------------ few-shot exemplars

COT_SUFFIX = "\nA: Let's think step by step."


def _shot_turns(entry):
    """OLMES's shot turns: the description opens the first user turn."""
    turns = []
    for i, shot in enumerate(entry["samples"]):
        prefix = entry["description"] if i == 0 else ""
        turns += [
            {"role": "user", "content": f"{prefix}Q: {shot['input']}{COT_SUFFIX}"},
            {"role": "assistant", "content": shot["target"].strip()},
        ]
    return turns


def test_bbh_shots_hash_and_shape():
    record = fewshot.load("bbh_cot")
    assert fewshot.payload_sha256(record["subtasks"]) == record["sha256"]
    assert "lm_eval-0.4.13-py3-none-any.whl sha256 5daaa1973bf8" in record["source"]
    assert len(record["subtasks"]) == 27
    for entry in record["subtasks"].values():
        assert entry["description"].endswith("\n\n") and not entry["description"].endswith("\n\n\n")
        assert len(entry["samples"]) == 3
        assert all(set(s) == {"input", "target"} for s in entry["samples"])


def test_bbh_shots_equal_the_installed_lm_eval_task_files():
    assert metadata.version("lm_eval") == "0.4.13"
    folder = resources.files("lm_eval") / "tasks" / "bbh" / "cot_fewshot"
    shipped = {}
    for file in folder.iterdir():
        if file.name.endswith(".yaml") and not file.name.startswith("_"):
            config = yaml.safe_load(file.read_text(encoding="utf-8"))
            shipped[config["dataset_name"]] = {
                "description": config["description"],
                "samples": [
                    {"input": s["input"], "target": s["target"]}
                    for s in config["fewshot_config"]["samples"]
                ],
            }
    assert fewshot.load("bbh_cot")["subtasks"] == shipped


@requires_shared
def test_every_olmes_request_is_rebuilt_from_the_shots():
    subtasks = fewshot.load("bbh_cot")["subtasks"]
    refs = read_jsonl(OLMES_REF / "requests_dev_bbh.jsonl")
    docs = {}
    for ref in refs:
        path, row = ref["key"].split("#")
        docs.setdefault(path, read_jsonl(DATA_DIR / f"{path}.jsonl"))
        doc_turn = {"role": "user", "content": f"Q: {docs[path][int(row)]['input']}{COT_SUFFIX}"}
        assert ref["messages"] == _shot_turns(subtasks[path.split("/")[1]]) + [doc_turn], ref["key"]
    assert len(refs) == 2178 and len(docs) == 9


@requires_shared
def test_description_joins_the_first_question_directly():
    subtasks = fewshot.load("bbh_cot")["subtasks"]
    ref = read_jsonl(OLMES_REF / "requests_dev_bbh.jsonl")[0]
    first = ref["messages"][0]
    description = subtasks["boolean_expressions"]["description"]
    assert first["role"] == "user" and ref["messages"][1]["role"] == "assistant"
    # no system message; the description's own blank line is the only separator
    assert first["content"].startswith(description + "Q: not ( ( not not True ) ) is\nA: ")
    assert first["content"].startswith("Evaluate the result of a random Boolean expression.\n\nQ: ")
