"""A plain `lm_eval --include_path tasks` run of the pack's tasks (the pack installed): its
stderr holds lm-eval's progress and one line per problem, as under `evalpack`. No repeated
"Custom kwargs" note, no "overrides existing task" (no task of the pack takes a built-in's
name), no traceback when the data is missing (`evalpack.lmeval.quiet`)."""

import os
import socket
import subprocess
import sys

from tests.conftest import REPO, TASKS_DIR

DEMO_DATA = REPO / "demo" / "data"  # the MATH sample the pack ships
# what would point the run at other data, or past the unreachable hub
UNSET = {"EVALPACK_DATA_DIR", "HF_ENDPOINT", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"}
UNSET |= {"HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"}


def lm_eval(tmp_path, *tasks: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in UNSET}
    return subprocess.run(
        [sys.executable, "-m", "lm_eval", "run", "--include_path", str(TASKS_DIR)]
        + ["--tasks", ",".join(tasks), "--model", "dummy", "--limit", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,  # not a git repository
        env={**clean, **env},
    )


def test_a_run_with_its_data_prints_no_warning_of_the_pack(tmp_path):
    # offline, as a user of a mirror is: lm-eval's dummy model asks the hub for a tokenizer,
    # which an unreachable hub answers only after a minute of retries
    done = lm_eval(
        tmp_path, "minerva_math_tulu", EVALPACK_DATA_DIR=str(DEMO_DATA), HF_HUB_OFFLINE="1"
    )
    assert done.returncode == 0, done.stderr
    assert "minerva_math_tulu_algebra" in done.stdout  # the results table
    for noise in ("Custom kwargs", "overrides existing task", "Traceback", "fatal:"):
        assert noise not in done.stderr


def test_a_run_without_its_data_ends_in_one_line(tmp_path):
    with socket.socket() as sock:  # a hub nobody answers for
        sock.bind(("127.0.0.1", 0))
        hub = f"http://127.0.0.1:{sock.getsockname()[1]}"
    done = lm_eval(tmp_path, "gsm8k_tulu", HF_ENDPOINT=hub)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "Custom kwargs" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: dataset 'openai/gsm8k' split 'test': the Hugging Face hub cannot be reached; set "
        "EVALPACK_DATA_DIR=<mirror dir> holding openai__gsm8k/main/test.jsonl (runs and "
        "`evalpack rescore` both read the datasets)"
    )
