"""What the `evalpack` command prints when things go wrong, and the noise it keeps quiet.

* An error the pack can name is one line on the console, `evalpack: error: <what, where>`; the
  traceback only with `--verbose` or `EVALPACK_TRACEBACK=1`. An unknown task gets "did you mean";
  a missing optional package the extra that installs it.
* Ctrl-C is one line too: what was kept and what a rerun sends (`ServedInterrupted` says it).
* lm-eval's warnings that mislead here are filtered: "Task 'X' overrides existing task" (an
  include path's task of a built-in's name; shown only when that task is requested), what a plain
  `lm_eval` run of the pack's tasks drops too (`lmeval.quiet`), and, for the
  pack's served backends, lm-eval's "Caching will not be performed" / "Cached requests: 0": those
  backends cache every sampled completion themselves (per doc, repeat and seed) in the same
  `--use_cache` database and log their own count.
"""

from __future__ import annotations

import logging
import os
import re

import yaml

from ..core import catalog
from ..core.suggest import did_you_mean
from ..lmeval import quiet

TRACEBACK_ENV = "EVALPACK_TRACEBACK"
VERBOSE_FLAG = "--verbose"
TRACEBACK_HINT = f"({VERBOSE_FLAG} or {TRACEBACK_ENV}=1 shows the traceback)"

# errors with a message meant for people; anything else (a bug) keeps its traceback
NAMED_ERRORS = (
    ValueError,
    TypeError,
    LookupError,
    OSError,
    RuntimeError,
    ImportError,
    yaml.YAMLError,
)

EXTRAS = {  # a missing module -> the install line that brings it (from a checkout)
    "torch": "pip install -e '.[hf]' (CPU: torch from the CPU wheel index first; "
    "docs/getting_started.md)",
    "transformers": "pip install -e '.[hf]'",
    "accelerate": "pip install -e '.[hf]'",
    "vllm": "pip install -e '.[vllm]'",
    "ray": "pip install -e '.[ray]'",
}


def wants_traceback(argv: list[str]) -> tuple[bool, list[str]]:
    """Whether `--verbose` (before a bare `--`) or `EVALPACK_TRACEBACK=1` asks for tracebacks;
    and `argv` without the flag."""
    cut = argv.index("--") if "--" in argv else len(argv)
    flagged = VERBOSE_FLAG in argv[:cut]
    own = [arg for arg in argv[:cut] if arg != VERBOSE_FLAG]
    env = os.environ.get(TRACEBACK_ENV, "").lower() not in ("", "0", "false", "no")
    return flagged or env, own + argv[cut:]


def error_line(exc: BaseException, include_path: str | None = None) -> str:
    """`exc` as one line, with a hint where the pack knows a better way."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        text = str(exc.args[0])
    missing = re.match(r"Tasks not found: (.+)", text)
    if missing:
        return unknown_tasks([n.strip() for n in missing.group(1).split(",")], include_path)
    if isinstance(exc, ImportError) and exc.name:
        top = exc.name.split(".")[0]
        if top in EXTRAS:
            return f"{text}: this backend needs it; {EXTRAS[top]}"
    unexpected = re.search(r"(\w+)\.__init__\(\) got an unexpected keyword argument '(\w+)'", text)
    if unexpected:
        return f"bad --model_args: {unexpected.group(1)} takes no argument {unexpected.group(2)}="
    return text


def unknown_tasks(names: list[str], include_path: str | None) -> str:
    """ "no task named X (did you mean ...?)": close names among the pack's tasks, else among
    lm-eval's too (their index from its disk cache)."""
    from ..lmeval.fixed_costs import IncludePathTaskManager

    parts = []
    for name in names:
        guess = did_you_mean(name, catalog.task_index(include_path), str, 3) or did_you_mean(
            name, IncludePathTaskManager(include_path=include_path).task_index, str, 3
        )
        parts.append(f"no task named {name!r}{guess}")
    return "; ".join(parts) + "; `evalpack ls tasks` lists them all"


class _Drop(logging.Filter):
    """Drops the records `drop(record)` picks."""

    def __init__(self, drop) -> None:
        super().__init__()
        self._drop = drop

    def filter(self, record: logging.LogRecord) -> bool:
        return not self._drop(record)


def quiet_lm_eval(requested: list[str], pack_cached_model: bool) -> None:
    """Filter lm-eval's misleading warnings (see the module docstring)."""
    overrides = _Drop(
        lambda r: "overrides existing task" in r.msg and (r.args or ("",))[0] not in requested
    )
    logging.getLogger("lm_eval.tasks._index").addFilter(overrides)
    quiet.install()  # the notes a plain lm_eval run of the pack's tasks drops too
    if pack_cached_model:
        cache_notes = _Drop(
            lambda r: (
                "Caching will not be performed" in str(r.msg)
                or str(r.msg).startswith("Cached requests:")
            )
        )
        logging.getLogger("lm_eval.api.model").addFilter(cache_notes)


def caches_itself(model: str | None) -> bool:
    """Whether lm-eval's model `model` is one of the pack's backends that cache each sampled
    completion themselves (and say how many they found)."""
    from lm_eval.api.registry import model_registry

    if not model:
        return False
    return bool(getattr(model_registry.get(model, None), "keys_each_repeat", False))
