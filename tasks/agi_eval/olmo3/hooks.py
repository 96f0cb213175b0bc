"""The pack's functions that this folder's YAML names (`!function hooks.<name>`). lm-eval
loads this file by its path before any of the pack's code, so a Python without the pack
installed stops here with one line saying how to install it."""

import sys
from pathlib import Path

try:
    from evalpack.hooks.agi_eval import doc_to_target, doc_to_text
    from evalpack.hooks.olmo3_rules import (
        load_agi_eval,
        process_letters,
        score_agi_eval_docs,
        total,
    )
except ModuleNotFoundError as missing:
    if missing.name != "evalpack":
        raise
    here = Path(__file__).resolve()
    checkout = next((p for p in here.parents if (p / "pyproject.toml").is_file()), here.parent)
    raise SystemExit(
        f"{here.parent}: these tasks need the evalpack package, which {sys.executable} "
        f"cannot import: pip install -e {checkout}"
    ) from None

__all__ = [
    "doc_to_target",
    "doc_to_text",
    "load_agi_eval",
    "process_letters",
    "score_agi_eval_docs",
    "total",
]
