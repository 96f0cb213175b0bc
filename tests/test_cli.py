import logging

from conftest import task_manager
from evalpack import cli


def test_chat_tasks_expand_groups():
    index = task_manager().task_index
    found = cli.chat_tasks(["minerva_math_tulu"], index)
    assert len(found) == 7 and "minerva_math_tulu_algebra" in found


def test_warns_when_a_chat_task_runs_without_chat_template(caplog):
    with caplog.at_level(logging.WARNING, logger="evalpack"):
        cli.check_chat_settings(["--model", "replay", "--tasks", "minerva_math_tulu_algebra"])
    assert "--apply_chat_template is not set" in caplog.text


def test_warns_when_few_shot_turns_are_collapsed(caplog):
    argv = ["--tasks", "minerva_math_tulu_algebra", "--apply_chat_template",
            "--fewshot_as_multiturn", "false"]
    with caplog.at_level(logging.WARNING, logger="evalpack"):
        cli.check_chat_settings(argv)
    assert "collapses them into one user message" in caplog.text


def test_no_warning_for_a_proper_chat_run(caplog):
    with caplog.at_level(logging.WARNING, logger="evalpack"):
        cli.check_chat_settings(["--tasks", "minerva_math_tulu", "--apply_chat_template"])
    assert caplog.text == ""


def test_option_parsing():
    argv = ["--tasks=a,b", "--apply_chat_template", "--limit", "3"]
    assert cli._option(argv, "--tasks") == "a,b"
    assert cli._option(argv, "--apply_chat_template") == ""
    assert cli._option(argv, "--limit") == "3"
    assert cli._option(argv, "--seed") is None


def test_warns_when_a_base_model_task_gets_a_chat_template(caplog):
    with caplog.at_level(logging.WARNING, logger="evalpack"):
        cli.check_chat_settings(["--tasks", "math500_minerva_base", "--apply_chat_template"])
    assert "math500_minerva_base are base-model tasks" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="evalpack"):
        cli.check_chat_settings(["--tasks", "math500_minerva_base"])
    assert caplog.text == ""
