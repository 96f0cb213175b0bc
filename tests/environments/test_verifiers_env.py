"""The pack's tasks as `verifiers` environments (`evalpack.environments`), against a real
OpenAI-compatible server: `transformers serve` with the tiny model of test_real_server.py,
behind a recording proxy on 127.0.0.1 that keeps every request body as it arrived.

For the same docs, the environment's rollouts and lm-eval's path (`evalpack-chat`) must send the
same messages, byte for byte, and the same sampling settings; the environment's rewards must
equal the per-sample metrics lm-eval logs for the same completions replayed through the
`replay` model; pass@k over rollouts must equal the pack's estimator. Skipped when verifiers
(the extra `evalpack[verifiers]`) or the server packages are missing. The same checks on real
model outputs, offline: test_verifiers_env_rewards.py.
"""

import asyncio
import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
import requests

from tests.conftest import replay_eval, requires_shared
from tests.environments.conftest import requires_verifiers

missing = [
    n
    for n in ("torch", "transformers", "fastapi", "uvicorn")
    if importlib.util.find_spec(n) is None
]
pytestmark = [requires_verifiers, requires_shared]
needs_server = pytest.mark.skipif(
    bool(missing),
    reason=f"{', '.join(missing)} not installed: the real server needs "
    "`pip install torch==2.13.0 'evalpack[serve-test]'`",
)

if not missing:
    from tests.models.test_real_server import evaluate, server  # noqa: F401  (its server fixture)

MAX_TOKENS = 12  # both paths are capped here, so the tiny CPU model answers quickly

# (task or group, subtasks, docs per subtask, --metadata)
CASES = {
    "minerva_math_tulu": (["minerva_math_tulu_algebra", "minerva_math_tulu_geometry"], 1, {}),
    "gsm8k_tulu": (None, 2, {}),
    "bbh_cot_v1_tulu": (
        [
            "bbh_cot_v1_tulu_boolean_expressions",
            "bbh_cot_v1_tulu_date_understanding",
            "bbh_cot_v1_tulu_web_of_lies",
        ],
        1,
        {},
    ),
    "codex_humaneval_tulu": (None, 2, {"repeats": 2}),
    "ifeval_tulu": (None, 2, {}),
}
PREFIXED = {"gsm8k_tulu", "codex_humaneval_tulu"}  # continue an assistant prefix


