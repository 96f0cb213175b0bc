"""What only the checks of a BigCodeBench test read, taken out (`bigcodebench_answerless`).

Run on the test once its assertions are gone, until nothing changes: assignments whose names
(or `self.` attributes) nothing reads, in their scope, but the statements that build them
(`x[k] = v`, `x.append(v)`, `x = x.pivot(...)`); the test's helper functions and classes no one
calls, and the arguments and defaults of its helpers for parameters they no longer read; the
columns of a literal table of cases the loop does not read; prints; statements left with
nothing to do. What calls `task_func` or makes a mock stays (the replay finds the test's mocks
by the order it made them), and so do the test's other classes whole (the program reads their
attributes and calls their methods, not the test).
"""

import ast

KEEP_METHODS = ("setUp", "tearDown", "setUpClass", "tearDownClass", "setUpModule")
MUTATORS = ("append", "extend", "insert", "update", "add", "setdefault")  # (builds a value)
MOCK_MAKERS = ("mock", "Mock", "patch", "create_autospec")  # calls whose name holds one of these


def split_pairs(tree):
    """`a, b = x, y` as `a = x` and `b = y` (so that each can go alone), where no target is
    read on the right."""
    for owner in [n for n in ast.walk(tree) if isinstance(getattr(n, "body", None), list)]:
        for field in ("body", "orelse", "finalbody"):
            body = getattr(owner, field, None)
            if isinstance(body, list):
                setattr(owner, field, [part for s in body for part in _pairs(s)])


def _pairs(statement):
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return [statement]
    target, value = statement.targets[0], statement.value
    if not (
        isinstance(target, ast.Tuple)
        and isinstance(value, ast.Tuple)
        and len(target.elts) == len(value.elts)
        and all(isinstance(t, ast.Name) for t in target.elts)
    ):
        return [statement]
    read = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    if read & {t.id for t in target.elts}:
        return [statement]
    return [ast.Assign(targets=[t], value=v) for t, v in zip(target.elts, value.elts)]


def calls(node):
    """The calls inside `node`."""
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def called(call):
    """The name a call is made by: `f(...)` and `x.f(...)` give "f"."""
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def calls_entry(node, callers):
    """Whether `node` calls one of `callers` (`task_func`, or a function that calls it)."""
    return any(called(call) in callers for call in calls(node))


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
    helpers = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in others
    ]
    changed = _unused_arguments(tree, helpers, callers)
    writers = {id(s): name for s in ast.walk(tree) if (name := _writes(s, callers))}
    attributes, scopes = _reads(tree, writers)
    idle = {node.name for node in helpers if _empty(node.body)}  # calls doing nothing
    for owner in [tree, *(n for n in ast.walk(tree) if hasattr(n, "body") and id(n) not in others)]:
        for field in ("body", "orelse", "finalbody"):
            body = getattr(owner, field, None)
            if not isinstance(body, list) or not body:
                continue
            kept = [
                s
                for s in body
                if not isinstance(s, ast.Pass)
                and not _idle(s, owner, (scopes(s), attributes, idle), callers)
            ]
            if not kept and field == "body":  # (a body is never empty: its `pass`)
                kept = [next((s for s in body if isinstance(s, ast.Pass)), ast.Pass())]
            for loop in (s for s in kept if isinstance(s, ast.For)):
                changed |= _blank_columns(loop, tree, scopes(loop))
            if len(kept) != len(body) or any(a is not b for a, b in zip(kept, body)):
                changed = True
                setattr(owner, field, kept)
    return changed


