"""MATH answer equivalence: OLMES's strict and flex metrics, and math-verify.

Faithful to OLMES `minerva_math::tulu` (which scores with the lm-eval 0.4.3 helpers), quirks
included (extraction and normalisation: `math_extract`). Plain strings in, plain data out.

Every sympy and math-verify call runs under `evalpack.core.bounded.time_limit`; a call that runs out
of time counts as "not equal" and is counted in the record's `timeouts`, never hidden. Callers
run `score_math` in `bounded_map` workers, so the bound also holds off the main thread. A
process remembers the quick `parse_latex` results (`_parsed`): the same text gets the same
verdict, without parsing it again.
"""

from __future__ import annotations

import logging
import math
import time

# sympy and math-verify are imported with the module, not per call, so that forked scoring
# workers start warm.
import sympy
from math_verify import parse, verify
from sympy.parsing.latex import parse_latex

from ..core.bounded import BoundExceeded, time_limit
from .math_extract import (
    INVALID_ANSWER,
    hendrycks_equal,
    last_boxed_answer,
    normalize_final_answer,
    olmes_gold,
    strict_answer,
)

logging.getLogger("math_verify").setLevel(logging.ERROR)  # it warns once that we time it

# ---------------------------------------------------------------- bounded equivalence


# sympy evaluates integer powers and factorials eagerly in single C-level operations that no
# signal interrupts (`10^{10^{10}}` would run for hours): a parsed answer whose evaluation would
# produce a number of more than a million digits counts as timed out without being evaluated
# (`2^{2005}`, `2004!` and even `(10^5)!` stay well below; they take under a second).
MAX_EVALUATED_DIGITS = 1e6


def _evaluated_digits(expr) -> float:
    """An upper bound on log10 of the largest number sympy computes evaluating `expr` (its
    digits); symbols and floats count 0 (sympy keeps symbolic powers unevaluated)."""
    if isinstance(expr, sympy.Rational):  # Integer included
        return math.log10(max(abs(expr.p), expr.q, 1))
    args = getattr(expr, "args", ())
    if not isinstance(args, tuple) or not args:
        return 0.0
    if isinstance(expr, sympy.Pow):  # |b^e| <= |b|^(10^digits(e))
        base, exponent = args
        return _evaluated_digits(base) * 10 ** min(_evaluated_digits(exponent), 300)
    if isinstance(expr, sympy.factorial):  # n! <= n^n
        n_digits = min(_evaluated_digits(args[0]), 300)
        return n_digits * 10**n_digits
    parts = [_evaluated_digits(arg) for arg in args]
    return sum(parts) if isinstance(expr, sympy.Mul) else max(parts) + math.log10(len(parts))


def _refuse_unevaluable(*parsed) -> None:
    """Raise `BoundExceeded` if evaluating any of the parsed objects would take unbounded time."""
    for expr in parsed:
        if _evaluated_digits(expr) > MAX_EVALUATED_DIGITS:
            raise BoundExceeded("evaluation would produce a number of over a million digits")


class _Unparsable(ValueError):
    """`parse_latex` failed on this text (remembered by `_parsed`)."""


_PARSED: dict[str, object] = {}  # text: its parse, or _Unparsable; only quick parses
MEMO_BELOW = 1.0  # seconds: no time bound can have cut a parse this quick short
MEMO_SIZE = 4096


def _parsed(text: str):
    """`parse_latex(text)`, remembered in this process when it took under `MEMO_BELOW`
    seconds (the gold of a doc is compared with several candidates; an empty answer's failed
    parse is the same for every doc). A slower parse may have been cut by a time bound
    (math-verify and parts of sympy catch our exception and answer anyway), so it is redone."""
    if text in _PARSED:
        if _PARSED[text] is _Unparsable:
            raise _Unparsable(text)
        return _PARSED[text]
    start = time.process_time()
    try:
        value = parse_latex(text)
    except BoundExceeded:
        raise
    except Exception:  # noqa: BLE001 (any parse error is "not equal", see below)
        value = _Unparsable
    if time.process_time() - start < MEMO_BELOW and len(_PARSED) < MEMO_SIZE:
        _PARSED[text] = value
    if value is _Unparsable:
        raise _Unparsable(text)
    return value


def _sympy_equal_unbounded(a: str, b: str) -> bool:
    try:
        parsed_a, parsed_b = _parsed(a), _parsed(b)
        _refuse_unevaluable(parsed_a, parsed_b)
        return sympy.simplify(parsed_a - parsed_b) == 0
    except BoundExceeded:
        raise
    except Exception:  # noqa: BLE001 (OLMES: any parse, type or simplify error is "not equal")
        return False


def _bounded_comparison(equal, a: str, b: str, timeout: float) -> tuple[bool, bool]:
    """(`equal(a, b)` within `timeout` seconds, timed out?). A call that ran past the bound is
    "not equal, timed out" even when it returned: math-verify (and parts of sympy) catch every
    exception, our `BoundExceeded` included, and then go on to answer. Time is CPU time, as
    `time_limit` counts it."""
    try:
        with time_limit(timeout) as bound:
            equal_ = equal(a, b)
    except BoundExceeded:
        return False, True
    if bound.expired:
        return False, True
    return equal_, False


