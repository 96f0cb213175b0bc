"""The pack's tasks as `verifiers` (0.4, `verifiers.v1`) environments.

* `EvalpackTaskset` (id `evalpack`): one task or group (`tasks=`), one `EvalpackTask` per doc
  (per subtask of a group), each carrying the messages and sampling settings of `rows.Row`.
* `EvalpackHarness`: one chat completion per rollout, in-process, through the rollout's
  interception endpoint: the row's messages as they are, its temperature/top_p/max_tokens
  (greedy as temperature 0, as the pack's served backends send it; OLMES's "do not cut off"
  budgets as 32,768 tokens, `models.budget`), its stop strings, and for
  a trailing assistant message (gen_prefix: GSM8K's "Answer:", HumanEval's fence opener) vLLM's
  or SGLang's continuation fields (`server=`); a server that cannot continue one refuses.
* `EvalpackTask.primary_metric`: the reward, the task's primary per-sample metric from its own
  lm-eval filters and `process_results` (`scoring.score_samples`, concurrent rollouts scored
  together by `batching`); `sample_metrics` records every scalar metric of the sample.
* `EvalpackEnv`: the single-agent env with a local (subprocess) runtime by default: the harness
  runs no program, so no sandbox service is needed.
* `load_environment(task, **options)`: what prime-rl-style callers load.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import httpx
import verifiers.v1 as vf
from pydantic import Field
from verifiers.v1.runtimes import ProgramResult, SubprocessConfig
from verifiers.v1.types import content_text
from verifiers.v1.utils.loaders import load_environment as vf_load_environment
from verifiers.v1.utils.loaders import resolve_env_config

from ..core.text import cut_at_stops
from ..models import budget
from ..models.requests import continues_assistant
from ..models.wire import CONTINUE_FIELDS, OPENAI_MAX_STOPS, sampling_options, stop_field
from . import batching, prefix_check, scoring
from . import rows as rows_module

DEFAULT_MAX_TOKENS = 256  # lm-eval's default max_gen_toks, for a task that sets none


class EvalpackTaskData(vf.TaskData):
    """A row on the wire: the doc, its subtask, the exact messages (JSON) and settings."""

    task: str
    group: str
    doc_id: int
    doc_key: str
    doc: dict
    messages_json: str  # the lm-eval path's message list, rendered as the replay model does
    gen_kwargs: dict
    repeats: int = 1
    stops: list[str] = Field(default_factory=list)
    ks: list[int] = Field(default_factory=list)  # the k of a primary pass@k (summary reports it)
    metadata: dict = Field(default_factory=dict)  # the run's --metadata (repeats, timeout)

    def row(self) -> rows_module.Row:
        return rows_module.Row(
            task=self.task,
            group=self.group,
            doc_id=self.doc_id,
            doc_key=self.doc_key,
            doc=self.doc,
            messages=json.loads(self.messages_json),
            gen_kwargs=self.gen_kwargs,
            repeats=self.repeats,
            stops=self.stops,
        )


def completion(trace) -> str:
    """The rollout's completion as the server sent it (`trace.last_reply` strips it, which
    would change a HumanEval continuation's first indent)."""
    replies = trace.assistant_messages
    content = replies[-1].content if replies else ""
    return content if isinstance(content, str) else content_text(content)


class EvalpackTask(vf.Task[EvalpackTaskData, vf.State, vf.TaskConfig]):
    @property
    def key(self) -> str:
        return f"{self.data.task}/{self.data.doc_key}"

    def __init__(self, data: EvalpackTaskData, config: vf.TaskConfig | None = None) -> None:
        super().__init__(data, config)
        self._scores: dict[str, dict] = {}  # trace id -> the sample's scores (metric, then reward)

    async def _scores_of(self, task: EvalpackTaskData, trace) -> dict:
        if trace.id not in self._scores:
            self._scores[trace.id] = await batching.batcher().score(
                task.row(), completion(trace), task.metadata or None
            )
        return self._scores[trace.id]

    @vf.metric
    async def sample_metrics(self, task: EvalpackTaskData, trace) -> dict[str, float]:
        """Every scalar metric the task's scorers give this sample, keyed `metric,filter`."""
        return scoring.numeric(await self._scores_of(task, trace))

    @vf.reward
    async def primary_metric(self, task: EvalpackTaskData, trace) -> float:
        """The task's primary metric of this one sample (pass_at_1 for a pass@k task)."""
        scores = await self._scores_of(task, trace)
        self._scores.pop(trace.id, None)
        return scoring.reward(task.row(), scores, task.metadata or None)


class EvalpackTasksetConfig(vf.TasksetConfig):
    tasks: str = ""
    """The pack's task or group (`evalpack ls tasks`), e.g. gsm8k_tulu or bbh_cot_v1_tulu."""
    subtasks: list[str] | None = None
    """Only these subtasks of a group."""
    limit: int | None = None
    """The first `limit` docs of each subtask (lm-eval's --limit)."""
    metadata: dict = Field(default_factory=dict)
    """lm-eval's --metadata for the task (`repeats`, `timeout`, `data_file`)."""


