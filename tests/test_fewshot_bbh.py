from collections import defaultdict

from conftest import OLMES_REF, read_jsonl, requires_shared
from evalpack import fewshot


def test_bbh_shots_hash_and_shape():
    record = fewshot.load("bbh_cot")
    assert fewshot.payload_sha256(record["subtasks"]) == record["sha256"]
    assert len(record["subtasks"]) == 27
    for entry in record["subtasks"].values():
        assert len(entry["samples"]) == 3 and entry["description"].endswith("\n\n")


@requires_shared
def test_bbh_shots_equal_olmes_turns():
    subtasks = fewshot.load("bbh_cot")["subtasks"]
    first_record = defaultdict(list)
    for ref in read_jsonl(OLMES_REF / "requests_dev_bbh.jsonl"):
        first_record[ref["key"].split("/")[1]].append(ref)
    for subtask, refs in first_record.items():
        entry = subtasks[subtask]
        turns = []
        for i, shot in enumerate(entry["samples"]):
            prefix = entry["description"] if i == 0 else ""
            turns += [
                {"role": "user",
                 "content": f"{prefix}Q: {shot['input']}\nA: Let's think step by step."},
                {"role": "assistant", "content": shot["target"].strip()},
            ]
        assert refs[0]["messages"][:6] == turns, subtask
