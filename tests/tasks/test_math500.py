"""minerva_math_500_tulu and math500_minerva_base (both also build with the reasoning tasks:
test_reasoning_math.py)."""

import json

from evalpack.hooks.minerva_math import minerva_shots
from tests.conftest import chat_requests, olmes_requests, requires_shared, task_manager


@requires_shared
def test_minerva_math_500_tulu_messages_identical_to_olmes(mirror):
    reference = olmes_requests("minerva_math_500::tulu")
    built = {i.doc["doc_key"]: i for i in chat_requests("minerva_math_500_tulu")}
    assert len(reference) == 100
    for ref in reference:
        assert json.loads(built[ref["key"]].args[0]) == ref["messages"], ref["key"]


@requires_shared
def test_base_model_prompt_is_plain_four_shot_without_test_problems(mirror):
    task = task_manager().load(["math500_minerva_base"])["tasks"]["math500_minerva_base"]
    task.build_all_requests(rank=0, world_size=1, limit=3)
    shots = minerva_shots()
    for instance in task.instances:
        context, gen_kwargs = instance.args
        blocks = context.split("\n\nProblem: ")
        assert context.startswith(f"Problem: {shots[0]['problem']}\nAnswer: {shots[0]['solution']}")
        assert context.endswith(f"Problem: {instance.doc['problem']}\nAnswer:")
        assert len(blocks) == 5
        assert gen_kwargs["until"] == ["Problem:"]
    test_problems = {doc["problem"] for doc in task.eval_docs}
    assert not any(shot["problem"] in test_problems for shot in shots)
