"""A candidate's exception on the trusted side: the candidate names its exception's classes
(its MRO, as "module:qualname"), and the test gets an instance of the first of them that is a
built-in or standard-library exception class already loaded in the trusted worker, with the
candidate's message. Nothing is imported or looked up outside the standard library on a
candidate's word.
"""

from __future__ import annotations

import sys

from .budget import CandidateFailure

# StopIteration raised into a test's generator or map() would end it early and silently: a
# candidate's (or its subclass's) is a failure, as is anything whose classes name no standard one
_NEVER_RAISED = frozenset({"builtins:StopIteration", "builtins:StopAsyncIteration"})


def as_exception(parts: list[str]) -> BaseException:
    """The candidate's exception as the first class of its MRO that the trusted side has:
    a built-in or standard-library exception class (so `except ValueError` catches a
    UnicodeDecodeError, a json.JSONDecodeError or a candidate's own ValueError subclass, as
    in one process), with the candidate's message; else a CandidateFailure."""
    name, text, *classes = parts
    for qualified in classes or [f"builtins:{name}"]:
        if qualified in _NEVER_RAISED:
            break
        exception = _standard_exception(qualified, f"[candidate] {text}")
        if exception is not None:
            return exception
    return CandidateFailure("error", f"candidate raised {name}: {text}")


def _standard_exception(qualified: str, message: str) -> Exception | None:
    """An instance of the standard class named "module:qualname" (a module already loaded
    here; nothing is imported on a candidate's word), or None."""
    module, _, qualname = qualified.partition(":")
    if module != "builtins" and module.partition(".")[0] not in sys.stdlib_module_names:
        return None
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None) if part and not part.startswith("_") else None
    if not (isinstance(found, type) and issubclass(found, Exception)):
        return None
    if found in _PLACEHOLDERS:  # the Unicode errors take the failing text and positions
        return found(*_PLACEHOLDERS[found], message)
    try:
        exception = found(message)
    except Exception:  # noqa: BLE001 (one that takes other arguments, e.g. JSONDecodeError)
        try:
            exception = found.__new__(found)
            BaseException.__init__(exception, message)
        except Exception:  # noqa: BLE001 (then its next base)
            return None
    return exception


_PLACEHOLDERS = {
    UnicodeDecodeError: ("utf-8", b"", 0, 0),
    UnicodeEncodeError: ("utf-8", "", 0, 0),
    UnicodeTranslateError: ("", 0, 0),
}
