"""The BBH CoT shots: lm-eval 0.4.13's texts, and OLMES's chat turns rebuilt from them."""

from importlib import metadata, resources

import yaml

from conftest import DATA_DIR, OLMES_REF, read_jsonl, requires_shared
from evalpack.core import fewshot

COT_SUFFIX = "\nA: Let's think step by step."


def _shot_turns(entry):
    """OLMES's shot turns: the description opens the first user turn."""
    turns = []
    for i, shot in enumerate(entry["samples"]):
        prefix = entry["description"] if i == 0 else ""
        turns += [{"role": "user", "content": f"{prefix}Q: {shot['input']}{COT_SUFFIX}"},
                  {"role": "assistant", "content": shot["target"].strip()}]
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
                "samples": [{"input": s["input"], "target": s["target"]}
                            for s in config["fewshot_config"]["samples"]],
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
