"""minerva_math_tulu through lm-eval: task build, OLMES-identical messages, end-to-end scoring."""

import json

import pytest
from conftest import (
    OLMES_REF,
    chat_requests,
    read_jsonl,
    requires_shared,
    task_manager,
)

SUBJECTS = [
    "algebra", "counting_and_probability", "geometry", "intermediate_algebra",
    "number_theory", "prealgebra", "precalculus",
]
SIZES = [1187, 474, 479, 903, 540, 871, 546]


def test_group_and_all_subjects_build(mirror):
    loaded = task_manager().load(["minerva_math_tulu"])
    assert loaded["group_map"] == {
        "minerva_math_tulu": [f"minerva_math_tulu_{s}" for s in SUBJECTS]
    }
    sizes = [len(loaded["tasks"][f"minerva_math_tulu_{s}"].eval_docs) for s in SUBJECTS]
    assert sizes == SIZES and sum(sizes) == 5000


@requires_shared
@pytest.mark.parametrize("subject", ["algebra", "prealgebra"])
def test_messages_identical_to_olmes(mirror, subject):
    reference = [
        r for r in read_jsonl(OLMES_REF / "requests_dev.jsonl")
        if r["task"] == f"minerva_math_{subject}::tulu"
    ]
    instances = chat_requests(f"minerva_math_tulu_{subject}")
    built = {inst.doc["doc_key"]: inst for inst in instances}
    assert len(reference) == len(built) == {"algebra": 1187, "prealgebra": 871}[subject]
    for ref in reference:
        inst = built[ref["key"]]
        context, gen_kwargs = inst.args
        assert json.loads(context) == ref["messages"], ref["key"]
        assert gen_kwargs["until"] == [] and gen_kwargs["max_gen_toks"] == 1024
        assert gen_kwargs["do_sample"] is False and gen_kwargs["temperature"] == 0.0
        assert inst.repeats == ref["repeats"] == 1
