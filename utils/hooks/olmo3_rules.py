"""lm-eval hooks for the rule-scored tasks of OLMES's `olmo3:adapt` suite: `mmlu_cot_olmo3`,
`bbh_cot_olmo3`, `agi_eval_english_olmo3`, `gpqa_cot_olmo3`, `minerva_math_olmo3` and
`gsm8k_olmo3`. Prompts are the Tulu 3 tasks' (OLMES's olmo3 specs reuse them, 0-shot); the
answer is read by OLMES's olmo3 `metric_kwargs` (`evalpack.scoring.olmo3_answers`).

Each task's loader stamps the run's thinking switch on its docs (`thinking_switch`); its filter
scores each doc's first sample (OLMES's `ExactMatch` reads only the first) on what the switch
leaves, every doc under a hard time bound in a worker (`evalpack.core.bounded`), and keeps one
plain record per doc: the verdicts, the model answer and, with the switch on, the reasoning and
whether the thinking ended (what `--log_samples` shows as the filtered response).
"""

from __future__ import annotations

import logging

from ..core import data
from ..core.bounded import bounded_records
from ..scoring import bbh_answers, gsm8k_answers, math_answers, olmo3_answers
from ..scoring.mc_cot_answers import exact_match
from . import agi_eval, thinking_switch
from .bbh import subtask_of

log = logging.getLogger(__name__)

# hard bound on scoring one doc (wall clock): regexes over 130,000 characters; MATH's sympy
# calls (5 s of CPU each, several per doc) need more on a loaded machine
DOC_TIMEOUTS = {"minerva_math": 120.0}
DOC_TIMEOUT = 60.0
SYMPY_CALL_TIMEOUT = 5.0  # OLMES's alarm around each sympy comparison (here CPU time)
LETTERS = "ABCDE"


# ---------------------------------------------------------------- loaders


def load(process_output=None, **kwargs):
    """`custom_dataset` hook: a hub dataset's splits (MMLU, BBH, GPQA, MATH, GSM8K), each doc
    stamped with the run's thinking switch."""
    return thinking_switch.stamp(data.load(**kwargs), process_output)


def load_agi_eval(process_output=None, **kwargs):
    """`custom_dataset` hook: AGIEval's packaged v1 file, stamped likewise."""
    return thinking_switch.stamp(agi_eval.load(**kwargs), process_output)


# ---------------------------------------------------------------- prompts

MATH_FINAL = "\n\nPresent the answer in LaTex format: \\boxed{Your answer}"
GSM8K_TEMPLATE = (
    "Solve the following grade school math word problem:\n{question}\n\nShow your work and "
    'conclude with "Therefore, the final answer is \\boxed{{answer}}." where answer is just the '
    "final number that solves the problem. E.g., if the answer is 6, conclude with "
    '"Therefore, the final answer is \\boxed{{6}}."'
)


def minerva_math_prompt(doc: dict) -> str:
    """OLMES `cot_style: plain` with the olmo3 `final_description`."""
    return doc["problem"].strip() + MATH_FINAL


def minerva_math_target(doc: dict) -> str:
    return math_answers.olmes_gold(doc["solution"])


def gsm8k_prompt(doc: dict) -> str:
    """OLMES's olmo3 GSM8K template, one user turn."""
    return GSM8K_TEMPLATE.format(question=doc["question"])


def gsm8k_target(doc: dict) -> str:
    return gsm8k_answers.olmes_gold(doc["answer"])


# ---------------------------------------------------------------- per family


def letter_verdict(found: dict, gold: str, simple: bool = True) -> dict:
    """OLMES `ExactMatch` on a letter: case and punctuation ignored (`exact_match`), plain
    equality (`exact_match_simple`, not for GPQA), and the format score."""
    answer = found["answer"]
    out = {"model_answer": answer, "gold": gold, "exact_match": exact_match(answer, gold)}
    if simple:
        out["exact_match_simple"] = float(answer == gold)
    return {**out, "answer_format_correct": found["answer_format_correct"]}


def score_mmlu(text: str, doc: dict) -> dict:
    return letter_verdict(olmo3_answers.extract_mmlu(text), LETTERS[doc["answer"]])


def score_agi_eval(text: str, doc: dict) -> dict:
    return letter_verdict(olmo3_answers.extract_agi_eval(text), doc["label"])


def score_gpqa(text: str, doc: dict) -> dict:
    return letter_verdict(olmo3_answers.extract_gpqa(text), doc["label"], simple=False)


def score_bbh(text: str, doc: dict) -> dict:
    subtask, gold = subtask_of(doc), doc["target"]
    answer = olmo3_answers.extract_bbh(text, subtask)
    return {
        "model_answer": answer,
        "gold": gold,
        "exact_match": bbh_answers.exact_match_cot_v1(answer, gold, subtask),
        "exact_match_simple": float(answer == gold),
    }


