"""lm-eval hooks for DROP (`tasks/drop`), OLMES `drop::llama3`.

OLMES's task is `oe_eval/tasks/oe_eval_tasks/drop.py` (class `DROP`), few-shot selection
`Task.fewshot_examples` and prompt assembly `Task.fewshot_context` in
`oe_eval/tasks/base_task.py`:

* 3 shots from the whole `train` split in hub order, `random.Random(1234).sample(train, 3)`,
  the generator re-seeded for every doc (`build_all_requests`), so every doc gets the same 3.
* Each doc is `"Passage: " + passage + "\\nQuestion: " + question + "\\nAnswer:"`; a shot is that
  text + `" "` + its first gold's spans joined by `", "`; shots and the doc are joined by blank
  lines into ONE user message (OLMES's chat format without `fewshot_as_multiturn`).

The shots are part of `doc_to_text`, not lm-eval's few-shot machinery (the YAML says
`num_fewshot: 0`): the message is then the same whatever `--fewshot_as_multiturn` a run uses,
so DROP can run beside multi-turn tasks such as PopQA.
"""

from __future__ import annotations

import os
import random
from functools import cache

from ..core import data
from ..core.text import cut_at_stops
from ..scoring.drop_f1 import olmes_drop_scores

DATASET = "EleutherAI/drop"  # OLMES reads EleutherAI/drop, not ucinlp/drop
FEWSHOT_SPLIT = "train"
NUM_SHOTS = 3
FEWSHOT_SEED = 1234  # OLMES TASK_DEFAULTS["fewshot_seed"]
# OLMES DROP chat_overrides stop sequences, enforced here whatever the backend did
STOP_STRINGS = ["Passage:", "Question:", "<|eot_id|>"]
METRICS = ("f1", "exact_match")


def _where(doc: dict, field: str) -> str:
    return f"{doc.get('doc_key', 'DROP doc')}: field {field!r}"


def answer_spans(answer: dict, where: str) -> tuple[str, ...]:
    """One gold as OLMES's `DROP.parse_answer` reads it: the number if any, else the spans,
    else the date as "day month year" stripped (inner blanks kept: "5  1992")."""
    try:
        if answer["number"] != "":
            return (str(answer["number"]),)
        if answer["spans"] != []:
            return tuple(answer["spans"])
        date = answer["date"]
        return (" ".join([date["day"], date["month"], date["year"]]).strip(),)
    except (KeyError, TypeError):
        raise data.DataError(f"{where}: needs number, spans and date (day, month, year)") from None


def validated_answers(doc: dict) -> list[dict]:
    """`validated_answers`, a dict of parallel lists, as one answer dict per entry."""
    columns = doc.get("validated_answers")
    if not isinstance(columns, dict) or not isinstance(columns.get("number"), list):
        raise data.DataError(f"{_where(doc, 'validated_answers')}: not a dict of lists")
    try:
        return [
            {key: columns[key][i] for key in ("number", "date", "spans")}
            for i in range(len(columns["number"]))
        ]
    except (KeyError, IndexError, TypeError):
        where = _where(doc, "validated_answers")
        raise data.DataError(f"{where}: lists of unequal length") from None


def gold_answers(doc: dict) -> list[list[str]]:
    """`answer` then every validated answer, parsed, duplicates dropped (first seen kept):
    OLMES's `DROP.get_answers`."""
    candidates = [(doc.get("answer"), _where(doc, "answer"))] + [
        (answer, _where(doc, "validated_answers")) for answer in validated_answers(doc)
    ]
    golds: list[tuple[str, ...]] = []
    for answer, where in candidates:
        spans = answer_spans(answer, where)
        if spans not in golds:
            golds.append(spans)
    return [list(spans) for spans in golds]


def answer_type(doc: dict) -> str:
    """What the first gold is: "number", "span", "spans" (several) or "date"."""
    answer = doc["answer"]
    if answer["number"] != "":
        return "number"
    if answer["spans"] != []:
        return "span" if len(answer["spans"]) == 1 else "spans"
    return "date"


def process_docs(dataset):
    """Check every doc before any generation; add `answers`, its golds (OLMES's field), and
    `answer_type` (for the report's breakdown)."""
    return dataset.map(lambda doc: {"answers": gold_answers(doc), "answer_type": answer_type(doc)})


def query(doc: dict) -> str:
    return "Passage: " + doc["passage"] + "\nQuestion: " + doc["question"] + "\nAnswer:"


def shot_text(doc: dict) -> str:
    """A solved example: the query, a space, the first gold's spans joined by ", "."""
    return query(doc) + " " + ", ".join(gold_answers(doc)[0])


def llama3_shots(train, k: int = NUM_SHOTS, seed: int = FEWSHOT_SEED) -> list[dict]:
    """OLMES's pick: `random.Random(seed).sample(train_docs, k)` over the whole split in hub
    order. `sample` chooses positions from the population's length alone, so sampling the
    positions picks the same docs without materialising the split as a list."""
    return [train[i] for i in random.Random(seed).sample(range(len(train)), k)]


@cache
def _shots_prefix(data_dir: str | None) -> str:
    # keyed by the mirror in use, so a changed EVALPACK_DATA_DIR is never served stale shots
    train = data.load(DATASET, splits=(FEWSHOT_SPLIT,))[FEWSHOT_SPLIT]
    return "".join(shot_text(shot) + "\n\n" for shot in llama3_shots(train))


def shots_prefix() -> str:
    """The 3 solved examples and the blank line after them, the same for every doc."""
    return _shots_prefix(os.environ.get(data.DATA_DIR_ENV))


def doc_to_text(doc: dict) -> str:
    return shots_prefix() + query(doc)


def doc_to_target(doc: dict) -> str:
    return ", ".join(doc["answers"][0])


def score_record(completion: str, doc: dict) -> dict:
    answer = cut_at_stops(completion, STOP_STRINGS)
    return {"answer": answer, "golds": doc["answers"], **olmes_drop_scores(answer, doc["answers"])}


def score_docs(resps: list[list[str]], docs: list[dict]) -> list[dict]:
    """Custom filter: the first sample of every doc, scored (cheap: the completion is one span,
    normalised in linear time, against a handful of golds)."""
    return [score_record(samples[0], doc) for samples, doc in zip(resps, docs)]


def process_results(doc: dict, results: list[dict]) -> dict:
    record = results[0]
    return {metric: record[metric] for metric in METRICS}
