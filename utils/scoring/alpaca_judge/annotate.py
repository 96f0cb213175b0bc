"""AlpacaEval 2 judgements as OLMES makes them (`alpaca_eval_v2::tulu`): the `alpaca-eval`
package's own pairwise annotator `weighted_alpaca_eval_gpt4_turbo` (its prompt, its seeded
random order of the two outputs, its log-probability parser), with the requests sent through
a judge client (`evalpack.judges.client.JudgeClient`: `judge_all(payloads)`, `settings.model`)
instead of the package's OpenAI decoder.

As in OLMES: the reference outputs are the dataset rows (`instruction`, `output`,
`generator`, `dataset`), the model's outputs carry the row's `dataset` and the generator name
`EVAL_MODEL`, and both are merged on the instruction by the package's `annotate_head2head`.
"""

from __future__ import annotations

import math
import time

from alpaca_eval.annotators import PairwiseAnnotator, SinglePairwiseAnnotator
from alpaca_eval.utils import prompt_to_chatml

ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
# The judge model of each annotator OLMES uses. AlpacaEval 3 (`alpaca_eval_v3::olmo3:adapt`) is
# `weighted_alpaca_eval_gpt4.1`, which alpaca-eval 0.6.6 does not ship: at the commit OLMES pins
# (cd543a1) its config is the gpt4_turbo one (same prompt, parser, decoding) naming the model
# gpt-4.1-2025-04-14, so it is that config with that model (None: the config's own).
JUDGE_MODELS = {ANNOTATOR: None, "weighted_alpaca_eval_gpt4.1": "gpt-4.1-2025-04-14"}
MODEL_NAME = "EVAL_MODEL"
REFERENCE_FIELDS = ("instruction", "output", "generator", "dataset")
NO_PREFERENCE = "the judge answered, but with neither 'm' nor 'M' among its top log-probabilities"


def completion_payload(
    prompt: str, model_name: str, max_tokens: int, top_p: float = 1.0, **decoding
) -> dict:
    """The chat-completion request the package's OpenAI decoder sends for one annotator prompt:
    the ChatML prompt stripped and split into messages, the annotator config's decoding
    settings, and the decoder's default `top_p` of 1."""
    return {
        "model": model_name,
        "messages": prompt_to_chatml(prompt.strip()),
        "max_tokens": max_tokens,
        "top_p": top_p,
        **decoding,
    }


def price_per_token(model: str) -> float:
    """The package's price table (NaN, with its warning, for a model it does not know)."""
    from alpaca_eval.decoders.openai import _get_price_per_token

    return _get_price_per_token(model)


class ServedCompletions:
    """The annotator's `fn_completions`: its prompts judged through a JudgeClient. A failed
    request gives an empty completion, which the package's parser turns into no preference
    (as its own decoder does after its retries); `failures` keeps each failed prompt's error."""

    def __init__(self, client, default_model: str | None = None) -> None:
        self.client = client
        self.default_model = default_model
        self.failures: dict[str, str] = {}

    def __call__(self, prompts, model_name: str, **kwargs) -> dict:
        model = self.client.settings.model or self.default_model or model_name
        payloads = [completion_payload(p, model, **kwargs) for p in prompts]
        start = time.monotonic()
        judgements = self.client.judge_all(payloads)
        seconds = (time.monotonic() - start) / max(1, len(prompts))
        per_token = price_per_token(model) if prompts else math.nan
        for prompt, judgement in zip(prompts, judgements, strict=True):
            if judgement.error is not None:
                self.failures[prompt] = judgement.error
        choices = [j.choice or "" for j in judgements]
        return {
            "completions": [c["text"] if c else "" for c in choices],
            "completions_all": choices,
            "price_per_example": [c["total_tokens"] * per_token if c else 0.0 for c in choices],
            "time_per_example": [seconds] * len(prompts),
        }


def annotator_for(completions: ServedCompletions) -> PairwiseAnnotator:
    """The package's annotator for `ANNOTATOR`, every completion going to `completions`;
    no annotation cache of the package's (the JudgeClient has its own)."""

    class Single(SinglePairwiseAnnotator):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **{**kwargs, "fn_completions": completions})

    class Annotator(PairwiseAnnotator):
        SingleAnnotator = Single

    return Annotator(annotators_config=ANNOTATOR, caching_path=None)


def judge(docs: list[dict], outputs: list[str], client, annotator: str = ANNOTATOR) -> list[dict]:
    """One record per doc, judged as `annotator` (a key of JUDGE_MODELS) judges: the judge's
    preference (1 = reference better, 2 = model better, in between from the log-probabilities;
    None when there is no judgement, with the reason), the judge's top log-probabilities, the
    price, and the two output lengths."""
    references = [{k: doc[k] for k in REFERENCE_FIELDS} for doc in docs]
    model_outputs = [
        {
            "instruction": doc["instruction"],
            "output": output,
            "generator": MODEL_NAME,
            "dataset": doc["dataset"],
        }
        for doc, output in zip(docs, outputs, strict=True)
    ]
    completions = ServedCompletions(client, JUDGE_MODELS[annotator])
    annotations = annotator_for(completions).annotate_head2head(
        outputs_1=references, outputs_2=model_outputs, chunksize=None
    )
    if [a["instruction"] for a in annotations] != [d["instruction"] for d in docs]:
        raise ValueError(
            f"{len(docs)} docs gave {len(annotations)} annotations in another "
            "order: are two instructions identical? AlpacaEval merges on them"
        )
    return [
        _record(annotation, output, completions.failures)
        for annotation, output in zip(annotations, outputs, strict=True)
    ]


def _record(annotation: dict, output: str, failures: dict[str, str]) -> dict:
    preference = annotation.get("preference")
    judged = preference is not None and not math.isnan(preference)
    raw = annotation.get("preference_raw_completion")
    price = annotation.get("preference_price_per_example")
    return {
        "preference": float(preference) if judged else None,
        "judge_top_logprobs": _top_logprobs(raw),
        "price": float(price) if isinstance(price, (int, float)) and not math.isnan(price) else 0.0,
        "error": None if judged else _failure(annotation["instruction"], output, failures),
        "output_length": len(output),
        "reference_length": len(annotation["output_1"]),
    }


def _top_logprobs(raw) -> dict | None:
    """The judge's top tokens and log-probabilities, as it answered: "m" names the output it
    was shown first, which the annotator picks at random (seeded by the instruction)."""
    try:
        top = raw["logprobs"]["content"][0]["top_logprobs"]
    except (KeyError, IndexError, TypeError):
        return None
    return {t["token"]: t["logprob"] for t in top}


def _failure(instruction: str, output: str, failures: dict[str, str]) -> str:
    """Why a doc has no judgement: the error of the request whose prompt held its texts."""
    for prompt, error in failures.items():
        if instruction in prompt and output in prompt:
            return f"judge request failed: {error}"
    return NO_PREFERENCE
