"""OLMES's multiple-choice metrics, as plain functions of per-choice log-likelihoods.

* `mc_scores`: OLMES's `MCAccuracy` for one doc (MMLU): the predicted choice by raw summed
  log-likelihood, per token, per character and per byte (first maximum wins ties), accuracy for
  each, and the correct choice's value of each (`*_corr`).
* `mc1_mc2`: OLMES's `MC1MC2Accuracy` for one doc (TruthfulQA).
* `extract_cot_letter`: OLMES's answer extraction for `mmlu:cot::summarize` (no answer-format
  regex configured, so only its backup patterns run), and `cot_exact_match`, its comparison.

Quirks kept because they are OLMES's verdicts:

* mc2 sums raw `exp(log-likelihood)` terms in request order, no shift, no length normalisation,
  so log-likelihoods below about -708 give denormal terms and a coarse ratio (still OLMES's
  value). Where every term underflows to 0, OLMES divides by zero and the run crashes; here the
  doc gets the same ratio computed in log space (shifted by the largest term, mathematically the
  same quantity) and is reported in `mc2_underflow`.
* `bits_per_byte` uses OLMES's constant 1.44269504089 for log2(e).
* a `no_answer` flag marks docs whose best choice has log-likelihood exactly -999 (OLMES's
  marker for a vLLM shortcut; lm-eval never produces it, but the value is kept for parity).
"""

from __future__ import annotations

import math
import re
import string

LOG_2_OF_E = 1.44269504089  # OLMES's truncated log2(e)
NO_ANSWER = -999.0


def first_max(values: list[float]) -> int:
    """Index of the first largest value (Python's `list.index(max(...))`, as OLMES)."""
    return values.index(max(values))


def first_min(values: list[float]) -> int:
    return values.index(min(values))


def gold_index(label) -> int:
    """OLMES reads a string, list or missing label as choice 0 (its own comment: 'very
    problematic'); MMLU's labels are ints, so this only matters for other data."""
    if isinstance(label, (str, list)) or label is None:
        return 0
    return int(label)


def mc_scores(
    sum_logits: list[float], continuations: list[str], label, num_tokens: list[int] | None = None
) -> dict:
    """OLMES `MCAccuracy.process_one_doc` for one doc. `continuations` are the strings as sent
    (for a chat model without assistant prefix: `"A"`, not `" A"`), whose character and UTF-8
    byte counts normalise the per-char and per-byte values. Without `num_tokens` (lm-eval's
    loglikelihood API does not return token counts) the per-token values are left out."""
    if len(sum_logits) != len(continuations) or not sum_logits:
        raise ValueError(f"{len(sum_logits)} log-likelihoods for {len(continuations)} choices")
    gold = gold_index(label)
    per_char = [s / max(len(c), 1) for s, c in zip(sum_logits, continuations)]
    per_byte = [
        -LOG_2_OF_E * (s / max(len(c.encode("utf-8")), 1))
        for s, c in zip(sum_logits, continuations)
    ]
    raw = first_max(sum_logits)
    out = {
        "predicted_index_raw": raw,
        "predicted_index_per_char": first_max(per_char),
        "predicted_index_per_byte": first_min(per_byte),
        "correct_choice": gold,
        "acc_raw": int(raw == gold),
        "acc_per_char": int(first_max(per_char) == gold),
        "acc_per_byte": int(first_min(per_byte) == gold),
        "no_answer": int(sum_logits[raw] == NO_ANSWER),
        "sum_logits_corr": sum_logits[gold],
        "logits_per_char_corr": per_char[gold],
        "bits_per_byte_corr": per_byte[gold],
    }
    if num_tokens is not None:
        per_token = [s / max(n, 1) for s, n in zip(sum_logits, num_tokens, strict=True)]
        out.update(
            {
                "predicted_index_per_token": first_max(per_token),
                "acc_per_token": int(first_max(per_token) == gold),
                "logits_per_token_corr": per_token[gold],
            }
        )
    return out


