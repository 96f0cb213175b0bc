"""The pack's functions that this folder's YAML names (`!function hooks.<name>`). lm-eval
loads this file by its path before any of the pack's code, so a Python without the pack
installed stops here with one line saying how to install it."""

import sys
from pathlib import Path

try:
    from evalpack.hooks.ifbench import load, micro_mean, process_results, score_docs
    from evalpack.hooks.olmo3_chat import load_ifbench as load_olmo3
    from evalpack.hooks.olmo3_chat import process_ifbench as process_results_olmo3
    from evalpack.hooks.olmo3_chat import score_ifbench as score_docs_olmo3
    from evalpack.hooks.olmo3_chat import total
except ImportError as missing:  # not installed, or a folder named evalpack in its way
    found = sys.modules.get("evalpack")
    folder = found and found.__file__ is None and next(iter(found.__path__))
    if missing.name != "evalpack" and not folder:
        raise
    here = Path(__file__).resolve()
    checkout = next((p for p in here.parents if (p / "pyproject.toml").is_file()), here.parent)
    fix = (
        f"finds as the folder {folder} (a checkout named evalpack where Python started): "
        "run from another folder"
        if folder
        else f"cannot import: pip install -e {checkout}"
    )
    raise SystemExit(
        f"{here.parent}: these tasks need the evalpack package, which {sys.executable} {fix}"
    ) from None

__all__ = [
    "load",
    "load_olmo3",
    "micro_mean",
    "process_results",
    "process_results_olmo3",
    "score_docs",
    "score_docs_olmo3",
    "total",
]
