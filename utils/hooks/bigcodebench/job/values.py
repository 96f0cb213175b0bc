"""Values the program made: the check behind BigCodeBench's `pass_at_1_real_values`.

This file's source is executed by the BigCodeBench runner (`job/runner.py`) into a
namespace of its own, in the candidate process, like the guard's. A test compares what
`task_func` returned in the candidate's interpreter, so an object whose class the program wrote
answers the comparison itself: `__eq__` saying True, `__len__` saying 3, `__class__` saying
DataFrame. BigCodeBench's harness and OLMES's service count such a pass (so does the faithful
`pass_at_1`); this check says which values were of a class the program made, so that the
verdict beside it (`pass_at_1_real_values`) does not.

`checker(...)` returns `check(value)`: "" or a note naming the first object, reached from
`value` through the builtin containers, numpy object arrays and pandas objects of object dtype,
whose class (or a class in its MRO) came into being after the runner's snapshot of every class
(`known_classes`, taken before the candidate's code exists) and is not

- a class whose code is all library code (files under the installation) or the test's, with no
  comparison method taken from elsewhere (`__eq__ = int.__ne__`), or one found under its own
  name in a library module (a class a library made at run time, e.g. on a lazy import);
- `unittest.mock`'s per-mock class, unless one of its comparison methods was configured (a
  test's own mocks come back through `task_func`);

or which existed then but lost a method since or gained one the solution wrote (a patch the
test made, while in place, aside).

The runner calls it on what `task_func` returns and on the arguments of every `unittest`
assertion. It calls nothing of the candidate's: classes are read through `type`'s own
descriptors, containers through their base types' C methods.
"""

import sys
import types

# the methods through which a test's checks ask an object about itself
COMPARING = frozenset(
    [
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__bool__",
        "__len__",
        "__iter__",
        "__contains__",
        "__hash__",
        "__int__",
        "__float__",
        "__index__",
        "__complex__",
        "__round__",
        "__abs__",
        "__sub__",
        "__str__",
        "__repr__",
        "__format__",
        "__getattr__",
        "__getattribute__",
        "__class__",
        "__array__",
        "__array_ufunc__",
        "__array_function__",
        "__array_interface__",
        "__array_priority__",
        "__instancecheck__",
    ]
)
# methods that only build an object: what they run cannot answer a test's questions later
CONSTRUCTION = frozenset({"__new__", "__init__", "__post_init__", "__init_subclass__"})
WALKED = 100_000  # objects looked at per value, at most
_MRO = type.__dict__["__mro__"].__get__
_DICT = type.__dict__["__dict__"].__get__
_QUALNAME = type.__dict__["__qualname__"].__get__
_BASES = type.__dict__["__bases__"].__get__
_MODULE = type.__dict__["__module__"].__get__
_SUBCLASSES = type.__subclasses__
_WRAPPED = (classmethod, staticmethod)
_FUNCTION = types.FunctionType
_PLAIN = frozenset({int, float, complex, bool, str, bytes, type(None)})


def known_classes():
    """{id: (class, its methods)} of every class that exists now (walked down from `object`),
    its methods being the entries of its namespace that run code (`_runs_code`)."""
    known, pending = {}, [object]
    while pending:
        cls = pending.pop()
        if id(cls) not in known:
            space = _DICT(cls)
            known[id(cls)] = cls, {k: v for k, v in list(space.items()) if _runs_code(v)}
            pending.extend(_SUBCLASSES(cls))
    return known


def _runs_code(value):
    return type(value) in (_FUNCTION, classmethod, staticmethod, property) or (
        callable(value) and type not in _MRO(type(value))
    )


