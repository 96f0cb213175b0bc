"""What a leaderboard run is given (`evalpack.core.catalog`, `.checkpoints`): built-in and
user suites, and the models file, whose every problem is one line naming its checkpoint. The
runs themselves: test_runs.py."""

import json
import logging
import subprocess

import pytest

from evalpack.core import catalog
from evalpack.leaderboard import checkpoints as models_file
from tests.boards import evalpack_process


def run_leaderboard(models, output) -> tuple[int, str]:
    """`evalpack leaderboard run` of the reasoning_math suite: its exit status and stderr."""
    command = evalpack_process(
        "leaderboard",
        "run",
        "--models",
        str(models),
        "--suite",
        "reasoning_math",
        "--output",
        str(output),
        stderr=subprocess.PIPE,
        text=True,
    )
    _, stderr = command.communicate()
    return command.returncode, stderr


def test_builtin_suites_set_chat_and_unsafe_code():
    suites = catalog.load_suites()
    entries = catalog.suite_tasks(suites, "tulu_3_dev_core")
    assert [e["task"] for e in entries] == [
        "minerva_math_tulu",
        "bbh_cot_v1_tulu",
        "codex_humaneval_tulu",
    ]
    flags = catalog.task_flags(entries[2])
    assert flags[:2] == ["--tasks", "codex_humaneval_tulu"]
    assert "--apply_chat_template" in flags and "--confirm_run_unsafe_code" in flags


def test_user_suite_cannot_forget_the_chat_template(tmp_path, caplog):
    user = tmp_path / "suites.yaml"
    user.write_text("mine:\n  tasks:\n    - task: minerva_math_tulu_algebra\n")
    with caplog.at_level(logging.WARNING, logger="evalpack.leaderboard.board"):
        (entry,) = catalog.suite_tasks(catalog.load_suites(str(user)), "mine")
    assert entry["chat"] is True
    assert catalog.task_flags(entry)[2:] == [
        "--apply_chat_template",
        "--fewshot_as_multiturn",
        "true",
    ]
    assert "needs a chat template" in caplog.text


def test_suite_subset_and_unknown_names():
    suites = catalog.load_suites()
    (entry,) = catalog.suite_tasks(suites, "tulu_3_dev_core", ["bbh_cot_v1_tulu"])
    assert entry["task"] == "bbh_cot_v1_tulu"
    with pytest.raises(ValueError, match="no task"):
        catalog.suite_tasks(suites, "tulu_3_dev_core", ["aime24_reasoning"])
    with pytest.raises(ValueError, match="unknown suite"):
        catalog.suite_tasks(suites, "nope")


def test_checkpoint_names_are_checked(tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text("checkpoints:\n  - {name: a, model: replay}\n  - {name: a, model: hf}\n")
    with pytest.raises(ValueError, match="checkpoint 2 \\('a'\\): name 'a' appears twice"):
        models_file.load_checkpoints(str(models))
    models.write_text("checkpoints:\n  - {name: ../x, model: replay}\n")
    with pytest.raises(ValueError, match="must match"):
        models_file.load_checkpoints(str(models))
    models.write_text(
        "checkpoints:\n  - {name: a, model: hf, model_args: pretrained=x}\n"
        "  - {model: hf, model_args: pretrained=x}\n"
    )
    with pytest.raises(ValueError, match="models.yaml, checkpoint 2: needs `name`"):
        models_file.load_checkpoints(str(models))
    returncode, stderr = run_leaderboard(models, tmp_path / "board")
    assert returncode == 2
    assert stderr.strip().splitlines()[-1] == (
        f"evalpack leaderboard: error: {models}, checkpoint 2: needs `name`"
    )
    assert "Traceback" not in stderr


def test_every_models_file_problem_is_one_line_naming_its_checkpoint(tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text(
        json.dumps(
            {
                "checkpoints": [
                    {"name": "typo", "model": "repaly", "model_args": {"from_doc": "solution"}},
                    {"name": "key", "model": "replay", "model_arg": {"from_doc": "solution"}},
                    {"name": "args", "model": "resumable"},
                    {"name": "fine", "model": "replay", "model_args": "from_doc=solution"},
                ]
            }
        )
    )
    returncode, stderr = run_leaderboard(models, tmp_path / "board")
    assert returncode == 2 and "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if "evalpack leaderboard: error:" in line]
    assert lines == [
        (
            f"evalpack leaderboard: error: {models}, checkpoint 1 ('typo'): unknown model 'repaly' "
            "(did you mean 'replay'?)"
        ),
        (
            f"evalpack leaderboard: error: {models}, checkpoint 2 ('key'): unknown key 'model_arg' "
            "(did you mean 'model_args'?); known: name, model, model_args, resources, gen_kwargs, process_output, serve"
        ),
        (
            f"evalpack leaderboard: error: {models}, checkpoint 3 ('args'): model 'resumable' needs "
            "model_args model, log"
        ),
    ]
    assert not (tmp_path / "board").exists()  # nothing started