def mc1_mc2(
    sum_logits: list[float], labels: list[int], mc1_indices: list[int], mc2_indices: list[int]
) -> dict:
    """OLMES `MC1MC2Accuracy.process_one_doc`: `mc1` is the label of the first mc1 choice with
    the highest log-likelihood (the gold is choice 0); `mc2` the share of exp(log-likelihood) mass
    on the true mc2 choices, summed in request order. `mc2_underflow` is 1 where every mc2 term
    is 0.0 in floating point (OLMES crashes there; see the module notes)."""
    mc1, best = 0, -math.inf
    true_mass = false_mass = 0.0
    mc1_set, mc2_set = set(mc1_indices), set(mc2_indices)
    for idx, value in enumerate(sum_logits):
        if idx in mc1_set and value > best:
            best, mc1 = value, labels[idx]
        if idx in mc2_set:
            if labels[idx]:
                true_mass += math.exp(value)
            else:
                false_mass += math.exp(value)
    if true_mass + false_mass > 0:
        return {"mc1": mc1, "mc2": true_mass / (true_mass + false_mass), "mc2_underflow": 0}
    return {"mc1": mc1, "mc2": mc2_log_space(sum_logits, labels, mc2_set), "mc2_underflow": 1}


def mc2_log_space(sum_logits: list[float], labels: list[int], mc2_set: set[int]) -> float:
    """The mc2 ratio with every term scaled by exp(-max): no underflow."""
    members = [idx for idx in range(len(sum_logits)) if idx in mc2_set]
    top = max(sum_logits[idx] for idx in members)
    weights = {idx: math.exp(sum_logits[idx] - top) for idx in members}
    return sum(w for idx, w in weights.items() if labels[idx]) / sum(weights.values())


# --- mmlu:cot::summarize ---------------------------------------------------------------------

# OLMES's backup patterns, tried in order, first match wins (re.search).
COT_BACKUP_PATTERNS = (
    r"(?i)therefore,?\s*the\s*answer\s*is:?\s*\(?([A-D])\b",
    r"(?i)answer\s*is:?\s*\(?([A-D])\b",
    r"(?i)([A-D])\)?\s+is\s+correct",
    r"\(([A-D])\)",
)
STANDALONE_LETTER = re.compile(r"\b([A-D])\b")
PUNCTUATION_TABLE = str.maketrans("", "", string.punctuation)


def last_standalone_letter(text: str) -> str | None:
    """OLMES's last backup pattern, `re.search(r".*\\b([A-D])\\b", text)`: without DOTALL it
    finds the first LINE holding a standalone capital A-D and takes that line's LAST one.
    Computed line by line in linear time (the regex is quadratic on a long line without one)."""
    for line in text.split("\n"):
        letters = STANDALONE_LETTER.findall(line)
        if letters:
            return letters[-1]
    return None


def extract_cot_letter(text: str) -> dict:
    """OLMES `GenericMMLU_OneTurnCoT._extract_answer` without an answer-format regex:
    `answer` is the letter (upper-cased) of the first backup pattern that matches, else "";
    `answer_format_correct` is 0 when a backup pattern matched and 1.0 when none did (OLMES's
    value: nothing matched leaves its initial 1.0)."""
    for pattern in COT_BACKUP_PATTERNS:
        match = re.search(pattern, text)
        if match:
            return {"answer": match.group(1).upper(), "answer_format_correct": 0.0}
    letter = last_standalone_letter(text)
    if letter is not None:
        return {"answer": letter, "answer_format_correct": 0.0}
    return {"answer": "", "answer_format_correct": 1.0}


def cot_exact_match(answer: str, gold: str) -> float:
    """OLMES's `exact_match` (Hugging Face evaluate's, ignore_case and ignore_punctuation)."""

    def norm(text: str) -> str:
        return text.lower().translate(PUNCTUATION_TABLE)

    return float(norm(answer) == norm(gold))