def score_gsm8k(text: str, doc: dict) -> dict:
    """OLMES's olmo3 GSM8K: an answer whose format score is under the 0.4 cutoff counts only
    for `exact_match_flex` (`model_answer` is then "", `model_answer_flex` the answer)."""
    gold = gsm8k_answers.olmes_gold(doc["answer"])
    found = olmo3_answers.extract_gsm8k(text)
    flex, fmt = found["answer"], found["answer_format_correct"]
    strict = flex if fmt >= olmo3_answers.GSM8K_CUTOFF else ""
    return {
        "model_answer": strict,
        "model_answer_flex": flex,
        "gold": gold,
        "exact_match": exact_match(strict, gold, ignore_punctuation=False),
        "exact_match_flex": exact_match(flex, gold, ignore_punctuation=False),
        "answer_format_correct": fmt,
    }


def score_minerva_math(text: str, doc: dict) -> dict:
    """OLMES's `cot_style: plain`: strict from the "Final Answer" line, flex from the boxed
    answer (no Final Answer line among its candidates)."""
    return math_answers.score_math(text, doc["solution"], SYMPY_CALL_TIMEOUT, minerva_style=False)


SCORERS = {
    "mmlu": score_mmlu,
    "agi_eval": score_agi_eval,
    "gpqa": score_gpqa,
    "bbh": score_bbh,
    "gsm8k": score_gsm8k,
    "minerva_math": score_minerva_math,
}
UNSCORED = {  # a doc whose scoring ran out of time: every verdict 0
    "minerva_math": ("exact_match", "exact_match_flex", "math_verify"),
    "gsm8k": ("exact_match", "exact_match_flex", "answer_format_correct"),
    "gpqa": ("exact_match", "answer_format_correct"),
    "bbh": ("exact_match", "exact_match_simple"),
}
LETTER_METRICS = ("exact_match", "exact_match_simple", "answer_format_correct")


# ---------------------------------------------------------------- filter and results


def _score_job(job: dict) -> dict:
    thought = thinking_switch.split(job["sample"], job["doc"])
    text = thinking_switch.scored_text(job["sample"], thought)
    return {**SCORERS[job["family"]](text, job["doc"]), **thinking_switch.thinking_record(thought)}


def _unscored(job: dict, reason: str) -> dict:
    metrics = UNSCORED.get(job["family"], LETTER_METRICS)
    thought = thinking_switch.split(job["sample"], job["doc"])
    return {
        **{metric: 0 for metric in metrics},
        "model_answer": "",
        "scoring_failure": reason,
        **thinking_switch.thinking_record(thought),
    }


def score_docs(family: str, resps: list[list[str]], docs: list[dict]) -> list[dict]:
    jobs = [
        {"family": family, "sample": samples[0], "doc": doc} for samples, doc in zip(resps, docs)
    ]
    timeout = DOC_TIMEOUTS.get(family, DOC_TIMEOUT)
    records = bounded_records(_score_job, jobs, timeout=timeout, unscored=_unscored)
    cut_off = sum("scoring_failure" in r for r in records)
    if cut_off:
        log.warning(
            "%s: %d of %d docs could not be scored in time; they score 0",
            family,
            cut_off,
            len(records),
        )
    return records


def filter_for(family: str):
    """The custom filter of one family (a named function, as lm-eval logs filters)."""

    def score(resps: list[list[str]], docs: list[dict]) -> list[dict]:
        return score_docs(family, resps, docs)

    score.__name__ = f"score_{family}_olmo3"
    return score


def total(counts: list[int]) -> int:
    """Aggregation of `thinking_unfinished`: the sum over all docs of the run."""
    return sum(counts)


def results_for(metrics: tuple[str, ...]):
    """`process_results`: the record's `metrics` and, with the switch on, how many samples
    never ended their thinking (`thinking_unfinished`, summed over docs)."""

    def process(doc: dict, results: list[dict]) -> dict:
        record = results[0]
        scores = {metric: float(record[metric]) for metric in metrics}
        if "thinking_finished" in record:
            scores["thinking_unfinished"] = thinking_switch.unfinished([record])
        return scores

    return process


score_mmlu_docs = filter_for("mmlu")
score_agi_eval_docs = filter_for("agi_eval")
score_gpqa_docs = filter_for("gpqa")
score_bbh_docs = filter_for("bbh")
score_gsm8k_docs = filter_for("gsm8k")
score_minerva_math_docs = filter_for("minerva_math")
process_letters = results_for(LETTER_METRICS)
process_gpqa = results_for(("exact_match", "answer_format_correct"))
process_bbh = results_for(("exact_match", "exact_match_simple"))
process_gsm8k = results_for(("exact_match", "exact_match_flex", "answer_format_correct"))
process_minerva_math = results_for(("exact_match", "exact_match_flex", "math_verify"))
