"""What only the checks of a BigCodeBench test read, taken out (`answerless`).

Run on the test once its assertions are gone, until nothing changes: assignments whose names
(or `self.` attributes) nothing reads, in their scope, but the statements that build them
(`x[k] = v`, `x.append(v)`, `x = x.pivot(...)`); the test's helper functions and classes no one
calls, and the arguments and defaults of its helpers for parameters they no longer read; the
columns of a literal table of cases the loop does not read (`blanks`); prints;
statements left with nothing to do. What calls `task_func` or makes a mock stays (the replay
finds the test's mocks by the order it made them), and so do the test's other classes whole
(the program reads their attributes and calls their methods, not the test), and the value of an
assignment that calls anything but `PURE` functions (its effects: files, random draws).
"""

import ast
from typing import NamedTuple

from .blanks import blank_columns, called, calls, calls_entry, statement_lists, unused_arguments

KEEP_METHODS = ("setUp", "tearDown", "setUpClass", "tearDownClass", "setUpModule")
MUTATORS = ("append", "extend", "insert", "update", "add", "setdefault")  # (builds a value)
# Calls taken as free of effects: an assignment nothing reads goes when its value calls only
# these; otherwise its value stays, as a statement (`old = self.make_file(...)` makes a file,
# `expected = np.random.rand(3)` moves the random state the next inputs are drawn from).
PURE_NAMES = (
    "DataFrame Series Index MultiIndex array asarray Timestamp Timedelta to_datetime "
    "date_range datetime date time timedelta list dict set tuple frozenset str int float "
    "bool bytes range zip enumerate sorted reversed len sum min max abs round join format "
    "copy deepcopy Counter OrderedDict defaultdict sqrt mean median std var pivot "
    "pivot_table fillna astype reset_index set_index sort_values sort_index rename drop "
    "groupby agg get keys values items split strip lower upper replace encode decode dumps "
    "loads isclose allclose arange linspace zeros ones full eye concatenate reshape tolist "
    "to_numpy to_dict unique value_counts nunique count cumsum diff corr transpose exp log "
    "floor ceil basename dirname splitext exists isfile isdir getsize b64encode b64decode "
    "hexdigest sha256 md5 compile findall normpath abspath realpath relpath isabs lstrip "
    "rstrip startswith endswith title capitalize zfill casefold find strptime strftime "
    "isoformat Decimal Path joinpath with_suffix fromkeys union intersection difference all "
    "any map filter digest read_csv read_json read_excel weekday isoweekday"
)
PURE = frozenset(PURE_NAMES.split())
FRESH_NAMES = (  # calls that return a new object, which no other name shares
    "DataFrame Series array list dict set Counter OrderedDict defaultdict copy deepcopy "
    "pivot pivot_table fillna astype reset_index sort_values sort_index tolist to_dict"
)
FRESH = frozenset(FRESH_NAMES.split())
MOCK_MAKERS = ("mock", "Mock", "patch", "create_autospec")  # calls whose name holds one of these


class Reads(NamedTuple):
    """What a pass of `prune` knows of the test, for the statements of one scope."""

    names: set  # the names read in the scope, but by statements that only build them
    attributes: set  # attribute names read anywhere
    idle: set  # the test's functions that do nothing
    writers: dict  # statement id to the name it only builds (`_writes`)
    pure: set  # the calls free of effects: `PURE`, and the test's functions calling only those


