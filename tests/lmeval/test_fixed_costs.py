"""A run whose tasks are all the pack's does not index lm-eval's built-in tasks; a run naming one
of lm-eval's own still finds it; templates are compiled once. (torch: test_lazy_torch.py)"""

import lm_eval.tasks

from evalpack.cli import cli
from evalpack.leaderboard import inprocess
from evalpack.lmeval import fixed_costs
from tests.conftest import TASKS_DIR, requires_shared


def task_manager_for(names: list[str]):
    """The task manager lm-eval's run path builds for a run naming `names`."""
    with fixed_costs.pack_only(names, str(TASKS_DIR)):
        return lm_eval.tasks.TaskManager(include_path=str(TASKS_DIR), metadata={})


@requires_shared
def test_a_run_of_pack_tasks_indexes_only_the_pack(mirror):
    manager = task_manager_for(["gsm8k_tulu", "minerva_math_tulu"])
    assert "gsm8k_tulu" in manager.all_tasks and "minerva_math_tulu" in manager.all_groups
    assert "arc_easy" not in manager.task_index and "gsm8k" not in manager.task_index
    assert set(manager.all_subtasks) <= set(manager.task_index)
    built = manager.load(["minerva_math_tulu"])
    assert len(built["tasks"]) == 7


def test_a_run_naming_a_builtin_task_gets_lm_evals_full_index():
    manager = task_manager_for(["gsm8k_tulu", "arc_easy"])
    assert "arc_easy" in manager.task_index and "gsm8k_tulu" in manager.task_index
    assert not fixed_costs.needs_builtin_tasks(["gsm8k_tulu"], str(TASKS_DIR))


def test_an_unknown_name_is_still_lm_evals_error(monkeypatch):
    args = cli.EvalpackCLI().parse(["--model", "replay", "--tasks", "gsm8k_tulux"])
    monkeypatch.setattr(inprocess, "check_chat_settings", lambda args: None)
    try:
        inprocess.execute(args)
    except ValueError as exc:
        assert "gsm8k_tulux" in str(exc)
    else:
        raise AssertionError("an unknown task ran")


@requires_shared
def test_a_one_document_pack_run_gives_its_result(mirror, tmp_path):
    cli.run_command(
        cli.EvalpackCLI().parse(
            [
                "--model",
                "replay",
                "--model_args",
                "from_doc=answer",
                "--tasks",
                "gsm8k_tulu",
                "--limit",
                "1",
                "--apply_chat_template",
                "--output_path",
                str(tmp_path),
            ]
        )
    )
    assert list(tmp_path.rglob("results_*.json"))


def test_templates_render_as_lm_evals_and_compile_once():
    original = lm_eval.utils.env.from_string
    doc = {"input": "not ( True ) and ( True ) is", "target": "False", "n": 3}
    templates = [
        "Q: {{input}}\nA:",
        " {{target}}",
        "{{ input | regex_replace('True', 'T') }}",
        "{% if n > 2 %}many{% endif %}\n",
        "{{input}}",
    ]
    for template in templates:
        assert fixed_costs.apply_template(template, doc) == original(template).render(**doc)
    before = fixed_costs.compiled.cache_info().hits
    fixed_costs.apply_template("Q: {{input}}\nA:", {"input": "other"})
    assert fixed_costs.compiled.cache_info().hits == before + 1
    try:
        fixed_costs.apply_template("{{missing}}", doc)
    except Exception as exc:  # noqa: BLE001
        assert type(exc).__name__ == "UndefinedError"
    else:
        raise AssertionError("an undefined field rendered")
