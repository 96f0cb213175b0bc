"""DeepMind Mathematics answers: OLMES `deepmind_math:0shot_cot::tulu3`'s extraction and verdict.

Faithful to OLMES (`oe_eval/tasks/oe_eval_tasks/deepmind_math.py` at 5a51f50), quirks kept:

* the answer is the last match of `FORMAT_REGEX`, whose dots are unescaped (any character
  stands for the "." after the answer and after "correct"); without one, `answer_format_correct`
  is 0.5 and the first line after the first "the final answer is" (else "answer is") is taken,
  less one trailing "."; with neither, the answer is "";
* `clean_prediction`'s patterns are regexes: `<|eot_id|>` deletes every "<", ">" and "eot_id";
* gold and answer equal ignoring case; else, for gold True/False, "yes"/"no" count; else both
  are parsed by `sympy.parse_expr` and compared by `check_equal`: the same free symbols, the
  same value (`np.allclose`) at one random point, then `Expr.equals`. Anything raised on the way
  (a parse error, a complex value `float` cannot take) is `answer_parse_error` 1 and 0.

Two deliberate differences, neither changes a verdict OLMES gives reliably:

* OLMES draws its point from numpy's unseeded global generator (and `Expr.equals` from sympy's
  unseeded one) and pairs it with the symbols in set order; here the point comes from a
  generator seeded per doc, the symbols sorted by name, and sympy's generator seeded too, so a
  verdict never changes between runs.
* answers are parsed through `sympy_guard.guarded_parse_expr`: text that would run code rather
  than build an expression is refused (`answer_parse_error` 1, `refused` names why).

The sympy part runs under a soft time bound (`time_limit`); callers run `score_deepmind` in
`bounded_map` workers for the hard bound. A time-out scores 0 and is recorded in `timeout`.
"""

from __future__ import annotations

import re
from tokenize import TokenError

import numpy as np
import sympy
import sympy.core.random

from ..core.bounded import BoundExceeded, time_limit
from .sympy_guard import UnsafeAnswer, guarded_parse_expr

FORMAT_REGEX = "(?i)Therefore, the final answer is (.*?). I hope it is correct."
LEGACY_PREFIXES = ("the final answer is", "answer is")
SPECIAL_TOKENS = ("<end_of_turn>", "<|eot_id|>", "<s>", "</s>")  # used as regexes, as in OLMES
WRAPPERS = (("$", "$"), ("\\(", "\\)"), ("**", "**"), ("***", "***"), ("\\[", "\\]"))


def legacy_answer(completion: str) -> str:
    """The first line after the first legacy prefix (case-sensitive), less one trailing ".";
    "" without a prefix (OLMES's `extract_answer_legacy` with answer regex `.*` then returns
    the last match of `.*` over the whole text, which is always empty)."""
    for prefix in LEGACY_PREFIXES:
        match = re.search(prefix, completion)
        if match:
            answer = re.findall("^(.*)", completion[match.end() :].strip())[0]
            return answer.removesuffix(".")
    return ""


def extract_answer(completion: str) -> tuple[str, float]:
    """(raw answer, answer_format_correct): the last phrase match (1.0), else legacy (0.5)."""
    matches = re.findall(FORMAT_REGEX, completion)
    if matches:
        return matches[-1], 1.0
    return legacy_answer(completion), 0.5


def clean_prediction(prediction: str) -> str:
    """OLMES's `clean_prediction`, pattern for pattern."""
    text = re.sub("\\s*\\.?\\s*I hope it is correct.*", "", prediction)
    for token in SPECIAL_TOKENS:
        text = re.sub(token, "", text).strip()
    text = re.sub("\\.\\s*$", "", text).strip()
    for left, right in WRAPPERS:
        text = re.sub(f"^{re.escape(left)}(.*){re.escape(right)}$", "\\1", text).strip()
    return text


def check_equal(gold, answer, rng: np.random.RandomState) -> bool:
    """OLMES's `check_equal` with the point drawn from `rng` for the symbols sorted by name."""
    if not isinstance(gold, sympy.Expr) or not isinstance(answer, sympy.Expr):
        return gold == answer
    if gold.free_symbols != answer.free_symbols:
        return False
    symbols = sorted(gold.free_symbols, key=sympy.default_sort_key)
    point = {symbol: sympy.Float(value) for symbol, value in zip(symbols, rng.random(len(symbols)))}
    gold_value, answer_value = gold, answer
    for symbol, value in point.items():  # one at a time, as OLMES substitutes
        gold_value, answer_value = gold_value.subs(symbol, value), answer_value.subs(symbol, value)
    if not np.allclose(float(gold_value), float(answer_value)):
        return False
    return bool(gold.equals(answer))


def sympy_verdict(gold: str, answer: str, seed: int, timeout: float) -> dict:
    """exact_match and answer_parse_error of the sympy comparison (OLMES's order: gold parsed
    first), with `refused` / `timeout` when the guard refused or the bound expired."""
    sympy.core.random.seed(seed)
    try:
        with time_limit(timeout) as bound:
            gold_expr = guarded_parse_expr(gold)
            answer_expr = guarded_parse_expr(answer)
            equal = check_equal(gold_expr, answer_expr, np.random.RandomState(seed))
        if bound.expired:  # sympy caught the bound's exception and went on
            raise BoundExceeded(f"exceeded {timeout:g}s")
        return {"exact_match": int(equal), "answer_parse_error": 0}
    except BoundExceeded as exc:
        return {"exact_match": 0, "answer_parse_error": 0, "timeout": str(exc)}
    except UnsafeAnswer as exc:
        return {"exact_match": 0, "answer_parse_error": 1, "refused": str(exc)}
    except (TypeError, SyntaxError, TokenError):  # OLMES's expected parse failures
        return {"exact_match": 0, "answer_parse_error": 1}
    except Exception:  # noqa: BLE001 (OLMES: any other error is a parse error too)
        return {"exact_match": 0, "answer_parse_error": 1}


def score_deepmind(completion: str, gold: str, seed: int = 0, sympy_timeout: float = 5.0) -> dict:
    """OLMES's record for one completion: exact_match, answer_format_correct,
    answer_parse_error, model_answer (+ `timeout` / `refused` where they happened)."""
    raw, format_correct = extract_answer(completion)
    answer = clean_prediction(raw)
    if gold.lower() == answer.lower():
        verdict = {"exact_match": 1, "answer_parse_error": 0}
    elif gold.lower() in ("true", "false"):
        answer = answer.lower()
        yes_no = {"true": "yes", "false": "no"}[gold.lower()]
        verdict = {"exact_match": int(answer in (gold.lower(), yes_no)), "answer_parse_error": 0}
    else:
        verdict = sympy_verdict(gold, answer, seed, sympy_timeout)
    return {**verdict, "answer_format_correct": format_correct, "model_answer": answer}
