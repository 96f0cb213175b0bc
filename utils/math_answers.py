"""MATH answer extraction and equivalence: OLMES's strict and flex metrics, and math-verify.

Faithful to OLMES `minerva_math::tulu` (which scores with the lm-eval 0.4.3 helpers), quirks
included: Minerva normalisation mangles some golds (`\\left` -> `\\le`, `\\infty` -> `\\iny`,
list commas vanish) and the metrics keep that. Plain strings in, plain data out.

Every sympy and math-verify call runs under `evalpack.bounded.time_limit`; a call that runs out
of time counts as "not equal" and is counted in the record's `timeouts`, never hidden. Callers
run `score_math` in `bounded_map` workers, so the bound also holds off the main thread.
"""

from __future__ import annotations

import logging
import math
import re
import time

# sympy and math-verify are imported with the module, not per call, so that forked scoring
# workers start warm.
import sympy
from math_verify import parse, verify
from sympy.parsing.latex import parse_latex

from evalpack.bounded import BoundExceeded, time_limit

logging.getLogger("math_verify").setLevel(logging.ERROR)  # it warns once that we time it

INVALID_ANSWER = "[invalidanswer]"
FINAL_ANSWER = re.compile(r"Final Answer: The final answer is(.*?). I hope it is correct.")

# ---------------------------------------------------------------- boxed answers


def _balanced_from(text: str, start: int) -> str | None:
    """`text[start:]` up to the brace that closes the first `{` after `start`, or None."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start: i + 1]
    return None


def last_boxed_only_string(text: str, fbox: bool = True) -> str | None:
    """The last `\\boxed{...}` (or `\\fbox{...}` when there is no `\\boxed`) with balanced
    braces, as the Minerva/Hendrycks helpers find it. A `\\boxed ` followed by a space
    anywhere wins: then the text after the last `\\boxed ` up to the next `$`."""
    if "\\boxed " in text:
        return "\\boxed " + text.split("\\boxed ")[-1].split("$")[0]
    start = text.rfind("\\boxed")
    if start < 0 and fbox:
        start = text.rfind("\\fbox")
    if start < 0:
        return None
    return _balanced_from(text, start)


def remove_boxed(boxed: str) -> str | None:
    """The content of `\\boxed{...}`, `\\boxed ...` or `\\fbox{...}`; None for anything else
    (e.g. `\\boxed\\frac{1}`, what the brace scan makes of `\\boxed\\frac{1}{2}`), where the
    original helper fails an assertion and OLMES's flex extraction then has no boxed answer."""
    if boxed.startswith("\\boxed "):
        return boxed[len("\\boxed "):]
    for opener in ("\\boxed{", "\\fbox{"):
        if boxed.startswith(opener) and boxed.endswith("}"):
            return boxed[len(opener): -1]
    return None


def last_boxed_answer(text: str) -> str | None:
    """The content of the last `\\boxed{}` (or `\\boxed x`), None when there is none."""
    boxed = last_boxed_only_string(text, fbox=False)
    return remove_boxed(boxed) if boxed else None


# ---------------------------------------------------------------- Minerva normalisation

# Appendix D of Lewkowycz et al. (2022), the Minerva paper: replacements, then removals.
MINERVA_SUBSTITUTIONS = [
    ("an ", ""), ("a ", ""), (".$", "$"), ("\\$", ""), ("\\ ", ""), (" ", ""),
    ("mbox", "text"), (",\\text{and}", ","), ("\\text{and}", ","), ("\\text{m}", "\\text{}"),
]
MINERVA_REMOVALS = [
    "square", "ways", "integers", "dollars", "mph", "inches", "ft", "hours", "km", "units",
    "\\ldots", "sue", "points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm",
    "pounds", "meters", "meals", "edges", "students", "childrentickets", "multiples",
    "\\text{s}", "\\text{.}", "\\text{\ns}", "\\text{}^2", "\\text{}^3", "\\text{\n}",
    "\\text{}", "\\mathrm{th}", "^\\circ", "^{\\circ}", "\\;", ",\\!", "{,}", '"', "\\dots",
]
# Minerva then unwraps answers with `re.sub` patterns whose `.` stops at a newline, so each works
# line by line. Backtracking makes them quadratic in a line's length (a 100k-character line takes
# minutes, and no signal interrupts `re`), so they are reimplemented here in linear time; the
# patterns are `(.*?)(\$)(.*?)(\$)(.*)` -> `$\3$`, `(\\text\{)(.*?)(\})` -> `\2` (likewise
# `\textbf`, `\overline`) and `(\\boxed\{)(.*)(\})` -> `\2`. The `\fracab` and `\sqrta` fixes
# stay regular expressions (they cannot backtrack).
LAZY_UNWRAPPED = ("\\text{", "\\textbf{", "\\overline{")


