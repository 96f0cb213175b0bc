"""Planned calls: what a job's test is expected to call its candidate with, in order.

A job may give `Job.calls`, trusted source of an expression for the positional arguments of
each call its test is expected to make (a HumanEval+ test's literal `inputs`). The candidate
then receives them with its program and answers them in order without waiting for each call,
so a job with thousands of calls does not cross the process boundary twice per call. The
harness checks every call the test actually makes against the plan (equal `fingerprint`s: the
arguments' pickles, which tell 1 from 1.0 and True, a list from a tuple, -0.0 from 0.0 and a
subclass from its base, at C speed); the candidate computed the same calls in the same order as
it would have one by one, so its answers are the ones it would have given. If the test strays
from the plan, the job is run again from scratch, call by call. A plan is a prediction only:
what the candidate sends back is checked exactly as any answer, and the plan holds nothing the
candidate would not receive anyway.
"""

from __future__ import annotations

import hashlib
import marshal
import pickle
from dataclasses import dataclass
from functools import lru_cache

from .protocol import to_wire


@dataclass(frozen=True)
class Plan:
    key: str  # names the plan in the zygote, which keeps the last few (`messages.remember`)
    arguments: list  # each planned call's positional arguments, as a list (sent with the program)
    fingerprints: tuple[bytes | None, ...]  # of each planned call's arguments tuple


@lru_cache(maxsize=256)
def plan_for(source: str) -> Plan | None:
    """The calls a `Job.calls` expression predicts (evaluated once per worker); None without
    one, or where the calls are not sequences of plain data (then the job runs call by call)."""
    if not source:
        return None
    try:
        expression = compile(source, "<calls>", "eval")  # trusted, as the test is
        calls = [tuple(args) for args in eval(expression, {})]
        arguments = [list(args) for args in calls]
        to_wire(arguments, numpy_scalars=False)  # plain data
        marshal.dumps(arguments)  # which marshal carries exactly (not a Counter or a match)
    except (Exception, RecursionError):  # noqa: BLE001 (a plan is optional)
        return None
    fingerprints = tuple(map(fingerprint, calls))
    return Plan(hashlib.sha256(source.encode()).hexdigest(), arguments, fingerprints)


def fingerprint(args: tuple) -> bytes | None:
    """Equal for two argument tuples exactly when they are the same plain data with the same
    sharing of equal strings and tuples (a difference there only costs a rerun); None for
    arguments that do not pickle, which match nothing."""
    try:
        return pickle.dumps(args, protocol=5)
    except (Exception, RecursionError):  # noqa: BLE001 (the test's own objects)
        return None
