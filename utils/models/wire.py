"""What an OpenAI-compatible request carries, as the pack's served backends send it: public,
for the other layers that talk to the same servers (the leaderboard's probes, the `verifiers`
taskset)."""

from __future__ import annotations

import copy

OPENAI_MAX_STOPS = 4  # the most stop strings OpenAI's API takes (the rest are cut on our side)
SAMPLING_ONLY = ("top_p", "top_k", "min_p")  # dropped for greedy decoding
# The fields that make a server continue the last (assistant) message instead of answering it
CONTINUE_FIELDS = {
    "vllm": {"continue_final_message": True, "add_generation_prompt": False},
    "sglang": {"continue_final_message": True},
}


def sampling_options(gen_kwargs: dict, default_max_tokens: int) -> dict:
    """Generation settings in OpenAI terms (`max_tokens`, `temperature`, extras), reconciled:
    greedy (`do_sample: false`, or temperature 0) is temperature 0 with no sampling knobs."""
    options = copy.deepcopy(gen_kwargs)
    options.pop("until", None)
    do_sample = options.pop("do_sample", None)
    max_tokens = options.pop("max_tokens", options.pop("max_gen_toks", default_max_tokens))
    temperature = float(options.pop("temperature", 1.0 if do_sample else 0.0))
    if do_sample is False or temperature == 0:
        temperature = 0.0
        for knob in SAMPLING_ONLY:
            options.pop(knob, None)
    return {"max_tokens": int(max_tokens), "temperature": temperature, **options}


def stop_field(stops: list[str], limit: int | None = None) -> dict:
    """The `stop` field to send: none at all without stop strings (some servers fail on an
    empty list), at most `limit` of them where the server caps them (the rest are cut here)."""
    return {"stop": stops[:limit]} if stops else {}
