"""The pack's functions that this folder's YAML names (`!function hooks.<name>`). lm-eval
loads this file by its path before any of the pack's code, so a Python without the pack
installed stops here with one line saying how to install it."""

import sys
from pathlib import Path

try:
    from evalpack.hooks.humanevalplus import execute_samples, load, process_results, total
    from evalpack.hooks.olmo3_chat import total as thinking_total
    from evalpack.hooks.olmo3_code import execute_humanevalplus as execute_humanevalplus_olmo3
    from evalpack.hooks.olmo3_code import humanevalplus_prompt as humanevalplus_olmo3_prompt
    from evalpack.hooks.olmo3_code import load_humanevalplus as load_humanevalplus_olmo3
    from evalpack.hooks.olmo3_code import process_humanevalplus as process_humanevalplus_olmo3
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

__all__ = [
    "SampledTask",
    "execute_humanevalplus_olmo3",
    "execute_samples",
    "humanevalplus_olmo3_prompt",
    "load",
    "load_humanevalplus_olmo3",
    "process_humanevalplus_olmo3",
    "process_results",
    "thinking_total",
    "total",
]
