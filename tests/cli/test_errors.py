"""Every error the pack can name is one line on the console, naming what was wrong and where;
the traceback only with --verbose or EVALPACK_TRACEBACK=1 (evalpack.cli.console)."""

import functools
import json
import socket

import lm_eval.tasks
import pytest

from evalpack.cli import cli
from tests.boards import evalpack

HINT = "(--verbose or EVALPACK_TRACEBACK=1 shows the traceback)"


def closed_port_url(path: str = "") -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"  # nothing listens there once the socket is closed


@pytest.fixture
def run(tmp_path, monkeypatch):
    """`evalpack <argv>` in this process; the line it exits with."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALPACK_TRACEBACK", raising=False)
    # lm-eval's own ~10,000 task YAML are indexed on every run: skipped here for speed (the
    # console test below runs the real thing)
    monkeypatch.setattr(
        lm_eval.tasks,
        "TaskManager",
        functools.partial(lm_eval.tasks.TaskManager, include_defaults=False),
    )

    def run_(*argv: str) -> str:
        with pytest.raises(SystemExit) as exit_:
            cli.main(list(argv))
        line = str(exit_.value.code)
        assert "\n" not in line and line.startswith("evalpack: error: ") and line.endswith(HINT)
        return line.removeprefix("evalpack: error: ").removesuffix(HINT).strip()

    return run_


@pytest.fixture
def problems(tmp_path):
    path = tmp_path / "problems.jsonl"
    path.write_text('{"question": "What is 6*7?", "answer": "42"}\n')
    return path


def aime(data_file, *args: str) -> list[str]:
    metadata = json.dumps({"data_file": str(data_file), "repeats": 1})
    return ["--tasks", "aime24_reasoning", "--apply_chat_template", "--metadata", metadata, *args]


def test_unknown_task_suggests_close_names(run):
    line = run(
        "--model", "replay", "--model_args", "from_doc=solution", "--tasks", "minerva_mat_tulu"
    )
    assert line.startswith("no task named 'minerva_mat_tulu' (did you mean minerva_math_tulu")


def test_misspelt_model_argument(run, problems):
    line = run("--model", "replay", "--model_args", "from_dock=answer", *aime(problems))
    assert line.startswith("bad --model_args for replay: from_dock= (did you mean from_doc=?)")


def test_from_doc_field_the_docs_lack_lists_their_fields(run, problems):
    line = run("--model", "replay", "--model_args", "from_doc=soluton", *aime(problems))
    assert line == (
        "replay from_doc=soluton: task aime24_reasoning doc 0 has no field 'soluton'; its "
        "fields: answer, doc_key, problem, question"
    )


def test_corrupt_replay_file_names_file_and_line(run, problems, tmp_path):
    replay = tmp_path / "completions.jsonl"
    replay.write_text('{"key": "a#0", "completion": "x"}\n{"key": "a#1", "compl\n')
    line = run("--model", "replay", "--model_args", f"completions={replay}", *aime(problems))
    assert line == f"{replay}, line 2: not valid JSON (Invalid control character at)"


def test_bad_data_file_row_names_file_and_line(run, tmp_path):
    data = tmp_path / "bad.jsonl"
    data.write_text('{"question": "q", "answer": "1"}\n[1, 2]\n')
    line = run("--model", "replay", "--model_args", "from_doc=answer", *aime(data))
    assert line == f"{data}, line 2: expected a JSON object"


def test_data_dir_pointing_nowhere(run, monkeypatch):
    monkeypatch.setenv("EVALPACK_DATA_DIR", "/nowhere")
    line = run(
        "--model",
        "replay",
        "--model_args",
        "from_doc=solution",
        "--tasks",
        "minerva_math_tulu_algebra",
        "--apply_chat_template",
    )
    assert line.startswith(
        "EVALPACK_DATA_DIR=/nowhere: no file for dataset "
        "'EleutherAI/hendrycks_math' config 'algebra' split 'test'"
    )


def test_unreachable_hub_fails_fast_naming_the_mirror(run, monkeypatch):
    monkeypatch.delenv("EVALPACK_DATA_DIR", raising=False)
    for var in (
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "HF_HUB_OFFLINE",
        "HF_DATASETS_OFFLINE",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", closed_port_url())
    line = run(
        "--model",
        "replay",
        "--model_args",
        "from_doc=solution",
        "--tasks",
        "minerva_math_tulu_algebra",
        "--apply_chat_template",
    )
    assert (
        "the Hugging Face hub cannot be reached; set EVALPACK_DATA_DIR=<mirror dir> "
        "holding EleutherAI__hendrycks_math/algebra/test.jsonl" in line
    )
    assert "evalpack rescore" in line


def test_dead_server(run, problems):
    url = closed_port_url("/v1/chat/completions")
    line = run(
        "--model",
        "evalpack-chat",
        "--model_args",
        f"base_url={url},model=m,max_retries=1,retry_delay=0.05",
        *aime(problems),
    )
    assert line.startswith(
        f"1 of 1 requests to {url} failed; first: task aime24_reasoning doc 0 repeat 0: "
    )
    assert "Connection refused" in line and "(2 attempts)" in line


def test_no_chat_template_names_the_backend_that_needs_none(run, problems):
    url = closed_port_url("/v1/completions")
    line = run(
        "--model",
        "evalpack-completions",
        "--model_args",
        f"base_url={url},model=m,tokenizer_backend=none",
        *aime(problems),
    )
    assert line.startswith(
        "evalpack-completions: --apply_chat_template needs the model's chat template"
    )
    assert "use --model evalpack-chat" in line


def test_console_shows_one_error_line_and_the_traceback_on_request():
    argv = ["--model", "replay", "--model_args", "from_doc=x", "--tasks", "minerva_mat_tulu"]
    quiet = evalpack(*argv)
    assert quiet.returncode == 1 and "Traceback" not in quiet.stderr
    errors = [line for line in quiet.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("evalpack: error: no task named")
    assert quiet.stderr.strip().splitlines()[-1] == errors[0]
    assert (
        "overrides existing task" not in quiet.stderr
    )  # aime24_reasoning/aime25_reasoning were not asked for
    loud = evalpack(*argv, EVALPACK_TRACEBACK="1")
    assert "Traceback (most recent call last)" in loud.stderr
    assert loud.stderr.strip().splitlines()[-1] == "ValueError: Tasks not found: minerva_mat_tulu"


@pytest.mark.parametrize(
    "argv,env,verbose,rest",
    [
        (["--verbose", "--tasks", "t"], {}, True, ["--tasks", "t"]),
        (["--tasks", "t", "--", "--verbose"], {}, False, ["--tasks", "t", "--", "--verbose"]),
        (["--tasks", "t"], {"EVALPACK_TRACEBACK": "1"}, True, ["--tasks", "t"]),
        (["--tasks", "t"], {"EVALPACK_TRACEBACK": "0"}, False, ["--tasks", "t"]),
    ],
)
def test_the_traceback_switch(monkeypatch, argv, env, verbose, rest):
    from evalpack.cli import console

    monkeypatch.delenv("EVALPACK_TRACEBACK", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert console.wants_traceback(argv) == (verbose, rest)


def test_a_missing_backend_package_names_the_extra():
    from evalpack.cli import console

    missing = ModuleNotFoundError("No module named 'torch'", name="torch")
    assert console.error_line(missing) == (
        "No module named 'torch': this backend needs it; pip install -e '.[hf]' (CPU: torch "
        "from the CPU wheel index first; docs/getting_started.md)"
    )


def test_misspelt_served_model_argument(run, problems):
    # lm-eval's API models would drop it silently and fail later on a missing base_url
    line = run(
        "--model",
        "evalpack-chat",
        "--model_args",
        f"base_ur={closed_port_url('/v1/chat/completions')},model=m",
        *aime(problems),
    )
    assert line == "bad --model_args for evalpack-chat: base_ur= (did you mean base_url=?)"