def _keep_first_math_span(line: str) -> str:
    """A line with two or more `$` becomes `$` + the text between its first two `$` + `$`."""
    return "$" + line.split("$", 2)[1] + "$" if line.count("$") >= 2 else line


def _unwrap_lazy(line: str, opener: str) -> str:
    """Every `opener` + text + first following `}` becomes the text."""
    out, pos = [], 0
    while (start := line.find(opener, pos)) >= 0:
        close = line.find("}", start + len(opener))
        if close < 0:
            break
        out.append(line[pos:start] + line[start + len(opener): close])
        pos = close + 1
    return "".join(out) + line[pos:]


def _unwrap_boxed_greedy(line: str) -> str:
    """The first `\\boxed{` up to the line's last `}` becomes what lies between them."""
    start, close = line.find("\\boxed{"), line.rfind("}")
    if start < 0 or close < start + len("\\boxed{"):
        return line
    return line[:start] + line[start + len("\\boxed{"): close] + line[close + 1:]


def _by_line(transform, text: str, *args) -> str:
    return "\n".join(transform(line, *args) for line in text.split("\n"))


def normalize_final_answer(answer: str) -> str:
    """Minerva's normalisation of a final answer (everything before the last `=` dropped)."""
    answer = answer.split("=")[-1]
    for before, after in MINERVA_SUBSTITUTIONS:
        answer = answer.replace(before, after)
    for removed in MINERVA_REMOVALS:
        answer = answer.replace(removed, "")
    answer = _by_line(_keep_first_math_span, answer)
    for opener in LAZY_UNWRAPPED:
        answer = _by_line(_unwrap_lazy, answer, opener)
    answer = _by_line(_unwrap_boxed_greedy, answer)
    answer = re.sub(r"(frac)([^{])(.)", r"frac{\2}{\3}", answer)  # \fracab -> \frac{a}{b}
    answer = re.sub(r"(sqrt)([^{])", r"sqrt{\2}", answer)  # \sqrta -> \sqrt{a}
    answer = answer.replace("$", "")
    if answer.replace(",", "").isdigit():
        answer = answer.replace(",", "")
    return answer


def olmes_gold(solution: str) -> str:
    """OLMES's gold: the last boxed answer of the solution, Minerva-normalised."""
    boxed = last_boxed_only_string(solution)
    return normalize_final_answer((remove_boxed(boxed) if boxed else None) or "")


def strict_answer(completion: str) -> str:
    """The answer on the "Final Answer: The final answer is X. I hope it is correct." line
    (unnormalised; the closing sentence may be missing at the very end), or `[invalidanswer]`."""
    match = FINAL_ANSWER.search(completion + "I hope it is correct.")
    return match.group(1).strip() if match else INVALID_ANSWER


# ---------------------------------------------------------------- Hendrycks strip_string
# Kept exactly as fragile as the original: some inputs raise (a `\text{ ` unit twice, a
# non-integer `a/b`, a trailing `\sqrt`), and `hendrycks_equal` then compares raw strings.


def _fix_fracs(text: str) -> str:
    """`\\frac12` -> `\\frac{1}{2}`, `\\frac1{72}` -> `\\frac{1}{72}`."""
    head, *parts = text.split("\\frac")
    out = head
    for part in parts:
        out += "\\frac"
        if part.startswith("{"):
            out += part
            continue
        if len(part) < 2:
            return text
        a, b, rest = part[0], part[1], part[2:]
        out += "{" + a + "}" + (b + rest if b == "{" else "{" + b + "}" + rest)
    return out