class Recorder(BaseHTTPRequestHandler):
    """Forwards a POST to the real server and keeps its JSON body."""

    upstream = ""
    bodies: ClassVar[list] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.bodies.append(json.loads(body))
        answer = requests.post(
            self.upstream + self.path,
            data=body,
            timeout=120,
            headers={"Content-Type": "application/json"},
        )
        self.send_response(answer.status_code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)

    def do_GET(self):
        answer = requests.get(self.upstream + self.path, timeout=30)
        self.send_response(answer.status_code)
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def proxy(server):
    handler = type("Recording", (Recorder,), {"upstream": server["root"], "bodies": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield {
            "root": f"http://127.0.0.1:{httpd.server_port}",
            "bodies": handler.bodies,
            "model": server["model"],
        }
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def run_rollouts(env, proxy, n=None):
    """Every row of `env` rolled out (`n` times, else the row's repeats) through verifiers'
    own episode machinery against the proxy; the finished episodes."""
    import verifiers.v1 as vf
    from verifiers.v1.clients import ModelContext

    ctx = ModelContext(
        client=vf.EvalClientConfig(
            base_url=f"{proxy['root']}/v1", api_key_var="EVALPACK_TEST_NO_KEY"
        ),
        model=proxy["model"],
        sampling=vf.SamplingConfig(max_tokens=MAX_TOKENS),
    )

    async def rollouts():
        async with env.serving():
            slots = [
                slot for task in env.taskset for slot in env.slots(task, n or task.data.repeats)
            ]
            return await asyncio.gather(*(env.run_slot(slot, ctx) for slot in slots))

    return asyncio.run(rollouts())


def sent(bodies):
    """What the comparisons look at: each body's messages (as JSON text) and sampling."""
    keys = ("temperature", "top_p", "stop", "continue_final_message", "add_generation_prompt")
    return sorted(
        json.dumps([b["messages"], {k: b.get(k) for k in keys}], ensure_ascii=False) for b in bodies
    )


@needs_server
@pytest.mark.parametrize("name", list(CASES))
def test_the_environment_sends_what_lm_eval_sends_and_rewards_as_it_scores(
    name, proxy, env_mirror, tmp_path
):
    from evalpack.environments import scoring
    from evalpack.environments.prefix_check import PrefixRefused
    from evalpack.environments.taskset import completion, load_environment
    from evalpack.models.served import ServedRequestError

    subtasks, limit, metadata = CASES[name]
    names = subtasks or [name]
    proxy["bodies"].clear()
    args = {
        "base_url": f"{proxy['root']}/v1/chat/completions",
        "model": proxy["model"],
        "max_model_len": MAX_TOKENS,
        "seed": 1,
        "retry_delay": 0.05,
    }
    if name in PREFIXED:  # transformers serve cannot continue a prefix: lm-eval's path stops
        with pytest.raises(ServedRequestError, match="refused continue_final_message"):
            evaluate(
                "evalpack-chat", args, names, metadata, limit=limit, confirm_run_unsafe_code=True
            )
    else:
        evaluate("evalpack-chat", args, names, metadata, limit=limit)
    lm_eval_sent = sent(proxy["bodies"])
    proxy["bodies"].clear()

    env = load_environment(name, subtasks=subtasks, limit=limit, metadata=metadata)
    if name in PREFIXED:  # refused before any rollout, in one line (prefix_check)
        with pytest.raises(PrefixRefused, match="refuses continue_final_message"):
            run_rollouts(env, proxy)
        # nothing but the one question (asked once per process and server) was sent
        assert all(b["max_tokens"] == 1 and b["continue_final_message"] for b in proxy["bodies"])
        return
    episodes = run_rollouts(env, proxy)
    assert lm_eval_sent and sent(proxy["bodies"]) == lm_eval_sent
    assert all(b["max_tokens"] == MAX_TOKENS for b in proxy["bodies"])
    traces = [trace for episode in episodes for trace in episode.traces]
    assert all(episode.ok for episode in episodes)

    # the rollouts' completions replayed through lm-eval: its per-sample primary metric
    completions = tmp_path / "completions.jsonl"
    completions.write_text(
        "".join(
            json.dumps(
                {
                    "task": t.task.data.task,
                    "doc_id": t.task.data.doc_id,
                    "completion": completion(t),
                }
            )
            + "\n"
            for t in traces
        )
    )
    logged = replay_eval(
        names,
        {"completions": str(completions)},
        limit=limit,
        log_samples=True,
        metadata=metadata or None,
    )["samples"]
    for trace in traces:
        data = trace.task.data
        chosen = scoring.primary(_row(data), metadata or None)
        sample = next(
            s
            for s in logged[data.task]
            if s["doc_id"] == data.doc_id and s["filter"] == chosen.filter
        )
        expected = float(sample[chosen.metric])
        assert trace.rewards["primary_metric"].score == expected == trace.reward
        assert _value(trace.metrics[f"{chosen.metric},{chosen.filter}"]) == expected


def _value(metric):
    return getattr(metric, "score", getattr(metric, "value", metric))


def _row(data):
    return data.row() if hasattr(data, "row") else data


@needs_server
def test_vf_eval_runs_the_environment_and_the_summary_reads_its_run(proxy, env_mirror, tmp_path):
    """verifiers' own command on a group: each subtask's messages reach the server as the rows
    hold them, and the run's traces summarize per subtask with pass@k over the rollouts."""
    import subprocess
    import sys
    from pathlib import Path

    from evalpack.environments.rows import build_rows
    from evalpack.environments.summary import summarize_run

    subtasks = ["bbh_cot_v1_tulu_navigate", "bbh_cot_v1_tulu_web_of_lies"]
    proxy["bodies"].clear()
    command = [
        str(Path(sys.executable).parent / "vf-eval"),
        "evalpack",
        "--env.taskset.tasks",
        "bbh_cot_v1_tulu",
        "--env.taskset.subtasks",
        json.dumps(subtasks),
        "--env.taskset.limit",
        "1",
        "-m",
        proxy["model"],
        "--client.base-url",
        f"{proxy['root']}/v1",
        "--client.api-key-var",
        "EVALPACK_TEST_NO_KEY",
        "-r",
        "2",
        "--sampling.max-tokens",
        str(MAX_TOKENS),
        "--no-push",
        "--no-rich",
        "-o",
        str(tmp_path / "out"),
    ]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = build_rows("bbh_cot_v1_tulu", limit=1, subtasks=subtasks)
    assert sorted(json.dumps(b["messages"]) for b in proxy["bodies"]) == sorted(
        json.dumps(row.messages) for row in rows for _ in range(2)
    )
    (run,) = (tmp_path / "out").iterdir()
    summary = summarize_run(run)
    assert sorted(summary) == subtasks
    for result in summary.values():
        assert result["docs"] == 1 and result["rollouts_per_doc"] == 2
        assert {"reward", "pass@1", "pass@2", "exact_match,cot"} <= set(result)


def test_the_request_carries_the_task_settings_and_continues_its_prefix(env_mirror):
    """The chat-completions body of a rollout: the YAML's settings, as evalpack-chat sends them
    (greedy as temperature 0 with no top_p); an assistant prefix continued the vLLM way, or
    refused in one line for a server that cannot continue one."""
    from evalpack.environments.taskset import chat_request, load_environment

    (humaneval,) = [task.data for task in load_environment("codex_humaneval_tulu", limit=1).taskset]
    body = chat_request(humaneval, "m", "vllm")
    assert body["messages"][-1] == {
        "role": "assistant",
        "content": "Here is the completed function:\n\n```python\n",
    }
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.8, 0.95, 2048)
    assert body["stop"] == ["\nclass", "\nif", "\nprint", "\n#", "\n```", "\n```\n\n", "<|eot_id|>"]
    assert (body["continue_final_message"], body["add_generation_prompt"]) == (True, False)
    assert humaneval.repeats == 20 and humaneval.ks == [1, 10]
    assert chat_request(humaneval, "m", "sglang")["continue_final_message"] is True
    with pytest.raises(ValueError, match="needs a server that can"):
        chat_request(humaneval, "m", "openai")

    (gsm8k,) = [task.data for task in load_environment("gsm8k_tulu", limit=1).taskset]
    body = chat_request(gsm8k, "m", "vllm")
    assert (body["temperature"], body["max_tokens"], "top_p" in body) == (0.0, 512, False)
    assert body["stop"] == ["Question:", "</s>", "<|im_end|>"]
    assert len(body["messages"]) == 2 * 8 + 2  # 8 shots as turns, the question, "Answer:"
