"""Chat templates rendered here, as Hugging Face renders them, for the completion backends."""

from __future__ import annotations

import json

from jinja2.sandbox import ImmutableSandboxedEnvironment
from lm_eval.models.api_models import JsonChatStr

from .requests import continues_assistant


def _template_error(message: str):
    raise ValueError(f"chat template: {message}")


def render_chat(
    template: str, messages: list[dict], bos_token: str = "", eos_token: str = ""
) -> str:
    """`messages` rendered with a Jinja chat template, as Hugging Face renders them; a trailing
    assistant message is left open (the prompt ends with its text) so the model continues it."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _template_error
    continuing = continues_assistant(messages)
    text = env.from_string(template).render(
        messages=messages,
        add_generation_prompt=not continuing,
        bos_token=bos_token,
        eos_token=eos_token,
    )
    prefix = messages[-1]["content"].strip() if continuing else ""
    if not prefix:
        return text
    start = text.rfind(prefix)
    if start == -1:
        raise ValueError("chat template dropped the final assistant message; cannot continue it")
    # as transformers' continue_final_message: the prefix's trailing whitespace (HumanEval's
    # fence opener ends in a newline) stays where the template kept it
    whole = messages[-1]["content"].lstrip()
    if text.startswith(whole, start):
        return text[: start + len(whole)]
    return text[: start + len(prefix)]


class LocalTemplate:
    """Chat prompts rendered here, with `chat_template_file=` or the tokenizer's template."""

    def _init_template(self, chat_template_file: str | None) -> None:
        self.template = None
        if chat_template_file:
            with open(chat_template_file, encoding="utf-8") as fh:
                self.template = fh.read()
        elif getattr(self.tokenizer, "chat_template", None):
            self.template = self.tokenizer.chat_template

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        return self.template or ""

    def apply_chat_template(self, chat_history, add_generation_prompt: bool = True):
        # rendered per request in `prompt_text`, where a missing template is a clear error
        return JsonChatStr(json.dumps(chat_history, ensure_ascii=False))

    def prompt_text(self, job) -> str:
        if not isinstance(job.context, JsonChatStr):
            return job.context
        if self.template is None:
            name = getattr(self, "backend_name", "evalpack-completions")
            raise ValueError(
                f"{name}: --apply_chat_template needs the model's chat template, "
                "and the tokenizer has none: give chat_template_file=<file.jinja> "
                "or tokenizer=<one with a template>, or use --model evalpack-chat "
                "(the server applies its own template)"
            )
        return render_chat(
            self.template,
            json.loads(job.context.prompt),
            bos_token=getattr(self.tokenizer, "bos_token", None) or "",
            eos_token=getattr(self.tokenizer, "eos_token", None) or "",
        )
