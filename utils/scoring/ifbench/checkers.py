"""IFBench verdicts as the authors' `evaluation_lib` gives them (allenai/IFBench db69a6f):

* each instruction's checker gets the doc's kwargs without the None ones (`registry.bind`);
* strict: the checker on the response; loose: on any of the same 8 variants as IFEval's (the
  response; it without `*`; without its first line, last line, both, each stripped; those three
  without `*`: `evalpack.scoring.ifeval.checkers.loose_variants`); a blank response or variant
  never passes;
* where the authors' code would raise (and stop their whole run), the instruction counts as not
  followed and the record names the error, as OLMES does;
* every instruction (strict and loose together) is judged under a CPU-time bound
  (`CHECK_SECONDS`): past it the instruction counts as not followed and the record says the
  checker gave up. The task's filter adds a hard wall-clock bound per doc.
"""

from __future__ import annotations

from ...core.bounded import BoundExceeded, time_limit
from ..ifeval.checkers import loose_variants, verdict_record
from . import registry, resources, text

CHECK_SECONDS = 20.0  # CPU seconds for one instruction on a response and its loose variants


def preload() -> None:
    """Load everything the checkers read (NLTK data, the tagger) once, so that worker
    processes forked afterwards share it."""
    resources.install()
    resources.stopwords()
    resources.tagger()
    text.sentences("Loaded. Ready.")


def follows_any(checker, candidates) -> bool:
    """True when the checker accepts a non-blank candidate (tried in order, first wins)."""
    return any(bool(c.strip()) and bool(checker(c)) for c in candidates)


def judge(instruction_id: str, kwargs, response: str) -> dict:
    """Strict and loose verdict on one instruction; a failure fails both and is kept as
    `error` (a checker that gave up at the time bound says so)."""
    try:
        checker = registry.bind(instruction_id, kwargs)
        with time_limit(CHECK_SECONDS) as bound:
            strict = follows_any(checker, [response])
            loose = strict or follows_any(checker, loose_variants(response)[1:])
        if bound.expired:  # a library caught the bound's exception and went on
            raise BoundExceeded(f"exceeded {CHECK_SECONDS:g}s")
    except BoundExceeded:
        reason = f"gave up: the checker ran past its bound of {CHECK_SECONDS:g} CPU seconds"
        return {"strict": False, "loose": False, "error": f"{instruction_id}: {reason}"}
    except Exception as exc:  # noqa: BLE001 (the authors' run would stop; a verdict of False)
        return {"strict": False, "loose": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"strict": strict, "loose": loose, "error": None}


def score_response(doc: dict, response: str) -> dict:
    """All instructions of one IFBench doc on one response: `strict` and `loose` verdict lists
    aligned with `instruction_id_list`, and `errors` (same alignment, the message or None) when
    a checker failed or gave up."""
    ids = list(doc["instruction_id_list"])
    verdicts = [judge(iid, kwargs, response) for iid, kwargs in zip(ids, doc["kwargs"])]
    return verdict_record(ids, verdicts)
