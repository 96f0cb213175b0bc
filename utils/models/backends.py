"""The served-model backends, registered with lm-eval:

* `evalpack-chat`: an OpenAI-compatible `/v1/chat/completions` endpoint (vLLM, SGLang, OpenAI).
* `evalpack-completions`: `/v1/completions`; chat prompts are rendered locally with the model's
  chat template (`chat_template_file=`, or the Hugging Face tokenizer's own).
* `evalpack-sglang`: SGLang's native `/generate` (`{"text": ..., "sampling_params": {...}}`).
* `answer-server`: any server that takes `{"dataset", "prompt", "sample_id", ...}` and answers
  JSON with the completion under `answer_field` (default `answer`).

What they share (seeds, retries, the completion cache) is `served.ServedGeneration`.
"""

from __future__ import annotations

import json

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model
from lm_eval.models.api_models import JsonChatStr
from lm_eval.models.openai_completions import LocalChatCompletion, LocalCompletionsAPI

from .arguments import check_model_args
from .chat_render import LocalTemplate
from .http import field
from .loglikelihood import CompletionsLoglikelihood, NoLoglikelihood
from .requests import GenerationOnly, continues_assistant, stop_strings
from .served import Job, ServedGeneration
from .wire import CONTINUE_FIELDS, OPENAI_MAX_STOPS, sampling_options, stop_field


class _TemplateAPIServing(ServedGeneration):
    """Shared by the lm-eval subclasses: settings lm-eval's TemplateAPI does not take."""

    def _init_template_serving(
        self, seed, retry_delay, request_interval, timeout, max_model_len=None
    ) -> None:
        # lm-eval keeps whole seconds of `timeout`; keep the value as given
        self._init_serving(
            url=self.base_url,
            seed=seed,
            num_concurrent=self._concurrent,
            max_retries=self.max_retries,
            retry_delay=retry_delay,
            request_interval=request_interval,
            timeout=timeout,
            max_model_len=max_model_len,
        )

    def request_headers(self) -> dict:
        return self.header

    def options(self, job: Job, prompt_tokens: int | None = None) -> dict:
        return self.capped(sampling_options(job.gen_kwargs, self._max_gen_toks), prompt_tokens)


@register_model("evalpack-chat")
class ServedChat(NoLoglikelihood, _TemplateAPIServing, LocalChatCompletion):
    """OpenAI-compatible chat completions; `server=vllm|sglang|openai` picks how an assistant
    prefix is continued (OpenAI cannot) and whether stops are capped at OpenAI's 4."""

    backend_name = "evalpack-chat"

    def __init__(
        self,
        base_url=None,
        server: str = "vllm",
        seed=None,
        retry_delay=1.0,
        request_interval=0.0,
        timeout=300,
        max_model_len=None,
        **kwargs,
    ) -> None:
        if server not in ("vllm", "sglang", "openai"):
            raise ValueError(
                f"evalpack-chat: server must be vllm, sglang or openai, not {server!r}"
            )
        check_model_args(self, kwargs)  # lm-eval's API models take any keyword silently
        super().__init__(base_url=base_url, timeout=timeout, **kwargs)
        self.server = server
        self._init_template_serving(seed, retry_delay, request_interval, timeout, max_model_len)

    def build_payload(self, job: Job) -> dict:
        if not isinstance(job.context, JsonChatStr):
            raise TypeError("evalpack-chat sends chat messages: run with --apply_chat_template")
        messages = json.loads(job.context.prompt)
        stops = stop_strings(job.gen_kwargs)
        payload = {
            "model": self.model,
            "messages": messages,
            **self.options(job),
            **stop_field(stops, OPENAI_MAX_STOPS if self.server == "openai" else None),
            "seed": job.seed,
        }
        if continues_assistant(messages):
            if self.server not in CONTINUE_FIELDS:
                raise ValueError(
                    f"{job.label}: the prompt ends with an assistant prefix, which "
                    f"server={self.server} cannot continue; use a server that can "
                    "(vllm, sglang) or evalpack-completions"
                )
            payload.update(CONTINUE_FIELDS[self.server])
        return payload

    def parse_answer(self, body) -> str:
        return field(body, "choices", 0, "message", "content")


