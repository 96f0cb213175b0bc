"""Recorded checks: a trusted test whose failed assertions do not stop its calls.

In one process a test stops at its first failed assertion, so the candidate would learn from
the calls it receives (how many, and when it is stopped) whether its earlier answers were the
expected ones, and could pass that on to a later job through any state the host shares (a
kernel counter). So the trusted side runs a test's `assert` statements as recorded checks: a
failed one (its condition false, or the test's own code raising while computing it) is
recorded and the test goes on; the first one recorded decides the verdict once the test has
ended, exactly the verdict the test gets in one process, which stops there. The candidate then
receives the same calls whether its answers are right or wrong. What still ends a test: the
candidate's own exceptions and failures (its own doing), the job's time limit (its own work),
and the test's code outside an `assert` raising (none in HumanEval, HumanEval+ or MBPP+).

A failed check's message is evaluated only for the first one, with no new call to the
candidate (`Recorder.message`). `assert A and B, m` is two checks, `A` then `B` (the verdict is the same: `A`'s failure comes
first). Left as they are, listed in docs/security.md: `or` and `all`/`any` in a condition
(they stop evaluating on the answers), and a test that could catch the exception of a failed
assertion (a `try` or `with` statement, a class, or an import of a module outside `PLAIN`,
which may run the test's functions and catch what they raise: `unittest`, threads); such a
test is compiled as it is and stops at its first failed assertion, as before.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .jobs import Verdict
from .plans import fingerprint

NAME = "__evalpack_check__"  # the test's global bound to a `Recorder`
_CAUGHT = "_evalpack_failed_"
# modules a test may import and still have its assertions rewritten: none runs a test's code
PLAIN = frozenset(
    [
        "bisect",
        "cmath",
        "collections",
        "copy",
        "decimal",
        "fractions",
        "functools",
        "heapq",
        "itertools",
        "math",
        "numpy",
        "operator",
        "random",
        "re",
        "statistics",
        "string",
        "typing",
    ]
)
_CATCHING = (ast.Try, ast.TryStar, ast.With, ast.AsyncWith, ast.ClassDef)
NOT_EVALUATED = "(message not evaluated: it calls the candidate with arguments no check asked)"


class _NewCall(BaseException):
    """A failed check's message called the candidate with arguments it has not answered."""


@dataclass
class _Call:
    """One of the candidate's last calls: its arguments and what it returned or raised."""

    args: tuple
    kwargs: dict
    answer: Any
    raised: bool
    key: bytes | None = None  # the arguments' fingerprint, computed when a message needs it


class Recorder:
    """Records the first failed check of a test; `time_check()` raises the job's time-limit
    failure once its budget is spent (which then decides, as in one process, where the test
    would have ended here with its budget spent).

    A failed check's message (`assert cond, message`) is evaluated only for the first failed
    check, and calls the candidate no more: where it calls it with the arguments of one of its
    last calls it gets that call's answer again (in one process, a message calling the
    candidate would show it which of its answers were wrong: HumanEval/77's tests repeat each
    call in their message); with other arguments the message is `NOT_EVALUATED`."""

    def __init__(self, time_check: Callable):
        self.time_check = time_check
        self.first: Exception | None = None
        self.replaying = False  # while a message is evaluated
        self.recent: deque[_Call] = deque(maxlen=4)

    def __call__(self, exc: BaseException) -> None:
        if not isinstance(exc, Exception) or self.raised(exc):
            raise exc  # a candidate's exception or failure ends the test, as in one process
        if self.first is None:
            self.time_check()
            self.first = exc

    def raised(self, exc: BaseException) -> bool:
        """Whether `exc` is what the candidate raised in one of its last calls."""
        return any(exc is call.answer for call in self.recent if call.raised)

    def answered(self, answer: Callable, args: tuple, kwargs: dict):
        """`answer()`, the candidate's answer to a call, remembered."""
        try:
            value = answer()
        except Exception as exc:
            self.recent.append(_Call(args, kwargs, exc, True))
            raise
        self.recent.append(_Call(args, kwargs, value, False))
        return value

    def message(self, text: Callable):
        if self.first is not None:  # (it decides nothing)
            return ""
        self.replaying = True
        try:
            return text()
        except _NewCall:
            return NOT_EVALUATED
        finally:
            self.replaying = False

    def replay(self, args: tuple, kwargs: dict):
        """The answer of the last call with these arguments (see `message`)."""
        key = fingerprint((args, kwargs))
        for call in reversed(self.recent):
            if call.key is None:
                call.key = fingerprint((call.args, call.kwargs))
            if key is not None and call.key == key:
                if call.raised:
                    raise call.answer
                return call.answer
        raise _NewCall