def verify_equal(gold: str, answer: str) -> bool:
    """math-verify equivalence of two answer strings (each read as the content of a box).
    math-verify's own SIGALRM timeouts are off: callers bound this with `time_limit`. Errors
    mean "not equal", as inside math-verify (e.g. a recursion error on deeply nested braces)."""
    try:
        gold_parsed = parse(f"\\boxed{{{gold}}}", parsing_timeout=None)
        answer_parsed = parse(f"\\boxed{{{answer}}}", parsing_timeout=None)
        _refuse_unevaluable(*gold_parsed, *answer_parsed)
        return bool(verify(gold_parsed, answer_parsed, timeout_seconds=None))
    except BoundExceeded:
        raise
    except Exception:  # noqa: BLE001
        return False


def _warm_up() -> None:
    """Build the LaTeX parsers once (the first `parse_latex` call takes a second or more)."""
    parse_latex("1")
    verify_equal("1", "1")


# At import, so that forked scoring workers inherit warm parsers instead of each paying on its
# first doc (which can push a cheap doc past a tight per-doc bound on a loaded machine).
_warm_up()


def sympy_equal(a: str, b: str, timeout: float) -> tuple[bool, bool]:
    """(OLMES's sympy equivalence of two normalised answers, timed out?)."""
    return _bounded_comparison(_sympy_equal_unbounded, a, b, timeout)


def math_verify_equal(gold: str, answer: str, timeout: float) -> tuple[bool, bool]:
    """(math-verify equal?, timed out?)."""
    return _bounded_comparison(verify_equal, gold, answer, timeout)


# ---------------------------------------------------------------- think blocks


def strip_think(text: str) -> tuple[str | None, bool]:
    """(what follows the last `</think>`, truncated?). A `<think>` never closed means the
    answer was cut off: (None, True). Text without think tags is returned whole."""
    close = text.rfind("</think>")
    if close >= 0:
        return text[close + len("</think>") :], False
    if "<think>" in text:
        return None, True
    return text, False


# ---------------------------------------------------------------- the three metrics


def flex_candidates(completion: str, strict: str) -> list[str]:
    """OLMES flex's normalised candidates, in order: the strict answer, the last boxed answer
    (no `\\fbox` here); only when there is neither, the text between the last two `$`; only
    when there is still none, the whole output."""
    raw = [] if strict == INVALID_ANSWER else [strict]
    boxed = last_boxed_answer(completion)
    if boxed is not None:
        raw.append(boxed)
    if not raw:
        pieces = completion.split("$")
        raw.append(pieces[-2] if len(pieces) >= 3 else completion)
    return [normalize_final_answer(candidate) for candidate in raw]


def score_math(
    completion: str, solution: str, sympy_timeout: float = 5.0, minerva_style: bool = True
) -> dict:
    """All three MATH metrics of one completion, as a plain record for logging. OLMES's
    `cot_style: plain` (`minerva_style=False`, the olmo3 tasks) leaves the Final Answer line out
    of flex's candidates (it still decides `exact_match`)."""
    gold = olmes_gold(solution)
    timeouts = {"exact_match": 0, "exact_match_flex": 0, "math_verify": 0}

    strict = strict_answer(completion)
    # Without a Final Answer line OLMES still asks sympy about "[invalidanswer]", which can
    # only fail to equal a real gold; skipping the call changes no verdict.
    exact = False
    if strict != INVALID_ANSWER:
        exact, timed_out = sympy_equal(normalize_final_answer(strict), gold, sympy_timeout)
        timeouts["exact_match"] += timed_out

    candidates = flex_candidates(completion, strict if minerva_style else INVALID_ANSWER)
    flex = exact or any(hendrycks_equal(c, gold) for c in candidates)
    checked = {normalize_final_answer(strict)} if strict != INVALID_ANSWER else set()
    for candidate in candidates:
        if flex:
            break
        if candidate not in checked:  # the strict answer's sympy verdict is already known
            checked.add(candidate)
            flex, timed_out = sympy_equal(candidate, gold, sympy_timeout)
            timeouts["exact_match_flex"] += timed_out

    remaining, _ = strip_think(completion)
    mv_answer = last_boxed_answer(remaining) if remaining is not None else None
    mv_gold = last_boxed_answer(solution) or ""
    mv = False
    if mv_answer is not None:
        mv, timed_out = math_verify_equal(mv_gold, mv_answer, sympy_timeout)
        timeouts["math_verify"] += timed_out

    return {
        "gold": gold,
        "strict_answer": strict,
        "exact_match": int(exact),
        "flex_candidates": candidates,
        "exact_match_flex": int(flex),
        "model_answer": candidates[0],
        "math_verify_answer": mv_answer,
        "math_verify_gold": mv_gold,
        "math_verify": int(mv),
        "timeouts": timeouts,
    }
