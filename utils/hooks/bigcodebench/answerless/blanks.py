"""Syntax helpers of `answerless`, and the values it makes None rather than removes:
the expected column of a literal table of cases, the arguments of a test's helper for the
parameters it no longer reads."""

import ast


def statement_lists(tree, skip=frozenset()):
    """Every list of statements in `tree` (the module's, and each `body`, `orelse` and
    `finalbody` inside it), as (owner, field) pairs, taken before any is changed; owners whose
    id is in `skip` left out."""
    return [
        (owner, field)
        for owner in ast.walk(tree)
        if id(owner) not in skip
        for field in ("body", "orelse", "finalbody")
        if isinstance(getattr(owner, field, None), list)
    ]


def split_pairs(tree):
    """`a, b = x, y` as `a = x` and `b = y` (so that each can go alone), where no target is
    read on the right."""
    for owner, field in statement_lists(tree):
        body = getattr(owner, field)
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


def blank_columns(loop, tree, names):
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
            and nulled(table.values, range(len(table.values)))
        )
    table = _table(source, tree)
    if isinstance(table, (ast.List, ast.Tuple)):
        rows = [row for row in table.elts if isinstance(row, (ast.Tuple, ast.List))]
        if len(rows) == len(table.elts) and all(len(r.elts) == len(loop.target.elts) for r in rows):
            return any([nulled(row.elts, unused) for row in rows])  # noqa: C419 (every row)
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


def nulled(elements, positions, field=None):
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


def unused_arguments(tree, helpers, callers):
    """Arguments of the calls of the test's own functions (`helpers`) for parameters their
    body no longer reads (`self.check(data, expected)`) made None; whether any was. Only for
    functions the test calls and nothing else: not one it hands over (an input of
    `task_func`, a mock's `side_effect`), whose signature the program may read."""
    targets = {id(call.func) for call in calls(tree)}
    handed = {
        node.id if isinstance(node, ast.Name) else node.attr
        for node in ast.walk(tree)
        if isinstance(node, (ast.Name, ast.Attribute))
        and isinstance(node.ctx, ast.Load)
        and id(node) not in targets
    }
    helpers = [function for function in helpers if function.name not in handed]
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
            changed |= nulled(values, positions)
    for call in calls(tree):
        if called(call) in unused and not any(isinstance(a, ast.Starred) for a in call.args):
            positions, keywords = unused[called(call)]
            arguments = [i for i in positions if i < len(call.args)]
            if not calls_entry(ast.Tuple(elts=[call.args[i] for i in arguments]), callers):
                changed |= nulled(call.args, arguments)
            for keyword in call.keywords:
                if keyword.arg in keywords and not calls_entry(keyword.value, callers):
                    changed |= nulled([keyword], [0], field="value")
    return changed
