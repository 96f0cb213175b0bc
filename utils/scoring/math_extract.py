"""MATH answer extraction and normalisation, as OLMES `minerva_math::tulu` does it (the
lm-eval 0.4.3 helpers): boxed answers, the "Final Answer" line, Minerva normalisation and the
Hendrycks string normaliser, quirks included (`\\left` -> `\\le`, `\\infty` -> `\\iny`, list
commas vanish). Pure string functions; equivalence is `math_answers`.
"""

from __future__ import annotations

import re

INVALID_ANSWER = "[invalidanswer]"

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
                return text[start : i + 1]
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
        return boxed[len("\\boxed ") :]
    for opener in ("\\boxed{", "\\fbox{"):
        if boxed.startswith(opener) and boxed.endswith("}"):
            return boxed[len(opener) : -1]
    return None


def last_boxed_answer(text: str) -> str | None:
    """The content of the last `\\boxed{}` (or `\\boxed x`), None when there is none."""
    boxed = last_boxed_only_string(text, fbox=False)
    return remove_boxed(boxed) if boxed else None


# ---------------------------------------------------------------- Minerva normalisation

# Appendix D of Lewkowycz et al. (2022), the Minerva paper: replacements, then removals.
MINERVA_SUBSTITUTIONS = [
    ("an ", ""),
    ("a ", ""),
    (".$", "$"),
    ("\\$", ""),
    ("\\ ", ""),
    (" ", ""),
    ("mbox", "text"),
    (",\\text{and}", ","),
    ("\\text{and}", ","),
    ("\\text{m}", "\\text{}"),
]
MINERVA_REMOVALS = [
    "square",
    "ways",
    "integers",
    "dollars",
    "mph",
    "inches",
    "ft",
    "hours",
    "km",
    "units",
    "\\ldots",
    "sue",
    "points",
    "feet",
    "minutes",
    "digits",
    "cents",
    "degrees",
    "cm",
    "gm",
    "pounds",
    "meters",
    "meals",
    "edges",
    "students",
    "childrentickets",
    "multiples",
    "\\text{s}",
    "\\text{.}",
    "\\text{\ns}",
    "\\text{}^2",
    "\\text{}^3",
    "\\text{\n}",
    "\\text{}",
    "\\mathrm{th}",
    "^\\circ",
    "^{\\circ}",
    "\\;",
    ",\\!",
    "{,}",
    '"',
    "\\dots",
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
        out.append(line[pos:start] + line[start + len(opener) : close])
        pos = close + 1
    return "".join(out) + line[pos:]


def _unwrap_boxed_greedy(line: str) -> str:
    """The first `\\boxed{` up to the line's last `}` becomes what lies between them."""
    start, close = line.find("\\boxed{"), line.rfind("}")
    if start < 0 or close < start + len("\\boxed{"):
        return line
    return line[:start] + line[start + len("\\boxed{") : close] + line[close + 1 :]


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


# The "Final Answer" line: lm-eval's `get_unnormalized_answer` appends "I hope it is correct." and
# searches `Final Answer: The final answer is(.*?). I hope it is correct.` (each `.` any character
# but a newline). From every occurrence of the opening phrase the lazy group runs to the line's end
# before the search moves on, so a line of many openings without the closing sentence makes it
# quadratic (seconds on a 130,000-character line, and no signal interrupts `re`). `strict_answer`
# finds the same match in one pass; tests/scoring/test_math_final_answer_line.py checks it against
# the regular expression.
FINAL_OPENING = "Final Answer: The final answer is"
FINAL_CLOSING = " I hope it is correct"  # preceded and followed by any character but a newline


def strict_answer(completion: str) -> str:
    """The answer on the "Final Answer: The final answer is X. I hope it is correct." line
    (unnormalised; the closing sentence may be missing where the output ends in a character and
    a space, e.g. "X. "), or `[invalidanswer]`.

    The regular expression's leftmost match: an opening phrase matches when the first closing
    sentence at least one character after it ends before its line does, with one more
    character on the line; the group is the text up to the character before that sentence. If
    an opening fails, so does every later one on its line (their first closing sentence is no
    earlier), so the scan moves to the next line, and each search only moves forward."""
    text = completion + "I hope it is correct."
    opening, closing = text.find(FINAL_OPENING), -1
    while opening >= 0:
        group = opening + len(FINAL_OPENING)
        line_end = text.find("\n", group)
        line_end = len(text) if line_end < 0 else line_end
        if closing <= group:
            closing = text.find(FINAL_CLOSING, group + 1)
            if closing < 0:
                return INVALID_ANSWER
        if closing + len(FINAL_CLOSING) < line_end:
            return text[group : closing - 1].strip()
        opening = text.find(FINAL_OPENING, line_end + 1)
    return INVALID_ANSWER


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
    for before, after in [
        ("\n", ""),
        ("\\!", ""),
        ("\\\\", "\\"),
        ("tfrac", "frac"),
        ("dfrac", "frac"),
        ("\\left", ""),
        ("\\right", ""),
        ("^{\\circ}", ""),
        ("^\\circ", ""),
        ("\\$", ""),
    ]:
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