def _codes(space, known):
    """(code objects of the methods a class namespace holds, whether it holds something else
    that runs code: a callable or descriptor that is no plain function, or an object of a
    class made since `known` was taken). Construction (`CONSTRUCTION`) is left out."""
    codes, lifted = [], False
    for key, value in list(space.items()):
        kind = type(value)
        if key in CONSTRUCTION:
            continue
        if kind in _WRAPPED:
            value = value.__func__
            kind = type(value)
        if kind is property:
            parts = [p for p in (value.fget, value.fset, value.fdel) if p is not None]
            codes += [p.__code__ for p in parts if type(p) is _FUNCTION]
            lifted = lifted or any(type(p) is not _FUNCTION for p in parts)
        elif kind is _FUNCTION:
            codes.append(value.__code__)
        elif _old(known, kind) is None or callable(value) and type not in _MRO(kind):
            lifted = True
    return codes, lifted


def _old(known, cls):
    """`cls`'s methods as they were when `known` was taken, or None if it did not exist."""
    entry = known.get(id(cls))
    return entry[1] if entry is not None and entry[0] is cls else None


def checker(known, test_from, roots, mock, packages, allowed):
    """`check(value)` (module docstring). `test_from`: the first line of the test in
    `__test__.py` (before it, the solution); `roots`: folders of library code (a tuple of
    str); `mock`: `unittest.mock`, read now; `packages`: `numpy_pandas_walker()`;
    `allowed(key, value)`: whether a patch the test made put `value` there."""
    mock_base, unset, mock_file = mock.NonCallableMock, mock.DEFAULT, mock.__file__
    mock_defaults, proxy = dict(mock._return_values), mock.MagicProxy

    def origin(code):
        name = code.co_filename
        if name == "__test__.py":
            return "test" if code.co_firstlineno >= test_from else "solution"
        if name.startswith("<frozen "):
            return "library"
        if name.startswith("<"):
            return "run time"
        return "library" if name.startswith(roots) else "elsewhere"

    def in_library_module(cls, space):
        """Whether `cls` is found under its own name in the library module it names."""
        name = _MODULE(cls)
        module = sys.modules.get(name) if type(name) is str else None
        if type(module) is not types.ModuleType:
            return False
        path, found = vars(module).get("__file__"), module
        if type(path) is not str or not path.startswith(roots):
            return False
        for part in _QUALNAME(cls).split("."):
            if type(found) is types.ModuleType:
                found = vars(found).get(part)
            else:
                found = _DICT(found).get(part) if type in _MRO(type(found)) else None
        return found is cls

    def configured(magic):
        """Whether a mock's magic method was told what to answer (a return value or side
        effect other than `unittest.mock`'s defaults, or an object it wraps)."""
        if mock_base not in _MRO(type(magic)):
            return False  # not looked up yet (`MagicProxy`) or not a mock at all
        own = object.__getattribute__(magic, "__dict__")
        name, value = own.get("_mock_name"), own.get("_mock_return_value", unset)
        usual = mock_defaults.get(name, unset) if type(name) is str else unset
        same = value is usual or (
            type(value) is type(usual) in (int, bool, float, complex) and value == usual
        )
        effect = own.get("_mock_side_effect")
        own_effect = type(effect) is _FUNCTION and effect.__code__.co_filename == mock_file
        return not same or not (effect is None or own_effect) or own.get("_mock_wraps") is not None

    def mock_class(cls, space):
        """Whether `cls` is the class `unittest.mock` makes for each mock (on a mock class that
        existed before), holding only its magic methods, none of them configured."""
        bases = _BASES(cls)
        if len(bases) != 1 or _old(known, bases[0]) is None or mock_base not in _MRO(bases[0]):
            return False
        for key, value in list(space.items()):
            if key in ("__doc__", "__module__") or type(value) is proxy:
                continue
            if mock_base not in _MRO(type(value)) or key in COMPARING and configured(value):
                return False
        return True

    def made(cls):
        space = _DICT(cls)
        if mock_class(cls, space):
            return False
        codes, lifted = _codes(space, known)
        where = {origin(code) for code in codes}
        if "solution" in where or "elsewhere" in where:
            return True
        return (lifted or "run time" in where) and not in_library_module(cls, space)

    def changed(cls, methods):
        """Whether a class that existed before lost a method, or has one the program wrote."""
        space = _DICT(cls)
        for key, value in methods.items():
            now = space.get(key)
            if now is not value and not allowed(key, now):
                return True
        added = {
            k: v
            for k, v in list(space.items())
            if k not in methods and _runs_code(v) and not allowed(k, v)
        }
        codes, lifted = _codes(added, known)
        return lifted or bool({origin(code) for code in codes} & {"solution", "elsewhere"})

    def class_note(cls, judged):
        for each in _MRO(cls):
            if id(each) not in judged:
                methods = _old(known, each)
                if methods is None and made(each):
                    judged[id(each)] = f"{_QUALNAME(each)} (a class the program made)"
                elif methods is not None and changed(each, methods):
                    judged[id(each)] = f"{_QUALNAME(each)} (a class the program changed)"
                else:
                    judged[id(each)] = ""
            if judged[id(each)]:
                return judged[id(each)]
        return ""

    def inside(value, mro):
        """The objects a container holds, read with its base type's own methods."""
        for base in (list, tuple, set, frozenset):
            if base in mro:
                return list(base.__iter__(value))
        if dict in mro:
            return [*dict.keys(value), *dict.values(value)]
        return packages.get("walk", lambda v, m: [])(value, mro)

    def check(value):
        pending, seen, budget, judged = [value], set(), WALKED, {}
        while pending and budget > 0:
            budget -= 1
            item = pending.pop()
            if type(item) in _PLAIN:
                continue
            if id(item) in seen:
                continue
            seen.add(id(item))
            cls = type(item)
            note = class_note(cls, judged)
            if note:
                return note
            try:
                pending += inside(item, _MRO(cls))
            except Exception:  # noqa: BLE001, S112 (a container that cannot be read: not walked)
                continue
        return ""

    return check


