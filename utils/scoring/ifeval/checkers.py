"""IFEval verdicts as OLMES `ifeval::tulu` gives them, with lm-eval 0.4.13's instruction checkers.

lm-eval's `lm_eval.tasks.ifeval` holds the same Google checkers as OLMES's
`oe_eval/dependencies/ifeval` (the 25 instruction types of IFEval differ only in comments), so
they are used as they are. Around them, OLMES's procedure:

* a checker is built from the doc's kwargs with every falsy value dropped (None, 0, "", []),
  then rebuilt with the doc's prompt if its arguments include `prompt`;
* strict: the checker on the response; loose: on any of 8 variants (`loose_variants`);
  a whitespace-only response (or variant) never counts as following;
* any exception while building or checking means "not followed" (OLMES catches them; lm-eval's
  own `ifeval` task lets them stop the run).

OLMES is random in two places; here both are seeded, so a verdict never changes between runs:
language detection (`language:response_language`, `change_case:english_capital`,
`change_case:english_lowercase`) runs with langdetect's `DetectorFactory.seed = 0`, and any
random fallback of a checker's construction (e.g. `keywords:letter_frequency` asked for `#` or
`!`, which it replaces by a random ASCII letter) draws from Python's `random` seeded with the
doc's IFEval key and the instruction's position (`instruction_seed`), the global generator's
state being restored afterwards.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from . import resources

LANGDETECT_SEED = 0

# OLMES's IFEvalMetric.DEFAULT_INSTRUCTION_TYPES, in its order: one `<id>_strict_acc` and one
# `<id>_loose_acc` metric each.
INSTRUCTION_TYPES = (
    "punctuation:no_comma",
    "detectable_format:number_highlighted_sections",
    "length_constraints:number_words",
    "detectable_content:number_placeholders",
    "combination:repeat_prompt",
    "detectable_format:title",
    "change_case:english_lowercase",
    "detectable_format:number_bullet_lists",
    "change_case:english_capital",
    "detectable_format:multiple_sections",
    "change_case:capital_word_frequency",
    "startend:quotation",
    "keywords:existence",
    "detectable_format:json_format",
    "length_constraints:number_paragraphs",
    "combination:two_responses",
    "language:response_language",
    "keywords:letter_frequency",
    "startend:end_checker",
    "keywords:forbidden_words",
    "keywords:frequency",
    "length_constraints:number_sentences",
    "detectable_content:postscript",
    "length_constraints:nth_paragraph_first_word",
    "detectable_format:constrained_response",
)


@functools.cache
def registry() -> dict:
    """lm-eval's instruction id -> checker class, imported offline with seeded language
    detection (the Punkt data is installed first, so lm-eval never tries to download it).
    langdetect's profiles are loaded here too, so worker processes forked later share them."""
    resources.install_punkt()
    from langdetect import DetectorFactory, detector_factory

    DetectorFactory.seed = LANGDETECT_SEED
    detector_factory.init_factory()
    from lm_eval.tasks.ifeval import instructions_registry

    return dict(instructions_registry.INSTRUCTION_DICT)


def olmes_kwargs(kwargs: dict | None) -> dict:
    """The checker arguments OLMES passes: every falsy value dropped, not only None."""
    return {key: value for key, value in (kwargs or {}).items() if value}


def loose_variants(response: str) -> list[str]:
    """OLMES's 8 loose candidates, in its order: the response, it without `*`, then without
    its first line, last line, both (each stripped), and those three without `*`."""
    lines = response.split("\n")
    trimmed = [
        "\n".join(lines[1:]).strip(),
        "\n".join(lines[:-1]).strip(),
        "\n".join(lines[1:-1]).strip(),
    ]
    return [response, response.replace("*", ""), *trimmed, *(t.replace("*", "") for t in trimmed)]


def instruction_seed(doc_key, index: int) -> str:
    """The seed of a checker's random fallbacks: the doc's IFEval key and the position."""
    return f"ifeval:{doc_key}:{index}"


@contextmanager
def _seeded_random(seed: str) -> Iterator[None]:
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


def build_checker(instruction_id: str, kwargs: dict | None, prompt: str, seed: str):
    """One checker, built as OLMES builds it (falsy kwargs dropped, then the prompt if the
    checker takes one), its random fallbacks drawn from `seed`."""
    checker = registry()[instruction_id](instruction_id)
    with _seeded_random(seed):
        checker.build_description(**olmes_kwargs(kwargs))
        args = checker.get_instruction_args()
        if args and "prompt" in args:
            checker.build_description(prompt=prompt)
    return checker


def follows_any(checker, candidates: Sequence[str]) -> bool:
    """True when the checker accepts a non-blank candidate (tried in order, first wins)."""
    return any(bool(text.strip()) and bool(checker.check_following(text)) for text in candidates)


def judge(instruction_id: str, kwargs, prompt: str, response: str, seed: str) -> dict:
    """Strict and loose verdict on one instruction; an exception anywhere fails both and is
    kept as `error`."""
    try:
        checker = build_checker(instruction_id, kwargs, prompt, seed)
        strict = follows_any(checker, [response])
        loose = follows_any(checker, loose_variants(response))
    except Exception as exc:  # noqa: BLE001 (OLMES: any failure is "not followed")
        return {"strict": False, "loose": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"strict": strict, "loose": loose, "error": None}


def score_response(doc: dict, response: str) -> dict:
    """All instructions of one IFEval doc on one response: `strict` and `loose` verdict lists
    aligned with `instruction_id_list`, and `errors` (same alignment, the message or None) when
    a checker failed."""
    ids = list(doc["instruction_id_list"])
    verdicts = [
        judge(iid, kwargs, doc["prompt"], response, instruction_seed(doc.get("key"), i))
        for i, (iid, kwargs) in enumerate(zip(ids, doc["kwargs"]))
    ]
    return verdict_record(ids, verdicts)


def verdict_record(ids: list[str], verdicts: list[dict]) -> dict:
    """One doc's record from its instructions' verdicts (`strict`, `loose`, `error` each): the
    strict and loose lists aligned with `ids`, and `errors` where any checker failed."""
    record = {
        "instruction_id_list": ids,
        "strict": [v["strict"] for v in verdicts],
        "loose": [v["loose"] for v in verdicts],
    }
    if any(v["error"] for v in verdicts):
        record["errors"] = [v["error"] for v in verdicts]
    return record
