"""`sympy.parse_expr` on model-written text without running model-written code.

`parse_expr` turns its text into Python source (sympy's tokenizer and transformations) and
`eval`s it with Python's builtins at hand: `__import__('os').system(...)` is a valid "answer".
OLMES parses model answers this way. `guarded_parse_expr` first reads the source `parse_expr`
would evaluate (`stringify_expr`, same transformations and names) and refuses, with
`UnsafeAnswer`, anything beyond arithmetic on sympy objects: attribute access, names outside an
allowlist, string literals outside the `Symbol('x')` / `Function('f')` / `Float('1.5')` calls
sympy's transformations write, lambdas, comprehensions and the like. What passes is evaluated by
`parse_expr` itself, so every answer a model can mean as mathematics parses exactly as in OLMES.

Why string literals are refused: nearly every sympy function `sympify`s its arguments, and a
string argument is itself handed to `parse_expr`, outside this guard. Functions that return
strings (the printers) are not on the allowlist for the same reason.
"""

from __future__ import annotations

import ast
import builtins
import types
from functools import lru_cache

import sympy
from sympy.parsing.sympy_parser import parse_expr, standard_transformations, stringify_expr


class UnsafeAnswer(ValueError):
    """Text whose evaluation by `parse_expr` would do more than build a sympy expression."""


# Plain Python functions of sympy's namespace that build expressions (sympy classes and
# constants are allowed by type, see `_allowed_names`).
SAFE_FUNCTIONS = frozenset(
    {
        "sqrt",
        "root",
        "cbrt",
        "real_root",
        "expand",
        "factor",
        "simplify",
        "together",
        "cancel",
        "apart",
        "diff",
        "integrate",
        "gcd",
        "lcm",
        "N",
        "nsimplify",
        "ratsimp",
        "trigsimp",
        "radsimp",
        "powsimp",
        "expand_log",
        "logcombine",
        "factorint",
        "divisors",
        "primefactors",
    }
)
# Builtins parse_expr exposes that are harmless on numbers (`min`/`max` are sympy's Min/Max there).
SAFE_BUILTINS = frozenset({"abs", "pow", "round", "divmod", "sum", "min", "max"})
# The calls sympy's transformations write around names and numbers, taking a string literal.
STRING_TAKERS = frozenset({"Symbol", "Function", "Float"})
ALLOWED_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.Call,
    ast.Name,
    ast.Load,
    ast.Constant,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.keyword,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
)


@lru_cache(maxsize=1)
def parse_namespace() -> dict:
    """The names `parse_expr` evaluates with when given none: sympy's, builtin functions, and
    sympy's Min/Max as `min`/`max` (as sympy 1.14's `parse_expr` builds them)."""
    namespace: dict = {}
    exec("from sympy import *", namespace)  # noqa: S102 (a fixed import, as parse_expr does)
    for name, obj in vars(builtins).items():
        if isinstance(obj, types.BuiltinFunctionType):
            namespace[name] = obj
    namespace["max"], namespace["min"] = sympy.Max, sympy.Min
    return namespace


@lru_cache(maxsize=1)
def _allowed_names() -> frozenset[str]:
    allowed = set(SAFE_FUNCTIONS | SAFE_BUILTINS)
    for name, obj in parse_namespace().items():
        is_class = isinstance(obj, type) and issubclass(obj, sympy.Basic)
        if not name.startswith("_") and (is_class or isinstance(obj, sympy.Basic)):
            allowed.add(name)
    return frozenset(allowed)


def check_source(code: str) -> None:
    """Raise `UnsafeAnswer` unless `code` (what `stringify_expr` wrote) only builds sympy
    objects. Source Python cannot compile is left alone: `eval` fails on it before running
    anything, as it does in OLMES."""
    try:
        tree = ast.parse(code, mode="eval")
    except (SyntaxError, ValueError):
        return
    allowed = _allowed_names()
    for node in ast.walk(tree):
        if not isinstance(node, ALLOWED_NODES):
            raise UnsafeAnswer(f"{type(node).__name__} is not evaluated")
        if isinstance(node, ast.Name) and node.id not in allowed:
            raise UnsafeAnswer(f"name {node.id!r} is not evaluated")
        if isinstance(node, ast.Call):
            _check_call(node)
        if isinstance(node, ast.Constant) and not isinstance(
            node.value, (int, float, complex, str, type(None))
        ):
            raise UnsafeAnswer(f"constant {node.value!r} is not evaluated")
    strings = {
        id(n) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    if strings - _taken_strings(tree):
        raise UnsafeAnswer("a string literal is not evaluated")


def _check_call(node: ast.Call) -> None:
    """A call is of a name, or of `Function('f')` (sympy's spelling of an unknown f(x))."""
    func = node.func
    if isinstance(func, ast.Name):
        return
    if (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "Function"
    ):
        return
    raise UnsafeAnswer("a call of a computed function is not evaluated")


def _taken_strings(tree: ast.Expression) -> set[int]:
    """The string literals that are the only argument of a `STRING_TAKERS` call, or the whole
    answer or items of it as a tuple/list/set: these are only ever compared with `==`, which
    never hands a string to sympy's parser (OLMES then says "not equal", not "parse error")."""
    taken, containers = set(), [tree.body]
    while containers:
        node = containers.pop()
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            containers.extend(node.elts)
        elif isinstance(node, ast.Constant):
            taken.add(id(node))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in STRING_TAKERS
            and len(node.args) == 1
            and not node.keywords
            and isinstance(node.args[0], ast.Constant)
        ):
            taken.add(id(node.args[0]))
    return taken


def guarded_parse_expr(text: str):
    """`sympy.parse_expr(text)` (OLMES's call: default transformations, no local names), after
    `check_source` has accepted what it would evaluate. Tokenizer errors are parse_expr's own."""
    code = stringify_expr(text, {}, dict(parse_namespace()), standard_transformations)
    check_source(code)
    return parse_expr(text)
