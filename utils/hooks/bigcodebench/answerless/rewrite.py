"""A BigCodeBench test with its answers taken out: the test the recording run holds.

The replayed verdict (`pass_at_1_replayed`) plays back a record the program made of what it
did. The program writes that record, so it is a claim, and the replay asks the genuine test
whether the claim passes. A claim only passes with the right answers; in BigCodeBench's own
run the test shares the program's module, so its expected values (constants, frames, failure
messages) are there to be read. The record is therefore made in a run of its own, whose test is
this one: the same inputs, mocks, files and calls of `task_func`, in the same order, and none
of the checks. What goes:

- assertions: `self.assert*`, `self.fail`, a mock's `assert_*`, numpy's and pandas' `assert_*`,
  `assert` statements, a test's own `assert*` helpers; the calls of `task_func` inside them (and
  of the test's functions that call it) stay, as statements;
- `with self.assertRaises(...)` (and its call form): its body runs under `try`/`except
  Exception` (the exception expected is an answer too);
- `self.subTest(...)`'s labels;
- then what only those read (`prune`): expected values and the statements that
  build them, helpers that compute them, the expected column of a table of cases.

Plain data in and out: the test's source, the answerless source (`ast.unparse`).
"""

import ast

from .blanks import called, calls_entry, split_pairs
from .prune import prune

ENTRY = "task_func"
RAISES = ("assertRaises", "assertRaisesRegex")  # (and pytest's `raises`)


def answerless(test: str, entry: str = ENTRY) -> str:
    """`test` (a BigCodeBench test module's source) without its answers (module docstring)."""
    tree = ast.parse(test)
    split_pairs(tree)
    callers = _callers(tree, entry)
    tree.body = _statements(tree.body, callers)
    while prune(tree, callers):
        pass
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _callers(tree, entry):
    """`entry` and the test's functions and methods that call it, directly or not."""
    defined = {
        node.name: node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    callers, grew = {entry}, True
    while grew:
        grew = False
        for name, node in defined.items():
            if name not in callers and calls_entry(node, callers):
                callers.add(name)
                grew = True
    return callers


def _is_assertion(call):
    name = called(call)
    return name.startswith("assert") or name == "fail" and isinstance(call.func, ast.Attribute)


def _entry_calls(node, callers):
    """The outermost calls of `callers` inside `node`, each with what it needs to run: the
    whole comprehension it sits in, its element reduced to the call. (A lambda's calls are
    left out: an assertion's argument that is a lambda is not called there.)"""
    found = []

    def visit(child):
        if isinstance(child, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = [call for part in _parts(child) for call in _entry_calls(part, callers)]
            if inner:
                found.append(_reduced(child, inner))
            return
        if isinstance(child, ast.Lambda):
            return
        if isinstance(child, ast.Call) and called(child) in callers:
            found.append(child)
            return
        for grandchild in ast.iter_child_nodes(child):
            visit(grandchild)

    visit(node)
    return found


def _parts(comprehension):
    if isinstance(comprehension, ast.DictComp):
        return [comprehension.key, comprehension.value]
    return [comprehension.elt]


def _reduced(comprehension, calls):
    """`[f(x) == e for x, e in cases]` as `[(f(x),) for x, e in cases]`."""
    element = ast.Tuple(elts=calls, ctx=ast.Load())
    return ast.ListComp(elt=element, generators=comprehension.generators)


def _statements(body, callers):
    out = []
    for node in body:
        out += _statement(node, callers)
    return out


def _statement(node, callers):
    """A statement of the test, answerless: a list of statements, maybe empty."""
    if isinstance(node, ast.Assert):
        return _as_statements(_entry_calls(node, callers))
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        if _is_assertion(call) and called(call) not in callers:
            if called(call) in RAISES and call.args:
                return _raising(call, callers)
            return _as_statements(_entry_calls(call, callers))
    for field in ("body", "orelse", "finalbody"):
        if isinstance(getattr(node, field, None), list):
            setattr(node, field, _statements(getattr(node, field), callers))
    for handler in getattr(node, "handlers", []):
        handler.body = _statements(handler.body, callers) or [ast.Pass()]
    if isinstance(getattr(node, "body", None), list) and not node.body:
        node.body = [ast.Pass()]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return _with(node)
    return [node]


def _with(node):
    """A `with` statement: `self.assertRaises(...)` taken out of it, its body then guarded;
    `self.subTest(...)` without its labels (expected values, often)."""
    for item in node.items:
        if isinstance(item.context_expr, ast.Call) and called(item.context_expr) == "subTest":
            item.context_expr.args, item.context_expr.keywords = [], []
    kept = [item for item in node.items if not _expects_raise(item.context_expr)]
    if len(kept) == len(node.items):
        return [node]
    guarded = _guarded(node.body)
    if not kept:
        return [guarded]
    node.items, node.body = kept, [guarded]
    return [node]


def _expects_raise(expression):
    return isinstance(expression, ast.Call) and called(expression) in (*RAISES, "raises")


def _raising(call, callers):
    """`self.assertRaises(E, f, *args)`: `f(*args)` under `try`, if `f` calls `task_func` (is
    it, one of the test's functions that call it, or a lambda that does)."""
    function, *args = call.args[1:] or [None]
    named = isinstance(function, (ast.Name, ast.Attribute)) and _called_name(function) in callers
    if not (named or isinstance(function, ast.Lambda) and calls_entry(function, callers)):
        return []
    invoked = ast.Call(func=function, args=args, keywords=call.keywords)
    return [_guarded([ast.Expr(invoked)])]


def _called_name(function):
    return function.id if isinstance(function, ast.Name) else function.attr


def _guarded(body):
    """`body` under `try: ... except Exception: pass`."""
    handler = ast.ExceptHandler(
        type=ast.Name("Exception", ast.Load()), name=None, body=[ast.Pass()]
    )
    return ast.Try(body=body, handlers=[handler], orelse=[], finalbody=[])


def _as_statements(calls):
    return [ast.Expr(call) for call in calls]
