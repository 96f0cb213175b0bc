"""What a pair needs besides its model, checked by the plan before any request: its data (files
in the `EVALPACK_DATA_DIR` mirror, or the hub when there is no mirror) and the libraries its
task's YAML names (`metadata.needs`). Each problem is one line saying what is missing and the
command that fixes it."""

from __future__ import annotations

import functools
import os
import subprocess
import sys

from ..core import data

HUB_OFFLINE = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")


# what a YAML's `metadata.needs` may name -> the module whose `check` command says whether they
# are there (exit 0), else prints the line that says how to install them (a subprocess: the
# leaderboard imports no task hook)
LIBRARY_CHECKS = {"bigcodebench_libraries": "evalpack.hooks.bigcodebench.libs"}


def library_problem(name: str) -> str | None:
    """Why the libraries `name` (a task's `metadata.needs`) are not usable, or None."""
    if name not in LIBRARY_CHECKS:
        raise ValueError(f"unknown metadata.needs {name!r} (known: {', '.join(LIBRARY_CHECKS)})")
    command = [sys.executable, "-m", LIBRARY_CHECKS[name], "check"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    if done.returncode == 0:
        return None
    return (done.stdout.strip() or done.stderr.strip() or f"{name}: not installed").splitlines()[-1]


@functools.cache
def hub_reachable(endpoint: str) -> bool:
    """Asked once per endpoint and process (a plan asks for each task)."""
    return data.hub_reachable()


def hub_problem(files: list[str]) -> str | None:
    """Why datasets that would come from the hub (`files`: their mirror paths) cannot, or None.
    Offline mode is trusted: the Hugging Face cache may hold them."""
    if not files or any(os.environ.get(v, "").lower() in ("1", "true") for v in HUB_OFFLINE):
        return None
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    if hub_reachable(endpoint):
        return None
    more = f" (and {len(files) - 1} more)" if len(files) > 1 else ""
    return (
        f"data missing: {data.DATA_DIR_ENV} is not set and the Hugging Face hub ({endpoint}) "
        f"cannot be reached: export {data.DATA_DIR_ENV}=<mirror dir> holding {files[0]}{more}"
    )


def mirror_problem(missing: list[str]) -> str | None:
    """Why files missing from the mirror stop a pair, or None."""
    if not missing:
        return None
    more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    return (
        f"data missing: {missing[0]}{more} is not in {data.DATA_DIR_ENV}: copy it there, or "
        f"unset {data.DATA_DIR_ENV} to read the hub"
    )
