"""lm-eval hooks for MMLU (`tasks/mmlu`): OLMES `mmlu_<subject>:mc::tulu` (5-shot multiple choice
by log-likelihood, group `mmlu_mc_tulu`) and `mmlu_<subject>:cot::summarize` (0-shot chain of
thought, group `mmlu_cot_tulu`).

Multiple choice: the shots are the first 5 rows of the subject's `dev` split in file order
(lm-eval's `first_n` sampler over `fewshot_split: dev`), as user/assistant turns; OLMES's subject
description opens the FIRST user turn only. lm-eval would make `description` a system message,
so `doc_to_text` adds it itself: on the first dev row (the first shot), or on the doc's own turn
when the run has 0 shots (`MMLUTask` marks the doc). Choices `A`..`D`: lm-eval 0.4.13 sends
`" A"` without a chat template and `"A"` with one (no assistant prefix), exactly as OLMES.
"""

from __future__ import annotations

from lm_eval.api.task import ConfigurableTask

from ..scoring.multiple_choice import cot_exact_match, extract_cot_letter, mc_scores

LETTERS = "ABCDE"
FIRST_TURN = "_mmlu_first_turn"  # set on the doc of a 0-shot run
MC_DESCRIPTION = "The following are multiple choice questions (with answers) about {}.\n\n"
COT_DESCRIPTION = (
    "The following are multiple choice questions about {}. Summarize your reasoning concisely, "
    "then conclude with 'Therefore, the answer is: X' where X is one of A, B, C, or D.\n\n"
)
# what the group reports (per subject, and the group's macro and micro means)
MC_METRICS = (
    "acc_raw",
    "acc_per_char",
    "acc_per_byte",
    "sum_logits_corr",
    "logits_per_char_corr",
    "bits_per_byte_corr",
)
MICRO = ("acc_raw", "acc_per_char", "acc_per_byte")


def subject_of(doc: dict) -> str:
    """The subject config of a doc, from its key `cais__mmlu/<subject>/<split>#<row>`."""
    return doc["doc_key"].split("/")[1]


def subject_words(doc: dict) -> str:
    return subject_of(doc).replace("_", " ")


def question_block(doc: dict, answer_prefix: str) -> str:
    """OLMES's `make_mcq_prompt`: `Question: q`, one ` X. choice` line per choice, then the
    answer prefix on its own line."""
    lines = [f" {LETTERS[i]}. {choice}" for i, choice in enumerate(doc["choices"])]
    return f"Question: {doc['question']}\n" + "\n".join(lines) + f"\n{answer_prefix}"


def opens_conversation(doc: dict) -> bool:
    return doc.get(FIRST_TURN, False) or doc["doc_key"].endswith("/dev#0")


def doc_to_text(doc: dict) -> str:
    prefix = MC_DESCRIPTION.format(subject_words(doc)) if opens_conversation(doc) else ""
    return prefix + question_block(doc, "Answer:")


def doc_to_choice(doc: dict) -> list[str]:
    return list(LETTERS[: len(doc["choices"])])


class MMLUTask(ConfigurableTask):
    """Puts the subject description on the doc's own turn when the run has no shots."""

    def __init__(self, config: dict | None = None, **kwargs) -> None:
        super().__init__(config={k: v for k, v in (config or {}).items() if k != "class"}, **kwargs)

    def fewshot_context(self, doc: dict, num_fewshot: int, **kwargs):
        if num_fewshot == 0:
            doc = {**doc, FIRST_TURN: True}
        return super().fewshot_context(doc, num_fewshot, **kwargs)


def process_results_mc(doc: dict, results: list) -> dict:
    """OLMES `MCAccuracy` on lm-eval's (log-likelihood, is_greedy) pairs. The per-char and
    per-byte lengths are those of the chat continuations (`"A"`); lm-eval returns no token
    counts, so OLMES's per-token values are not reported."""
    scores = mc_scores([float(r[0]) for r in results], doc_to_choice(doc), doc["answer"])
    out = {name: float(scores[name]) for name in MC_METRICS}
    return {**out, **{f"{name}_micro": out[name] for name in MICRO}}


# --- mmlu:cot::summarize --------------------------------------------------------------------


def doc_to_text_cot(doc: dict) -> str:
    """The only user turn: the description, then the question with its choices and a final
    newline (OLMES's `make_mcq_prompt` with an empty answer prefix)."""
    return COT_DESCRIPTION.format(subject_words(doc)) + question_block(doc, "")


def doc_to_target_cot(doc: dict) -> str:
    return LETTERS[doc["answer"]]


def process_results_cot(doc: dict, results: list[str]) -> dict:
    found = extract_cot_letter(results[0])
    match = cot_exact_match(found["answer"], doc_to_target_cot(doc))
    return {
        "exact_match": match,
        "exact_match_micro": match,
        "answer_format_correct": found["answer_format_correct"],
    }
