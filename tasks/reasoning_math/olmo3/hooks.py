"""The pack's functions that this folder's YAML names (`!function hooks.<name>`). lm-eval
loads this file by its path before any of the pack's code, so a Python without the pack
installed stops here with one line saying how to install it."""

import sys
from pathlib import Path

try:
    from evalpack.hooks.olmo3_aime import gold, load, process_results, prompt, score_samples
    from evalpack.hooks.olmo3_rules import total
    from evalpack.hooks.sampled import SampledTask
except ModuleNotFoundError as missing:
    if missing.name != "evalpack":
        raise
    here = Path(__file__).resolve()
    checkout = next((p for p in here.parents if (p / "pyproject.toml").is_file()), here.parent)
    raise SystemExit(
        f"{here.parent}: these tasks need the evalpack package, which {sys.executable} "
        f"cannot import: pip install -e {checkout}"
    ) from None

__all__ = ["SampledTask", "gold", "load", "process_results", "prompt", "score_samples", "total"]
