"""OLMES's code sanitiser (`oe_eval/metrics/code_evals/sanitize.py`, itself BigCodeBench's
`sanitize.py`), which BigCodeBench tasks apply to every completion before calibration.
Behaviour read there and kept exactly, quirks included; the code is this module's own.

`sanitize(code, entry_point)`:
1. `code_extract`: of all runs of two or more consecutive lines of the stripped text that parse
   as Python, the one with the most non-blank lines (the first such run on ties); the first
   line when none parses.
2. With tree-sitter's Python grammar, the top-level statements of that run are kept: every
   import; and the class definitions, function definitions and plain assignments (the first
   of each name) that the entry point reaches through the identifiers they mention. Decorated
   definitions, `if __name__ ...` blocks and other statements are dropped.
3. Imports first, then the kept definitions in source order, joined by newlines; when that is
   empty, step 1 on the unstripped text.
"""

from __future__ import annotations

import ast
import re
import warnings
from functools import cache

_IMPORTS = ("import_statement", "import_from_statement")
_DEFINITIONS = ("class_definition", "function_definition")
# Completions are parsed under this name, so that what the compiler warns about in them (an
# invalid escape sequence in a dataset's prompt...) is not printed by the scoring process, once
# for every run of lines tried; warnings about any other source are left as they are.
_FILENAME = "<completion>"
warnings.filterwarnings("ignore", module=re.escape(_FILENAME))


def parses(code: str) -> bool:
    """OLMES's `syntax_check`, which also survives what `ast.parse` raises besides SyntaxError
    on odd text (null bytes, nesting too deep): such text does not parse."""
    try:
        ast.parse(code, _FILENAME)
    except (SyntaxError, MemoryError, ValueError, RecursionError):
        return False
    return True


def code_extract(text: str) -> str:
    """The longest (in non-blank lines) run of >= 2 consecutive lines that parses; ties go to
    the run found first scanning starts then ends in increasing order, as OLMES's double loop.
    Runs that cannot beat the best found so far are not parsed (same result, fewer parses)."""
    lines = text.split("\n")
    nonblank = [0]  # nonblank[k]: non-blank lines among lines[:k]
    for line in lines:
        nonblank.append(nonblank[-1] + bool(line.strip()))
    best, best_pair = 0, (0, 0)
    for i in range(len(lines)):
        if nonblank[-1] - nonblank[i] <= best:
            break  # no run starting here or later can have more non-blank lines
        for j in range(i + 1, len(lines)):
            count = nonblank[j + 1] - nonblank[i]
            if count > best and parses("\n".join(lines[i : j + 1])):
                best, best_pair = count, (i, j)
    return "\n".join(lines[best_pair[0] : best_pair[1] + 1])


@cache
def _parser():
    import tree_sitter_python
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_python.language()))


def _first_identifier(node) -> str | None:
    for child in node.children:
        if child.type == "identifier":
            return child.text.decode("utf8")
    return None


def _identifiers(node) -> set[str]:
    found, stack, seen = set(), [node], set()
    while stack:
        current = stack.pop()
        if current.id in seen:
            continue
        seen.add(current.id)
        for child in current.children:
            if child.type == "identifier":
                found.add(child.text.decode("utf8"))
            else:
                stack.append(child)
    return found


def _reachable(entry_point: str, definitions: list) -> set[str]:
    uses = {name: _identifiers(node) for name, node in definitions}
    reached, queue = {entry_point}, [entry_point]
    while queue:
        for name in uses.get(queue.pop(0), ()):
            if name not in reached:
                reached.add(name)
                queue.append(name)
    return reached


def target_code(code: str, entry_point: str | None) -> str:
    """Step 2: the imports and the definitions the entry point needs, or ""."""
    source = code_extract(code.strip()).encode("utf8")
    root = _parser().parse(source).root_node
    imports, definitions, names = [], [], set()
    for child in root.children:
        if child.type in _IMPORTS:
            imports.append(child)
            continue
        if child.type in _DEFINITIONS:
            node = child
        elif child.type == "expression_statement" and child.children[0].type == "assignment":
            node = child.children[0]
        else:
            continue
        name = _first_identifier(node)
        if name not in names:
            definitions.append((name, node))
            names.add(name)
    wanted = _reachable(entry_point, definitions) if entry_point else None
    kept = imports + [node for name, node in definitions if wanted is None or name in wanted]
    text = b"".join(source[node.start_byte : node.end_byte] + b"\n" for node in kept)
    return text[:-1].decode("utf8")


def sanitize(code: str, entry_point: str | None = None) -> str:
    """OLMES's `sanitize`: the target code, else the longest parsing run of the raw text."""
    return target_code(code, entry_point).strip() or code_extract(code)