def _fix_a_slash_b(text: str) -> str:
    """`3/4` -> `\\frac{3}{4}` for integers; raises ValueError on non-integers (as original)."""
    parts = text.split("/")
    if len(parts) != 2:
        return text
    a, b = int(parts[0]), int(parts[1])
    return f"\\frac{{{a}}}{{{b}}}" if text == f"{a}/{b}" else text


def _remove_right_units(text: str) -> str:
    if "\\text{ " not in text:
        return text
    parts = text.split("\\text{ ")
    if len(parts) != 2:
        raise ValueError("more than one unit")
    return parts[0]


def _fix_sqrt(text: str) -> str:
    """`\\sqrt3` -> `\\sqrt{3}`; raises IndexError on a trailing `\\sqrt` (as original)."""
    head, *parts = text.split("\\sqrt")
    return head + "".join(
        "\\sqrt" + part if part[0] == "{" else "\\sqrt{" + part[0] + "}" + part[1:]
        for part in parts
    )


def strip_string(text: str) -> str:
    """Hendrycks MATH's answer canonicalisation (may raise; see `hendrycks_equal`)."""
    for before, after in [("\n", ""), ("\\!", ""), ("\\\\", "\\"), ("tfrac", "frac"),
                          ("dfrac", "frac"), ("\\left", ""), ("\\right", ""),
                          ("^{\\circ}", ""), ("^\\circ", ""), ("\\$", "")]:
        text = text.replace(before, after)
    text = _remove_right_units(text)
    text = text.replace("\\%", "").replace(" .", " 0.").replace("{.", "{0.")
    if not text:
        return text
    if text[0] == ".":
        text = "0" + text
    sides = text.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:  # drop a leading "k = "
        text = sides[1]
    text = _fix_sqrt(text).replace(" ", "")
    text = _fix_fracs(text)
    if text == "0.5":
        text = "\\frac{1}{2}"
    return _fix_a_slash_b(text)


def hendrycks_equal(a: str, b: str) -> bool:
    try:
        return strip_string(a) == strip_string(b)
    except Exception:  # noqa: BLE001 (the original falls back to raw comparison on any error)
        return a == b


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


def _sympy_equal_unbounded(a: str, b: str) -> bool:
    try:
        parsed_a, parsed_b = parse_latex(a), parse_latex(b)
        _refuse_unevaluable(parsed_a, parsed_b)
        return sympy.simplify(parsed_a - parsed_b) == 0
    except BoundExceeded:
        raise
    except Exception:  # noqa: BLE001 (OLMES: any parse, type or simplify error is "not equal")
        return False


def _bounded_comparison(equal, a: str, b: str, timeout: float) -> tuple[bool, bool]:
    """(`equal(a, b)` within `timeout` seconds, timed out?). A call that ran past the bound is
    "not equal, timed out" even when it returned: math-verify (and parts of sympy) catch every
    exception, our `BoundExceeded` included, and then go on to answer."""
    start = time.monotonic()
    try:
        with time_limit(timeout):
            equal_ = equal(a, b)
    except BoundExceeded:
        return False, True
    if time.monotonic() - start >= timeout:
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
        return text[close + len("</think>"):], False
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


def score_math(completion: str, solution: str, sympy_timeout: float = 5.0) -> dict:
    """All three MATH metrics of one completion, as a plain record for logging."""
    gold = olmes_gold(solution)
    timeouts = {"exact_match": 0, "exact_match_flex": 0, "math_verify": 0}

    strict = strict_answer(completion)
    # Without a Final Answer line OLMES still asks sympy about "[invalidanswer]", which can
    # only fail to equal a real gold; skipping the call changes no verdict.
    exact = False
    if strict != INVALID_ANSWER:
        exact, timed_out = sympy_equal(normalize_final_answer(strict), gold, sympy_timeout)
        timeouts["exact_match"] += timed_out

    candidates = flex_candidates(completion, strict)
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
