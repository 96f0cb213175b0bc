"""The pack's functions that this folder's YAML names (`!function hooks.<name>`). lm-eval
loads this file by its path before any of the pack's code, so a Python without the pack
installed stops here with one line saying how to install it."""

import sys
from pathlib import Path

try:
    from evalpack.hooks.alpaca_eval import (
        avg_length,
        discrete_win_rate,
        doc_to_text,
        judge_outputs,
        lc_standard_error,
        length_controlled_winrate,
        load,
        n_draws,
        n_failed,
        n_wins,
        process_results,
        standard_error,
        total_price,
        win_rate,
    )
    from evalpack.hooks.olmo3_chat import judge_alpaca_eval as judge_olmo3
    from evalpack.hooks.olmo3_chat import load_alpaca_eval as load_olmo3
    from evalpack.hooks.olmo3_chat import process_alpaca_eval as process_results_olmo3
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
    "avg_length",
    "discrete_win_rate",
    "doc_to_text",
    "judge_olmo3",
    "judge_outputs",
    "lc_standard_error",
    "length_controlled_winrate",
    "load",
    "load_olmo3",
    "n_draws",
    "n_failed",
    "n_wins",
    "process_results",
    "process_results_olmo3",
    "standard_error",
    "total",
    "total_price",
    "win_rate",
]
