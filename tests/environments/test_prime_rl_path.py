"""prime-rl's way in, as its orchestrator takes it: the README's TOML -> verifiers'
`resolve_env_field` (what prime-rl's `EnvConfig` validator calls) -> `vf.load_taskset` -> the
rows -> `vf.load_environment` and a rollout against a served model -> a reward. A change in the
taskset's config shape fails here. And `vf-eval` on a task that continues an assistant prefix,
against a server that cannot: refused before any rollout, in one line. On the MATH sample the
pack ships and a stub server on 127.0.0.1: no ../shared needed."""

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.environments.conftest import requires_verifiers
from tests.models.http_stub import Stub

pytestmark = requires_verifiers

DEMO_DATA = REPO / "demo" / "data"


def readme_sources() -> list[dict]:
    """The eval sources of the README's prime-rl TOML block."""
    import tomllib  # Python 3.11, as verifiers

    (block,) = re.findall(r"```toml\n(.*?)```", (REPO / "README.md").read_text(), re.DOTALL)
    return tomllib.loads(block)["orchestrator"]["eval"]["source"]


@pytest.fixture
def stub():
    server = Stub().start()
    yield server
    server.stop()


def test_prime_rls_config_loads_the_rows_and_rewards_a_rollout(monkeypatch, stub):
    import verifiers.v1 as vf

    monkeypatch.setenv("EVALPACK_DATA_DIR", str(DEMO_DATA))
    (source,) = readme_sources()
    source["env"]["taskset"]["limit"] = 1  # the shipped sample: a doc or two per subject
    env_config = vf.resolve_env_field({"env": source["env"]})["env"]
    assert env_config.taskset.tasks == "minerva_math_tulu"
    # the orchestrator's side: the rows
    tasks = list(vf.load_taskset(env_config.taskset))
    assert len(tasks) == 7  # one per MATH subject
    algebra = next(t for t in tasks if t.data.task == "minerva_math_tulu_algebra")
    assert algebra.data.doc["problem"] in json.loads(algebra.data.messages_json)[-1]["content"]
    # the env server's side: a rollout of that row, the model answering with the solution
    stub.reply = lambda payload: algebra.data.doc["solution"]
    env = vf.load_environment(env_config)
    from verifiers.v1.clients import ModelContext

    ctx = ModelContext(
        client=vf.EvalClientConfig(base_url=stub.url("/v1"), api_key_var="EVALPACK_TEST_NO_KEY"),
        model="m",
    )

    async def rollout():
        async with env.serving():
            (slot,) = env.slots(algebra, 1)
            return await env.run_slot(slot, ctx)

    episode = asyncio.run(rollout())
    assert episode.ok
    (trace,) = episode.traces
    assert trace.reward == 1.0  # exact_match_flex of the reference solution
    (body,) = stub.payloads("/v1/chat/completions")
    assert body["messages"] == json.loads(algebra.data.messages_json)


def test_a_failed_rollout_is_counted_as_errored_never_scored(monkeypatch, stub, tmp_path):
    import verifiers.v1 as vf
    from verifiers.v1.clients import ModelContext
    from verifiers.v1.utils.trace_store import write_episode

    from evalpack.environments.summary import summarize_run
    from evalpack.environments.taskset import load_environment

    monkeypatch.setenv("EVALPACK_DATA_DIR", str(DEMO_DATA))
    stub.fault_for = lambda payload: "400"  # a client error: not retried
    env = load_environment("minerva_math_tulu", subtasks=["minerva_math_tulu_algebra"], limit=1)
    ctx = ModelContext(
        client=vf.EvalClientConfig(base_url=stub.url("/v1"), api_key_var="EVALPACK_TEST_NO_KEY"),
        model="m",
    )

    async def rollouts():
        async with env.serving():
            slots = [slot for task in env.taskset for slot in env.slots(task, 2)]
            return await asyncio.gather(*(env.run_slot(slot, ctx) for slot in slots))

    episodes = asyncio.run(rollouts())
    assert not any(episode.ok for episode in episodes)
    run = tmp_path / "run"  # as a vf-eval run stores them
    run.mkdir()
    for episode in episodes:
        write_episode(run, episode)
    assert summarize_run(run) == {"minerva_math_tulu_algebra": {"errored": 2.0}}


def gsm8k_mirror(root: Path) -> Path:
    """One GSM8K test row (its few-shot examples are the pack's own)."""
    folder = root / "openai__gsm8k" / "main"
    folder.mkdir(parents=True)
    row = {"question": "Tom has 2 apples and buys 3 more. How many?", "answer": "2+3=5\n#### 5"}
    (folder / "test.jsonl").write_text(json.dumps(row) + "\n")
    return root


def test_vf_eval_refuses_up_front_a_server_that_cannot_continue_a_prefix(stub, tmp_path):
    stub.refuse = {"continue_final_message"}  # as transformers serve and OpenAI answer
    command = [str(Path(sys.executable).parent / "vf-eval"), "evalpack"]
    command += ["--env.taskset.tasks", "gsm8k_tulu", "--env.taskset.limit", "1", "-r", "2"]
    command += ["-m", "m", "--client.base-url", stub.url("/v1")]
    command += ["--client.api-key-var", "EVALPACK_TEST_NO_KEY", "--no-push", "--no-rich"]
    command += ["-o", str(tmp_path / "out")]
    env = {"EVALPACK_DATA_DIR": str(gsm8k_mirror(tmp_path / "mirror")), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        command, check=False, capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 1, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "error: evalpack's gsm8k_tulu continues an assistant prefix, which the server cannot: "
        f"{stub.url('/v1/chat/completions')} refuses continue_final_message (HTTP 422: "
    )
    assert last.endswith(
        "serve the model with vLLM or SGLang (--env.agent.harness.server "
        "vllm or sglang), or use the lm-eval path's evalpack-completions"
    )
    assert "Traceback" not in done.stderr
    assert len(stub.payloads()) == 1  # the one question, no rollout