@register_model("evalpack-completions")
class ServedCompletions(
    CompletionsLoglikelihood, LocalTemplate, _TemplateAPIServing, LocalCompletionsAPI
):
    """OpenAI-compatible text completions; chat prompts rendered locally; log-likelihoods from
    echoed prompt log-probabilities (`evalpack.models.loglikelihood`)."""

    backend_name = "evalpack-completions"

    def __init__(
        self,
        base_url=None,
        chat_template_file=None,
        seed=None,
        retry_delay=1.0,
        request_interval=0.0,
        timeout=300,
        max_model_len=None,
        **kwargs,
    ) -> None:
        check_model_args(self, kwargs)  # lm-eval's API models take any keyword silently
        super().__init__(base_url=base_url, timeout=timeout, **kwargs)
        self._init_template(chat_template_file)
        self._init_template_serving(seed, retry_delay, request_interval, timeout, max_model_len)

    def build_payload(self, job: Job) -> dict:
        prompt = self.prompt_text(job)
        return {
            "model": self.model,
            "prompt": prompt,
            **self.options(job, self.count(prompt)),
            **stop_field(stop_strings(job.gen_kwargs)),
            "seed": job.seed,
        }

    def count(self, prompt: str) -> int | None:
        """The prompt's length in tokens, where a tokenizer is at hand (for the context cap)."""
        return len(self.tok_encode(prompt)) if self.max_model_len and self.tokenizer else None

    def parse_answer(self, body) -> str:
        return field(body, "choices", 0, "text")


@register_model("evalpack-sglang")
class ServedSGLang(GenerationOnly, ServedCompletions):
    """SGLang's native `/generate`; generation only."""

    backend_name = "evalpack-sglang"

    def build_payload(self, job: Job) -> dict:
        options = self.options(job)
        params = {
            "max_new_tokens": options.pop("max_tokens"),
            **options,
            "stop": stop_strings(job.gen_kwargs),
            "sampling_seed": job.seed,
        }
        return {"text": self.prompt_text(job), "sampling_params": params}

    def parse_answer(self, body) -> str:
        return field(body, "text")


@register_model("answer-server")
class AnswerServer(GenerationOnly, ServedGeneration, LM):
    """POSTs `{"dataset", "prompt", "sample_id", **extra}` and reads the answer from the
    response's `answer_field`. Model args it does not know become the extra fields; with
    --apply_chat_template, `prompt` is the message list."""

    def __init__(
        self,
        base_url=None,
        answer_field: str = "answer",
        seed=None,
        num_concurrent=1,
        max_retries=3,
        retry_delay=1.0,
        request_interval=0.0,
        timeout=300,
        batch_size=None,
        max_batch_size=None,
        device=None,
        **extra_fields,
    ) -> None:
        super().__init__()
        self._init_serving(
            url=base_url,
            seed=seed,
            num_concurrent=num_concurrent,
            max_retries=max_retries,
            retry_delay=retry_delay,
            request_interval=request_interval,
            timeout=timeout,
        )
        self.answer_field = answer_field
        self.extra_fields = extra_fields

    backend_name = "answer-server"
    takes_any_model_args = True  # unknown ones become extra payload fields

    @property
    def tokenizer_name(self) -> str:
        return f"answer-server:{self.url}"

    def chat_template(self, chat_template: bool | str = False) -> str:
        return "answer-server-json-messages"

    def apply_chat_template(self, chat_history, add_generation_prompt: bool = True):
        return JsonChatStr(json.dumps(chat_history, ensure_ascii=False))

    def build_payload(self, job: Job) -> dict:
        prompt = job.context
        if isinstance(prompt, JsonChatStr):
            prompt = json.loads(prompt.prompt)
        sample_id = f"{job.request.task_name}/{job.request.doc_id}/{job.repeat}"
        return {
            "dataset": job.request.task_name,
            "prompt": prompt,
            "sample_id": sample_id,
            **self.extra_fields,
        }

    def parse_answer(self, body) -> str:
        return field(body, self.answer_field)