def prune(tree, callers):
    """One pass over the tree taking out what nothing reads (module docstring); whether it
    took anything out."""
    # the test's other classes (a mock response, a fake file) are kept whole: the program
    # reads their attributes and calls their methods, not the test
    others = {
        id(node)
        for cls in ast.walk(tree)
        if isinstance(cls, ast.ClassDef) and cls.name != "TestCases"
        for node in ast.walk(cls)
    }
    helpers = [function for function in _functions(tree) if id(function) not in others]
    changed = unused_arguments(tree, helpers, callers)
    scope_of = _scopes(tree)
    local = _locals(tree, scope_of)
    pure = _pure(helpers)
    writers = {
        id(s): name
        for s in ast.walk(tree)
        if (name := _writes(s, pure, local.get(scope_of.get(id(s), id(tree)), set())))
    }
    attributes, scopes = _reads(tree, writers, scope_of)
    idle = {node.name for node in helpers if _empty(node.body)}  # calls doing nothing
    for owner, field in statement_lists(tree, others):
        body = getattr(owner, field)
        if not body:
            continue
        kept = [
            part
            for s in body
            if not isinstance(s, ast.Pass)
            for part in _pruned(
                s, owner, Reads(scopes(s), attributes, idle, writers, pure), callers
            )
        ]
        if not kept and field == "body":  # (a body is never empty: its `pass`)
            kept = [next((s for s in body if isinstance(s, ast.Pass)), ast.Pass())]
        for loop in (s for s in kept if isinstance(s, ast.For)):
            changed |= blank_columns(loop, tree, scopes(loop))
        if len(kept) != len(body) or any(a is not b for a, b in zip(kept, body)):
            changed = True
            setattr(owner, field, kept)
    return changed


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _scopes(tree):
    """Node id to the id of the innermost function it is in (absent: the module)."""
    return {id(n): id(f) for f in _functions(tree) for n in ast.walk(f) if n is not f}


def _locals(tree, scope_of):
    """Scope id to the names only ever bound in it to fresh values (`_fresh`: `x = []`,
    `x = pd.DataFrame(...)`): values the test built there, which no other name shares; not a
    parameter (a mock a patch passed in), a module (`os.environ`) or what a call returned
    (`sheet = workbook.create_sheet()`: appending to it changes the workbook)."""
    assigned, fresh, other = set(), {}, set()  # (`other`: bound some other way, or a parameter)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                assigned.add(id(target))
                key = (scope_of.get(id(node), id(tree)), target.id)
                fresh[key] = fresh.get(key, True) and _fresh(node.value)
    for node in ast.walk(tree):
        stored = isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
        if isinstance(node, ast.arg) or stored and id(node) not in assigned:
            other.add((scope_of.get(id(node), id(tree)), getattr(node, "id", None) or node.arg))
    local = {}
    for (scope, name), is_fresh in fresh.items():
        if is_fresh and (scope, name) not in other:
            local.setdefault(scope, set()).add(name)
    return local


def _fresh(value):
    """Whether `value` is a new object of the test's: a display, a comprehension, or the
    result of a `FRESH` constructor."""
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    return isinstance(value, ast.Call) and called(value) in FRESH


def _reads(tree, writers, scope_of):
    """The attribute names read anywhere (of any object: a `self.expected` is kept if anything
    reads an attribute `expected`), and a function giving, for a statement, the names read in
    its scope (the function it is in, or the module) but in statements that only build them
    (`writers`: statement id to the name it builds)."""
    own = {
        id(node)
        for statement in ast.walk(tree)
        if id(statement) in writers
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and node.id == writers[id(statement)]
    }
    attributes = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store)
    }
    read_in = {
        id(scope): {
            node.id
            for node in ast.walk(scope)
            if isinstance(node, ast.Name)
            and not isinstance(node.ctx, ast.Store)
            and id(node) not in own
        }
        for scope in [tree, *_functions(tree)]
    }
    return attributes, lambda statement: read_in[scope_of.get(id(statement), id(tree))]


