"""BigCodeBench tests that run data the program wrote as code: never replayed.

The replay (`replay.run`) puts back the files the record says the program left, and
the genuine test then reads them. A test that deserialises such a file with a loader that can
run code (a pickle: its `__reduce__` calls anything, e.g. `unittest.TestCase.assertEqual =
print`), evaluates or imports it, would run what the record chose inside the replay: its
verdict would be the record's. Such tests are found in the test's syntax tree (each call's
dotted name, through the test's imports: `from pickle import load as l`, `import joblib as
jl`) and reported not replayable, with the call and its line; their first run's verdict is
as before. What counts (`CODE_LOADERS`, `_runs_code`): pickle and its relatives, joblib,
dill, cloudpickle, shelve, marshal, pandas' `read_pickle`, torch's `load`, numpy's `load`
with `allow_pickle` (unless False), yaml's loaders but the safe ones, `eval`, `exec`, `compile`, the
import machinery and `runpy`, and a test that puts on `sys.path` a folder other than a fixed
one outside `/tmp` (an `import` could then reach a file the program wrote). On the full set
(v0.1.2): one task, 832 (`pickle.load` of the file the program writes)."""

from __future__ import annotations

import ast

CODE_LOADERS = {
    "pickle.load",
    "pickle.loads",
    "pickle.Unpickler",
    "_pickle.load",
    "_pickle.loads",
    "dill.load",
    "dill.loads",
    "cloudpickle.load",
    "cloudpickle.loads",
    "joblib.load",
    "sklearn.externals.joblib.load",
    "shelve.open",
    "marshal.load",
    "marshal.loads",
    "pandas.read_pickle",
    "torch.load",
    "yaml.unsafe_load",
    "yaml.full_load",
    "yaml.load_all",
    "jsonpickle.decode",
    "eval",
    "exec",
    "compile",
    "__import__",
    "importlib.import_module",
    "importlib.reload",
    "importlib.util.spec_from_file_location",
    "importlib.machinery.SourceFileLoader",
    "imp.load_source",
    "runpy.run_path",
    "runpy.run_module",
    "sys.path.append",
    "sys.path.insert",
    "sys.path.extend",
}
SAFE_YAML = {"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"}


class NotReplayable(ValueError):
    """The test cannot be replayed (the reason: what it calls, where)."""


def check(test: str) -> None:
    """NotReplayable where `test` runs program-written data as code (`code_loading`)."""
    found = code_loading(test)
    if found:
        raise NotReplayable(f"the test runs data the program wrote as code: {found}")


def code_loading(test: str) -> str:
    """The first call in `test` that can run data as code, as "name (line N)", or ""."""
    tree = ast.parse(test)
    names = _imported(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _resolved(node.func, names)
            if name and _runs_code(name, node):
                return f"{name} (line {node.lineno})"
    return ""


def _imported(tree: ast.Module) -> dict[str, str]:
    """What each name the test imports stands for (`np`: numpy, `load`: pickle.load)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _resolved(func: ast.expr, names: dict[str, str]) -> str:
    """The dotted name a call's function stands for, through the imports, or ""."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return ""
    parts.append(names.get(func.id, func.id))
    return ".".join(reversed(parts))


def _runs_code(name: str, call: ast.Call) -> bool:
    if name == "numpy.load":
        return any(k.arg == "allow_pickle" and not _false(k.value) for k in call.keywords)
    if name == "yaml.load":
        loader = [k.value for k in call.keywords if k.arg == "Loader"] or call.args[1:2]
        return not loader or _last_name(loader[0]) not in SAFE_YAML
    if name.startswith("sys.path.") and call.args:  # a fixed folder a program cannot write
        folder = call.args[-1]
        fixed = isinstance(folder, ast.Constant) and isinstance(folder.value, str)
        if fixed and folder.value.startswith("/") and not folder.value.startswith("/tmp"):
            return False
    return name in CODE_LOADERS


def _false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and not node.value


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""