@lru_cache(maxsize=256)
def compiled(source: str, name: str = "<test>"):
    """A trusted test's code with its assertions as recorded checks (`Recorder`, bound to
    `NAME`), or as it is where the test could catch them; compiled once per worker (the
    samples of a problem share its test; HumanEval+'s take 13 ms each to compile, 35 ms to
    parse and rewrite)."""
    tree = ast.parse(source, name)
    if _rewritable(tree.body):
        tree.body = _rewritten(tree.body)
        ast.fix_missing_locations(tree)
    return compile(tree, name, "exec")


def _statements(body: list):
    """Every statement of `body`, nested ones included (not those inside expressions)."""
    for statement in body:
        yield statement
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for case in getattr(statement, "cases", ()):
            yield from _statements(case.body)


def _rewritable(body: list) -> bool:
    for statement in _statements(body):
        if isinstance(statement, _CATCHING):
            return False
        if isinstance(statement, ast.Import):
            modules = [alias.name for alias in statement.names]
        elif isinstance(statement, ast.ImportFrom):
            modules = [statement.module or ""]
        else:
            continue
        if any(module.split(".")[0] not in PLAIN for module in modules):
            return False
    return True


def _rewritten(body: list) -> list:
    result = []
    for statement in body:
        for field in ("body", "orelse"):  # (no try statement: see `_rewritable`)
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                setattr(statement, field, _rewritten(inner))
        for case in getattr(statement, "cases", ()):
            case.body = _rewritten(case.body)
        if isinstance(statement, ast.Assert):
            result.extend(_check(part, statement) for part in _conjuncts(statement.test))
        else:
            result.append(statement)
    return result


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [part for value in test.values for part in _conjuncts(value)]
    return [test]


def _check(condition: ast.expr, statement: ast.Assert) -> ast.stmt:
    """`try: assert condition, NAME.message(lambda: msg)` / `except BaseException as e:
    NAME(e)`, at the assert's line (a traceback names it as before)."""
    message = statement.msg
    if message is not None:
        function = ast.Lambda(ast.arguments([], [], None, [], [], None, []), message)
        message = ast.Call(
            ast.Attribute(ast.Name(NAME, ast.Load()), "message", ast.Load()), [function], []
        )
    caught = ast.ExceptHandler(
        type=ast.Name("BaseException", ast.Load()),
        name=_CAUGHT,
        body=[ast.Expr(ast.Call(ast.Name(NAME, ast.Load()), [ast.Name(_CAUGHT, ast.Load())], []))],
    )
    check = ast.Try(
        body=[ast.Assert(condition, message)], handlers=[caught], orelse=[], finalbody=[]
    )
    return ast.copy_location(check, statement)


def failed(exc: Exception) -> Verdict:
    """The verdict of a test that failed with `exc` (a failed check, the test's own error or
    the candidate's exception)."""
    if isinstance(exc, AssertionError):
        return Verdict(False, "failed", f"assertion failed {_text(exc)}".strip(), 0.0)
    return Verdict(False, "failed", f"{type(exc).__name__}: {_text(exc)}", 0.0)


def _text(exc: BaseException) -> str:
    try:
        return str(exc)[:200]
    except Exception:  # noqa: BLE001 (e.g. the repr of a value too deep to print)
        return "(message could not be printed)"
