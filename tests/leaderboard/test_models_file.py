"""`models.yaml` checked before anything runs: a served model's misspelt or misplaced
arguments, a checkpoint's own generation settings (`gen_kwargs`), each one line with "did you
mean" and where things go; and those settings reaching the checkpoint's pairs."""

import json
from pathlib import Path

import pytest

from evalpack.cli import cli
from evalpack.leaderboard import checkpoints as models_file
from evalpack.leaderboard.executors import Unit, unit_spec

CHAT = {
    "model": "evalpack-chat",
    "model_args": {"base_url": "http://127.0.0.1:8000/v1/chat/completions", "model": "sft"},
}


def problems(tmp_path: Path, *checkpoints: dict) -> list[str]:
    models = tmp_path / "models.yaml"
    models.write_text(json.dumps({"checkpoints": list(checkpoints)}))
    with pytest.raises(models_file.CheckpointsError) as error:
        models_file.load_checkpoints(str(models))
    return [line.split(": ", 1)[1] for line in error.value.problems]


def test_served_model_args_are_checked_with_did_you_mean(tmp_path):
    typo = {**CHAT, "name": "typo", "model_args": {"base_ur": "http://x/v1", "model": "sft"}}
    (line,) = problems(tmp_path, typo)
    assert line.startswith(
        "model 'evalpack-chat' takes no model_args 'base_ur' (did you mean 'base_url'?); it takes: "
    )
    assert "base_url" in line.split("it takes: ")[1].split(", ")


def test_generation_settings_are_told_where_they_go(tmp_path):
    in_args = {**CHAT, "name": "a", "model_args": {**CHAT["model_args"], "temperature": 0.6}}
    on_top = {**CHAT, "name": "b", "temperature": 0.6}
    first, second = problems(tmp_path, in_args, on_top)
    where = "generation settings go under the checkpoint's gen_kwargs: {temperature: 0.6, ...}"
    assert "takes no model_args 'temperature'" in first and where in first
    assert second.startswith("unknown key 'temperature'; " + where)


def test_replay_argument_typo_gets_did_you_mean(tmp_path):
    lines = problems(
        tmp_path, {"name": "r", "model": "replay", "model_args": {"from_dco": "solution"}}
    )
    assert any(
        "takes no model_args 'from_dco' (did you mean 'from_doc'?)" in line for line in lines
    )


def test_gen_kwargs_are_checked(tmp_path):
    lines = problems(
        tmp_path,
        {**CHAT, "name": "g", "gen_kwargs": {"temprature": 0.6, "top_p": "high", "until": "\n\n"}},
    )
    assert lines == [
        (
            "gen_kwargs: unknown setting 'temprature' (did you mean 'temperature'?); known: "
            "temperature, top_p, top_k, min_p, do_sample, max_gen_toks, until, repetition_penalty, "
            "presence_penalty, frequency_penalty, seed"
        ),
        "gen_kwargs: top_p must be a number, not 'high'",
        "gen_kwargs: until must be a list of strings",
    ]


def test_a_checkpoints_gen_kwargs_reach_its_pairs_over_the_runs(tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text(
        json.dumps(
            {
                "checkpoints": [
                    {**CHAT, "name": "t06", "gen_kwargs": {"temperature": 0.6, "top_p": 0.95}}
                ]
            }
        )
    )
    (ckpt,) = models_file.load_checkpoints(str(models))
    entry = {"task": "gsm8k_tulu", "chat": True}
    spec = unit_spec(
        Unit(ckpt, [entry]), tmp_path / "board", ["--gen_kwargs", "temperature=1.0,max_gen_toks=64"]
    )
    args = cli.EvalpackCLI().parse(spec["pairs"][0]["argv"])
    # the run's max_gen_toks stays, the checkpoint's temperature wins
    assert args.gen_kwargs == {"temperature": 0.6, "max_gen_toks": 64, "top_p": 0.95}


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text("checkpoints:\n  - name: a\n    model: [replay\n")
    with pytest.raises(models_file.CheckpointsError) as error:
        models_file.load_checkpoints(str(models))
    (line,) = error.value.problems
    assert line.startswith(f"{models}, line 4, column 1: not valid YAML: ")
    assert "<unicode string>" not in line


def test_a_mirror_one_level_too_high_suggests_the_folder_below(tmp_path, monkeypatch):
    from evalpack.core import data

    inner = tmp_path / "data" / "openai__gsm8k" / "main"
    inner.mkdir(parents=True)
    (inner / "test.jsonl").write_text('{"question": "q", "answer": "a"}\n')
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(tmp_path))
    with pytest.raises(
        data.DataError,
        match=(
            f"looked for {tmp_path}/openai__gsm8k/main/test.jsonl "
            rf"\(it is in {tmp_path}/data: set EVALPACK_DATA_DIR to that folder\)"
        ),
    ):
        data.load_split("openai/gsm8k", "main", "test")
