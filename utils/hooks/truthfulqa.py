"""lm-eval hooks for TruthfulQA multiple choice (`tasks/truthfulqa`): OLMES `truthfulqa::tulu`.

OLMES's prompt is ONE user turn: the 6 QA-primer shots (`fewshot/truthfulqa.json`) as
`Q: ...\\nA: ...` blocks joined by blank lines, then `Q: <question>\\nA:`. lm-eval's few-shot
machinery would make the shots separate turns whenever the run sets `--fewshot_as_multiturn`
(a run-level flag), so the task has 0 lm-eval shots and `doc_to_text` holds the primer, as
lm-eval's own `truthfulqa_mc*` tasks do: the message is the same under any run flags.

The choices are OLMES's: the `mc1_targets` choices in order, then every `mc2_targets` choice
whose exact text is not already listed (`process_docs`); lm-eval's `multiple_choice` then sends
one request per choice, continuation `" " + choice`, or `choice` alone in chat mode (lm-eval
0.4.13 drops the target delimiter under a chat template, as OLMES does for a chat model).
"""

from __future__ import annotations

import logging
from functools import cache

import datasets

from ..core import fewshot
from ..core.data import DataError
from ..scoring.multiple_choice import mc1_mc2

log = logging.getLogger(__name__)


@cache
def primer() -> str:
    """The 6 QA shots as OLMES writes them before the question."""
    shots = fewshot.load("truthfulqa")["samples"]
    return "".join(f"Q: {shot['question']}\nA: {shot['answer']}\n\n" for shot in shots)


def olmes_choices(doc: dict) -> dict:
    """`choices`, `labels`, `mc1_indices`, `mc2_indices` as OLMES builds them. An mc2 choice
    already listed must carry the same label (OLMES asserts it); else a `DataError`."""
    where = doc.get("doc_key", doc.get("question"))
    choices = list(doc["mc1_targets"]["choices"])
    labels = list(doc["mc1_targets"]["labels"])
    mc2_indices = []
    for choice, label in zip(
        doc["mc2_targets"]["choices"], doc["mc2_targets"]["labels"], strict=True
    ):
        if choice in choices:
            idx = choices.index(choice)
            if labels[idx] != label:
                raise DataError(
                    f"{where}: mc2_targets labels {choice!r} {label}, mc1_targets {labels[idx]}"
                )
        else:
            choices.append(choice)
            labels.append(label)
            idx = len(choices) - 1
        mc2_indices.append(idx)
    return {
        "choices": choices,
        "labels": labels,
        "mc1_indices": list(range(len(doc["mc1_targets"]["choices"]))),
        "mc2_indices": mc2_indices,
    }


def process_docs(dataset: datasets.Dataset) -> datasets.Dataset:
    return dataset.map(olmes_choices)


def doc_to_choice(doc: dict) -> list[str]:
    return doc["choices"]


def doc_to_text(doc: dict) -> str:
    return f"{primer()}Q: {doc['question']}\nA:"


def process_results(doc: dict, results: list) -> dict:
    """`mc1` and `mc2` (OLMES's primary); `mc2_underflow` marks docs where every mc2 term
    underflowed (OLMES crashes; see `evalpack.scoring.multiple_choice`)."""
    scores = mc1_mc2(
        [float(r[0]) for r in results], doc["labels"], doc["mc1_indices"], doc["mc2_indices"]
    )
    if scores["mc2_underflow"]:
        log.warning(
            "truthfulqa_tulu %s: every mc2 log-likelihood underflows exp(); OLMES would "
            "crash here, mc2 computed in log space",
            doc.get("doc_key"),
        )
    return {name: float(value) for name, value in scores.items()}