def _writes(statement, pure, local):
    """The name `statement` only builds, or None: `x = f(x)`, `x[k] = v`, `x += v`,
    `x.append(v)` (and the other mutators of lists, dicts and sets), `x.sort_values(...,
    inplace=True)`, where `x` is one of the scope's `local` values, calling nothing but
    `pure` functions on the way (an attribute set is kept: it may configure a mock the
    program uses)."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func, keywords = statement.value.func, statement.value.keywords
        in_place = any(
            k.arg == "inplace" and getattr(k.value, "value", 0) is True for k in keywords
        )
        if not (isinstance(func, ast.Attribute) and (func.attr in MUTATORS or in_place)):
            return None
        targets = [func.value]
    elif isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = getattr(statement, "targets", None) or [statement.target]
    else:
        return None
    roots = {_root(target) for target in targets}
    mutator = statement.value if isinstance(statement, ast.Expr) else None  # (`x.append`)
    effects = any(called(c) not in pure for c in calls(statement) if c is not mutator)
    if len(roots) != 1 or not roots <= local or effects:
        return None
    return roots.pop()


def _root(target):
    """The name at the root of `x`, `x[k]`, `x[k][j]`, or None."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _pruned(statement, owner, reads, callers):
    """`statement` as it stays: itself, nothing (`_idle`), or the value of an assignment
    nothing reads, as a statement, when computing it has effects (`PURE`)."""
    if not _idle(statement, owner, reads, callers):
        return [statement]
    value = getattr(statement, "value", None)
    assigned = isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign))
    if assigned and value is not None and any(called(c) not in reads.pure for c in calls(value)):
        return [ast.Expr(value)]
    return []


def _pure(helpers):
    """`PURE`, and the test's functions that call nothing else and set nothing but their own
    names (`def expected_for(n): return n * 14`)."""
    pure, grew = set(PURE), True
    while grew:
        grew = False
        for function in helpers:
            if (
                function.name not in pure
                and all(called(call) in pure for call in calls(function))
                and not any(
                    isinstance(node, (ast.With, ast.Global, ast.Nonlocal, ast.Yield))
                    or isinstance(node, (ast.Attribute, ast.Subscript))
                    and isinstance(node.ctx, ast.Store)
                    for node in ast.walk(function)
                )
            ):
                pure.add(function.name)
                grew = True
    return pure


def _idle(statement, owner, reads, callers):
    """Whether `statement` (in `owner`'s body) can go: nothing reads what it binds (`reads`:
    the names and attributes read, the test's functions that do nothing, the statements that
    only build a value, `_writes`), and it neither
    calls `task_func` nor makes a mock; or it only prints, or calls one that does nothing."""
    names, attributes, idle, writers = reads.names, reads.attributes, reads.idle, reads.writers
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return True  # a docstring (it may say what the answer is)
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        if isinstance(owner, ast.ClassDef):  # (TestCases: `others` are not pruned)
            kept = statement.name.startswith("test") or statement.name in KEEP_METHODS
            return not kept and statement.name not in names | attributes
        if isinstance(owner, ast.Module):
            return statement.name not in names | attributes | {"TestCases"}
        return statement.name not in names
    if calls_entry(statement, callers) or _makes_mock(statement):
        return False
    written = writers.get(id(statement))
    read = names | attributes if isinstance(owner, ast.ClassDef) else names  # (`self.name`)
    if written is not None and written not in read:
        return True  # building a value nothing else reads
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        return called(call) in idle or isinstance(call.func, ast.Name) and call.func.id == "print"
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = getattr(statement, "targets", None) or [statement.target]
        bound = [key for target in targets for key in _bound(target)]
        if isinstance(owner, ast.ClassDef):  # a class attribute, read as `self.name`
            return None not in bound and not any(key in names | attributes for _, key in bound)
        return None not in bound and not any(
            key in (attributes if attribute else names) for attribute, key in bound
        )
    if isinstance(statement, (ast.For, ast.While, ast.If)):
        return _empty(statement.body) and _empty(statement.orelse)
    if isinstance(statement, ast.Try):
        return _empty(statement.body) and _empty(statement.finalbody)
    return False


def _bound(target):
    """What an assignment target binds: (False, name), (True, attribute of self or cls), or
    None for anything else (a subscript, another object's attribute: kept)."""
    if isinstance(target, ast.Name):
        return [(False, target.id)]
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return [(True, target.attr)] if target.value.id in ("self", "cls") else [None]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [key for element in target.elts for key in _bound(element)]
    if isinstance(target, ast.Starred):
        return _bound(target.value)
    return [None]


def _makes_mock(statement):
    return any(any(maker in called(call) for maker in MOCK_MAKERS) for call in calls(statement))


def _empty(body):
    return all(isinstance(statement, ast.Pass) for statement in body)
