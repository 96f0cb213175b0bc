"""Memoized trusted functions: a test's reference function computed once per worker for equal
arguments, not once per sample.

A job may name, in `Job.pure`, functions its trusted test defines whose results depend on their
arguments alone: HumanEval+'s `ref_func`, which computes the expected value of each input, so
that the 20 samples of a problem compute the same expected values 20 times (for HumanEval/139,
/15, /130 and /83 that is half of all the work; EvalPlus itself computes its expected outputs
once). In the job's test each such function is wrapped as the test defines it. A call looks its
arguments up (their `plans.fingerprint`: equal exactly for the same plain data, types included)
in the worker's memo for that test; a hit returns a fresh copy of the result (through `marshal`,
exact for plain data, so no job sees what another did to its copy) and charges the job the CPU
time the first computation took, so that time limits decide as if it were computed again. A
miss computes, and keeps the result while the memo holds less than MEMO_BYTES if it is exact
plain data (`exact_plain`: exact built-in types, which marshal copies exactly; not a numpy
scalar or array, which marshal would turn into bytes) and if the candidate was not called while
it was computed (a reference that calls the entry point computes from the candidate's answers:
never kept). An exception is never kept. Only trusted code's results from the test's own
arguments are kept; nothing a candidate sends is.
"""

from __future__ import annotations

import functools
import marshal
import time
from collections.abc import Callable, Iterator, MutableMapping

from .limits import MEMO_BYTES
from .plans import fingerprint

_SCALARS = frozenset({type(None), bool, int, float, str, bytes})
_CONTAINERS = frozenset({list, tuple, set, frozenset, dict})


class Memo:
    """Results of one test's pure functions in this worker: {(name, fingerprint): (marshalled
    result, CPU seconds its computation took)}; another test's replace them."""

    def __init__(self) -> None:
        self.test: tuple[str, ...] = ()
        self.results: dict[tuple[str, bytes], tuple[bytes, float]] = {}
        self.size = 0

    def for_test(self, test: tuple[str, ...]) -> Memo:
        if test != self.test:
            self.test, self.results, self.size = test, {}, 0
        return self

    def keep(self, key: tuple[str, bytes], result, seconds: float) -> None:
        if not exact_plain(result):
            return
        try:
            data = marshal.dumps(result)
        except ValueError:  # e.g. nested too deep for marshal: not kept
            return
        if self.size + len(data) <= MEMO_BYTES:
            self.results[key] = data, seconds
            self.size += len(data)


_MEMO = Memo()  # this worker's


def memo_for(prelude: str, test: str) -> Memo:
    """The worker's memo for a test (with its prelude, which its functions may call)."""
    return _MEMO.for_test((prelude, test))


def exact_plain(value) -> bool:
    """Whether `value` is plain data of exact built-in types only (what marshal copies
    exactly), walked without recursion; a cycle or more than MEMO_BYTES values is refused."""
    stack, budget = [value], MEMO_BYTES
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _SCALARS:
            continue
        if kind not in _CONTAINERS:
            return False
        budget -= len(item) + 1
        if budget < 0:
            return False
        items = [*item.keys(), *item.values()] if kind is dict else item
        kinds = set(map(type, items))
        if kinds <= _SCALARS:  # a flat container: checked at C speed
            continue
        if not kinds <= _SCALARS | _CONTAINERS:
            return False
        stack.extend(x for x in items if type(x) in _CONTAINERS)
    return True


def memoized(
    name: str,
    function: Callable,
    memo: Memo,
    charge: Callable[[float], None],
    candidate_calls: Callable[[], int],
):
    """`function` computed once per equal arguments in `memo`, each use charged its time;
    a result computed while the candidate was called (`candidate_calls` changed) is not kept."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        arguments = fingerprint((args, kwargs))
        key = (name, arguments)
        if arguments is not None and key in memo.results:
            data, seconds = memo.results[key]
            charge(seconds)
            return marshal.loads(data)
        start, calls = time.thread_time(), candidate_calls()
        result = function(*args, **kwargs)
        if arguments is not None and candidate_calls() == calls:
            memo.keep(key, result, time.thread_time() - start)
        return result

    return call


class Definitions(MutableMapping):
    """A test module's local namespace that memoizes the functions named `pure` as the test
    defines them; otherwise a view of the module's globals, so that the test runs as with one
    namespace (its functions, `global` statements and module code see the same names)."""

    def __init__(
        self,
        namespace: dict,
        pure: tuple[str, ...],
        memo: Memo,
        charge: Callable[[float], None],
        candidate_calls: Callable[[], int],
    ):
        self.namespace, self.pure, self.memo, self.charge = namespace, pure, memo, charge
        self.candidate_calls = candidate_calls

    def __getitem__(self, name: str):
        return self.namespace[name]

    def __setitem__(self, name: str, value) -> None:
        if name in self.pure and callable(value):
            value = memoized(name, value, self.memo, self.charge, self.candidate_calls)
        self.namespace[name] = value

    def __delitem__(self, name: str) -> None:
        del self.namespace[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.namespace)

    def __len__(self) -> int:
        return len(self.namespace)