def _getter(cls, name):
    """`get(obj)`: the attribute `name` of `obj` as `cls`'s own class tree defines it now."""
    for each in _MRO(cls):
        if name in _DICT(each):
            found = _DICT(each)[name]
            return lambda obj: found.__get__(obj, cls)
    raise LookupError(name)


def numpy_pandas_walker():
    """`walk(value, mro)` for numpy arrays and pandas objects of object dtype, with their
    classes' own functions taken now (before the candidate runs); {} if numpy is not loaded
    (pandas left out if its classes are not where this looks)."""
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return {}
    ndarray, anything = numpy.ndarray, numpy.dtype(object)
    dtype_of, view, ravel, tolist = (
        _getter(ndarray, "dtype"), ndarray.view, ndarray.ravel, ndarray.tolist
    )  # fmt: skip
    pandas, parts = sys.modules.get("pandas"), None
    try:
        frame, series, index = pandas.DataFrame, pandas.Series, pandas.Index
        parts = {
            (frame, name): _getter(frame, name) for name in ("values", "dtypes", "index", "columns")
        }
        parts.update({(series, n): _getter(series, n) for n in ("values", "index")})
        parts[index, "values"] = _getter(index, "values")
    except (AttributeError, LookupError):  # not loaded, or not as this pandas looks
        frame = series = index = None

    def walk(value, mro):
        if ndarray in mro:
            if not dtype_of(value).hasobject:
                return []
            return tolist(ravel(view(value, ndarray))[:WALKED])
        if frame in mro:
            dtypes = tolist(view(parts[series, "values"](parts[frame, "dtypes"](value)), ndarray))
            objects = any(dtype == anything for dtype in dtypes)
            shown = [parts[frame, "index"](value), parts[frame, "columns"](value)]
            return shown + ([parts[frame, "values"](value)] if objects else [])
        if series in mro:
            return [parts[series, "values"](value), parts[series, "index"](value)]
        if index in mro:
            return [parts[index, "values"](value)]
        return []

    return {"walk": walk}
