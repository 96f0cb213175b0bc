import logging

import pytest

from evalpack.cli import cli
from evalpack.core import catalog
from evalpack.leaderboard import inprocess
from tests.boards import evalpack
from tests.conftest import task_manager


def parsed(argv: list[str]):
    return cli.EvalpackCLI().parse(argv)


def check(argv: list[str]) -> None:
    args = parsed(argv)
    args.include_path = None
    inprocess.check_chat_settings(args)


def test_chat_tasks_expand_groups():
    index = task_manager().task_index
    found = catalog.chat_tasks(["minerva_math_tulu"], index)
    assert len(found) == 7 and "minerva_math_tulu_algebra" in found


def test_warns_when_a_chat_task_runs_without_chat_template(caplog):
    with caplog.at_level(logging.WARNING, logger="evalpack"):
        check(["--model", "replay", "--tasks", "minerva_math_tulu_algebra"])
    assert "--apply_chat_template is not set" in caplog.text


def test_warns_when_few_shot_turns_are_collapsed(caplog):
    argv = [
        "--tasks",
        "minerva_math_tulu_algebra",
        "--apply_chat_template",
        "--fewshot_as_multiturn",
        "false",
    ]
    with caplog.at_level(logging.WARNING, logger="evalpack"):
        check(argv)
    assert "collapses them into one user message" in caplog.text


def test_no_warning_for_a_proper_chat_run(caplog):
    with caplog.at_level(logging.WARNING, logger="evalpack"):
        check(["--tasks", "minerva_math_tulu", "--apply_chat_template"])
    assert caplog.text == ""


def test_tasks_are_read_from_parsed_arguments_in_every_form():
    assert catalog.requested_tasks(parsed(["run", "--tasks=a,b", "--limit", "3"])) == ["a", "b"]
    assert catalog.requested_tasks(parsed(["--tasks", "a", "b,c"])) == ["a", "b", "c"]


def test_warns_when_a_base_model_task_gets_a_chat_template(caplog):
    with caplog.at_level(logging.WARNING, logger="evalpack"):
        check(["--tasks", "math500_minerva_base", "--apply_chat_template"])
    assert "math500_minerva_base are base-model tasks" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="evalpack"):
        check(["--tasks", "math500_minerva_base"])
    assert caplog.text == ""


def test_help_names_every_command_with_examples():
    top = evalpack("--help")
    assert top.returncode == 0 and top.stdout.startswith("usage: evalpack")
    for command in ("run", "ls", "validate", "suite", "leaderboard", "rescore", "report"):
        assert f"\n    {command}" in top.stdout
    assert "examples:" in top.stdout


@pytest.mark.parametrize(
    "command",
    [
        ["suite"],
        ["suite", "list"],
        ["suite", "show"],
        ["leaderboard"],
        ["leaderboard", "run"],
        ["rescore"],
        ["report"],
        ["run"],
        ["ls"],
        ["validate"],
    ],
)
def test_every_subcommand_help_works(command, capsys):
    # in this process (the command's entry point, as `evalpack` calls it; the test above runs
    # the real command): an `evalpack` process spends ~1.5 s importing
    with pytest.raises(SystemExit) as exited:
        cli.main([*command, "--help"])
    done = capsys.readouterr()
    assert exited.value.code in (0, None), done.err
    assert done.out.startswith("usage: evalpack ")
    own = command[0] in ("suite", "leaderboard", "rescore", "report")
    if own and (len(command) == 1 or command == ["leaderboard", "run"]):
        assert done.out.startswith("usage: evalpack " + " ".join(command))
        assert "examples:\n  evalpack " + " ".join(command) in done.out


def test_suite_show_reports_missing_members(tmp_path):
    suites = tmp_path / "s.yaml"
    suites.write_text("mine: {tasks: [{task: gsm8k_nonexistent}, {task: aime24_reasoning}]}\n")
    done = evalpack("suite", "show", "mine", "--suites", str(suites))
    assert done.returncode == 0, done.stderr
    assert "--tasks aime24_reasoning --apply_chat_template" in done.stdout
    assert "# missing: gsm8k_nonexistent" in done.stdout