class EvalpackTaskset(vf.Taskset[EvalpackTask, EvalpackTasksetConfig]):
    def load(self):
        if not self.config.tasks:
            raise ValueError(
                "evalpack needs a task: --env.taskset.tasks gsm8k_tulu "
                "(or load_environment(task='gsm8k_tulu'))"
            )
        metadata = self.config.metadata or None
        checked: set[str] = set()
        for row in rows_module.build_rows(
            self.config.tasks, metadata, self.config.limit, self.config.subtasks
        ):
            if row.task not in checked:
                scoring.check_rewardable(row, metadata)
                checked.add(row.task)
            data = EvalpackTaskData(
                id=f"{row.task}/{row.doc_key}",
                name=row.task,
                prompt=row.messages,
                task=row.task,
                group=row.group,
                doc_id=row.doc_id,
                doc_key=row.doc_key,
                doc=row.doc,
                messages_json=rows_module.render_messages(row.messages),
                gen_kwargs=row.gen_kwargs,
                repeats=row.repeats,
                stops=row.stops,
                ks=scoring.declared_ks(row, metadata),
                metadata=self.config.metadata,
            )
            yield EvalpackTask(data, self.config.task)


class EvalpackHarnessConfig(vf.HarnessConfig):
    server: Literal["vllm", "sglang", "openai"] = "vllm"
    """How an assistant prefix is continued: vllm, sglang, or openai (cannot: refused)."""
    request_timeout: float = 600.0
    """Seconds one chat completion may take."""


def chat_request(data: EvalpackTaskData, model: str, server: str) -> dict:
    """The chat-completions body for one rollout of a row, as `evalpack-chat` builds it (less
    the per-repeat seed: rollouts are independent samples)."""
    messages = json.loads(data.messages_json)
    options = sampling_options(data.gen_kwargs, DEFAULT_MAX_TOKENS)
    # OLMES's "do not cut off" budgets: the harness does not know the model's context
    options["max_tokens"] = budget.resolve(options["max_tokens"], None, None, None)[0]
    body = {
        "model": model,
        "messages": messages,
        **options,
        **stop_field(data.stops, OPENAI_MAX_STOPS if server == "openai" else None),
    }
    if continues_assistant(messages):
        if server not in CONTINUE_FIELDS:
            raise ValueError(
                f"{data.task} doc {data.doc_id}: the prompt ends with an assistant "
                f"prefix, which server={server} cannot continue; {data.group} "
                "needs a server that can (vllm, sglang)"
            )
        body.update(CONTINUE_FIELDS[server])
    return body


def failure_line(data: EvalpackTaskData, body: dict, response: httpx.Response) -> str:
    """One line for a refused or failed completion; a refused continuation says what to use."""
    line = f"{data.task} doc {data.doc_id}: HTTP {response.status_code}: {response.text[:1000]}"
    refused = [key for key in body if key in CONTINUE_FIELDS["vllm"] and key in response.text]
    if response.status_code in (400, 422) and refused:
        line += (
            f" [the server refused {', '.join(refused)}: {data.group} continues an "
            "assistant prefix and needs a server that can (vLLM, SGLang; harness "
            "server=vllm or sglang)]"
        )
    return line


class EvalpackHarness(vf.Harness[EvalpackHarnessConfig]):
    """One chat completion through the rollout's endpoint, in-process (no program runs)."""

    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx,
        trace,
        runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
        tool_interception_url: str | None = None,
    ) -> ProgramResult:
        body = chat_request(data, ctx.model, self.config.server)
        async with httpx.AsyncClient(timeout=self.config.request_timeout) as client:
            response = await client.post(
                f"{endpoint.rstrip('/')}/chat/completions",
                json=body,
                headers={"Authorization": f"Bearer {secret}"},
            )
        if response.status_code != 200:
            return ProgramResult(1, "", failure_line(data, body, response))
        answer = response.json()["choices"][0]["message"]["content"] or ""
        return ProgramResult(0, cut_at_stops(answer, data.stops), "")


class EvalpackEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(runtime=SubprocessConfig())
    """The one seat; its runtime is local: the harness runs no program."""


class EvalpackEnv(vf.Env[EvalpackEnvConfig]):
    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        await agents.agent.run(task)

    async def run_slot(self, slot, ctx, *args, **kwargs):
        """A rollout, after the one check that its server can continue the row's assistant
        prefix, if it has one (`prefix_check`: else the run stops in one line)."""
        harness = self.config.agent.harness or EvalpackHarnessConfig()  # None: the default
        await prefix_check.check(slot.task.data, ctx, harness.server)
        return await super().run_slot(slot, ctx, *args, **kwargs)


def load_environment(
    task: str,
    *,
    subtasks: list[str] | None = None,
    limit: int | None = None,
    metadata: dict | None = None,
    server: str = "vllm",
    **env_options: Any,
) -> vf.Env:
    """The environment for one of the pack's tasks or groups, as prime-rl loads environments:
    `load_environment(task="bbh_cot_v1_tulu", limit=10)`. `env_options` are further
    `EnvConfig` fields (e.g. `timeout`, `retries`)."""
    taskset = {
        "id": "evalpack",
        "tasks": task,
        "subtasks": subtasks,
        "limit": limit,
        "metadata": metadata or {},
    }
    agent = {"runtime": {"type": "subprocess"}, "harness": {"id": "evalpack", "server": server}}
    config = resolve_env_config({"taskset": taskset, "agent": agent, **env_options})
    return vf_load_environment(config)