def _reads(tree, writers):
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
    functions = [
        n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    scope_of = {id(n): id(f) for f in functions for n in ast.walk(f) if n is not f}  # innermost
    read_in = {
        id(scope): {
            node.id
            for node in ast.walk(scope)
            if isinstance(node, ast.Name)
            and not isinstance(node.ctx, ast.Store)
            and id(node) not in own
        }
        for scope in [tree, *functions]
    }
    return attributes, lambda statement: read_in[scope_of.get(id(statement), id(tree))]


def _writes(statement, callers):
    """The name `statement` only builds, or None: `x = f(x)`, `x[k] = v`, `x += v`,
    `x.append(v)` (and the other mutators of lists, dicts and sets), `x.sort_values(...,
    inplace=True)`, calling no `task_func`."""
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
    if len(roots) != 1 or None in roots or calls_entry(statement, callers):
        return None
    return roots.pop()


def _root(target):
    """The name at the root of `x`, `x[k]`, `x.a[k]`, or None."""
    while isinstance(target, (ast.Subscript, ast.Attribute)):
        target = target.value
    return target.id if isinstance(target, ast.Name) and target.id not in ("self", "cls") else None


def _idle(statement, owner, reads, callers):
    """Whether `statement` (in `owner`'s body) can go: nothing reads what it binds (`reads`:
    the names and attributes read, and the test's functions that do nothing), and it neither
    calls `task_func` nor makes a mock; or it only prints, or calls one that does nothing."""
    names, attributes, idle = reads
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
    written = _writes(statement, callers)
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


def _blank_columns(loop, tree, names):
    """`for data, expected in cases:` whose body does not read `expected`: that column of the
    literal table `cases` (a literal in the loop, or bound once and read only there, to a name
    or an attribute of self) made None; `zip(data, expected)`'s argument made an endless run of
    zeros (`iter(int, 1)`); whether anything changed."""
    if not isinstance(loop.target, ast.Tuple):
        return False
    unused = [
        i
        for i, element in enumerate(loop.target.elts)
        if isinstance(element, ast.Name) and element.id not in names
    ]
    if not unused or len(unused) == len(loop.target.elts):
        return False
    source = loop.iter
    if (
        isinstance(source, ast.Call)
        and called(source) == "zip"
        and isinstance(source.func, ast.Name)
    ):
        return _zeroed(source.args, unused)
    if isinstance(source, ast.Call) and called(source) == "items" and not source.args:
        table = _table(source.func.value, tree)
        return (
            isinstance(table, ast.Dict)
            and unused == [1]
            and _nulled(table.values, range(len(table.values)))
        )
    table = _table(source, tree)
    if isinstance(table, (ast.List, ast.Tuple)):
        rows = [row for row in table.elts if isinstance(row, (ast.Tuple, ast.List))]
        if len(rows) == len(table.elts) and all(len(r.elts) == len(loop.target.elts) for r in rows):
            return any([_nulled(row.elts, unused) for row in rows])  # noqa: C419 (every row)
    return False


def _table(source, tree):
    """The literal a loop runs over: itself, or the one assignment of the name (or attribute)
    it reads, when nothing else reads that name."""
    if isinstance(source, (ast.List, ast.Tuple)):
        return source
    key = source.id if isinstance(source, ast.Name) else getattr(source, "attr", None)
    if key is None or isinstance(source, ast.Call):
        return None
    reads = [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.Name, ast.Attribute))
        and not isinstance(n.ctx, ast.Store)
        and (n.id if isinstance(n, ast.Name) else n.attr) == key
    ]
    bindings = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and (getattr(n.targets[0], "id", None) or getattr(n.targets[0], "attr", None)) == key
    ]
    return bindings[0] if len(reads) == 1 and len(bindings) == 1 else None


def _nulled(elements, positions, field=None):
    """`elements[i]` (or its `field`) made None at each of `positions`; whether any changed."""
    changed = False
    for i in positions:
        value = getattr(elements[i], field) if field else elements[i]
        if not (isinstance(value, ast.Constant) and value.value is None):
            if field:
                setattr(elements[i], field, ast.Constant(None))
            else:
                elements[i] = ast.Constant(None)
            changed = True
    return changed


def _zeroed(arguments, positions):
    changed = False
    for i in positions:
        if i < len(arguments) and ast.unparse(arguments[i]) != "iter(int, 1)":
            arguments[i], changed = ast.parse("iter(int, 1)", mode="eval").body, True
    return changed


def _unused_arguments(tree, helpers, callers):
    """Arguments of the calls of the test's own functions (`helpers`) for parameters their
    body no longer reads (`self.check(data, expected)`) made None; whether any was."""
    unused = {}
    for function in helpers:
        read = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
        params = [*function.args.posonlyargs, *function.args.args]
        method = params and params[0].arg in ("self", "cls")
        unused[function.name] = (
            [i - method for i, p in enumerate(params) if p.arg not in read and i >= method],
            {p.arg for p in [*params, *function.args.kwonlyargs] if p.arg not in read},
        )
    changed = False
    for function in helpers:  # the defaults of those parameters too
        arguments, names = function.args, unused[function.name][1]
        positional = [*arguments.posonlyargs, *arguments.args]
        with_default = positional[len(positional) - len(arguments.defaults) :]
        for values, params in (
            (arguments.defaults, with_default),
            (arguments.kw_defaults, arguments.kwonlyargs),
        ):
            positions = [
                i for i, p in enumerate(params) if p.arg in names and values[i] is not None
            ]
            changed |= _nulled(values, positions)
    for call in calls(tree):
        if called(call) in unused and not any(isinstance(a, ast.Starred) for a in call.args):
            positions, keywords = unused[called(call)]
            arguments = [i for i in positions if i < len(call.args)]
            if not calls_entry(ast.Tuple(elts=[call.args[i] for i in arguments]), callers):
                changed |= _nulled(call.args, arguments)
            for keyword in call.keywords:
                if keyword.arg in keywords and not calls_entry(keyword.value, callers):
                    changed |= _nulled([keyword], [0], field="value")
    return changed
