"""AlpacaEval 2 metrics from per-doc judgements, computed by the `alpaca-eval` package as
OLMES computes them (`alpaca_eval.evaluate`'s leaderboard row, 0-100 scale): the win rate of
the weighted preferences and the length-controlled win rate of the package's GLM
(`length_controlled_v1`), plus `total_price` as OLMES sums it and `n_failed`, the pack's count
of docs without a judgement.

As in the package, a doc without a judgement is left out of the win rate and out of the GLM's
fit, but still gets a predicted preference in the length-controlled win rate, which averages
over every doc; docs are indexed by their position, so the GLM reads instruction difficulty
by position (right for the full 805 docs in order, as in OLMES).

The GLM needs the package's `df_gamed.csv` from the hub; with `EVALPACK_DATA_DIR` set it is
read from `<dir>/tatsu-lab__alpaca_eval/df_gamed.csv` instead.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
from pathlib import Path

import pandas as pd
from alpaca_eval.metrics import get_length_controlled_winrate, get_winrate, glm_winrate

from ...core.data import DATA_DIR_ENV, DataError, hub_dir, hub_reachable

METRICS = (
    "length_controlled_winrate",
    "lc_standard_error",
    "win_rate",
    "standard_error",
    "avg_length",
    "n_wins",
    "n_draws",
    "discrete_win_rate",
    "total_price",
    "n_failed",
)
BASELINE_NAME = "reference"
MODEL_NAME = "EVAL_MODEL"
GLM_REPO, GLM_FILE = "tatsu-lab/alpaca_eval", "df_gamed.csv"  # what the package's GLM downloads
WIN_RATE_METRICS = ("win_rate", "standard_error", "n_wins", "n_draws", "discrete_win_rate")
LC_METRICS = ("length_controlled_winrate", "lc_standard_error")

log = logging.getLogger(__name__)


def item_of(record: dict) -> tuple:
    """What the metrics need of one doc's judgement record (small: logged once per metric)."""
    return (
        record["preference"],
        record["output_length"],
        record["reference_length"],
        record["price"],
    )


def metric(items: list, name: str) -> float:
    return leaderboard(tuple(tuple(item) for item in items))[name]


@functools.lru_cache(maxsize=8)
def leaderboard(items: tuple) -> dict[str, float]:
    """All metrics for the docs' (preference, output length, reference length, price)."""
    preferences = [math.nan if p is None else p for p, _, _, _ in items]
    judged = sum(not math.isnan(p) for p in preferences)
    scores = {name: math.nan for name in METRICS}
    scores["n_failed"] = len(items) - judged
    scores["total_price"] = float(sum(price for *_, price in items))
    if items:
        # as `alpaca_eval.evaluate`: the mean length of all model outputs, truncated
        scores["avg_length"] = int(sum(length for _, length, _, _ in items) / len(items))
    if judged:
        scores.update(_package_metrics(preferences, items))
    return scores


def _package_metrics(preferences: list[float], items: tuple) -> dict[str, float]:
    # The package measures the outputs' lengths with `.str.len()` and reads nothing else of
    # their text, so texts of the same lengths stand in for them.
    annotations = pd.DataFrame(
        {
            "preference": preferences,
            "output_1": [" " * ref_length for _, _, ref_length, _ in items],
            "output_2": [" " * length for _, length, _, _ in items],
            "generator_1": BASELINE_NAME,
            "generator_2": MODEL_NAME,
        }
    )
    scores = {
        name: float(value)
        for name, value in get_winrate(annotations).items()
        if name in WIN_RATE_METRICS
    }
    try:
        with hub_files_from_mirror():
            computed = get_length_controlled_winrate(annotations, save_weights_dir=None)
    except Exception as exc:  # noqa: BLE001  its hub file unreachable, too few docs to fit
        # not fatal: the run keeps its generations and judgements (cached), and a rescore
        # computes the LC win rate once the GLM can be fitted
        log.error(
            "AlpacaEval length-controlled win rate not computed (%d judged docs): %s: %s",
            int(annotations["preference"].notna().sum()),
            type(exc).__name__,
            str(exc).splitlines()[0] if str(exc) else "",
        )
        return scores
    return {**scores, **{name: float(computed[name]) for name in LC_METRICS}}


@contextlib.contextmanager
def hub_files_from_mirror():
    """While active, the package's GLM reads its hub files from the `EVALPACK_DATA_DIR` mirror
    (`<dir>/tatsu-lab__alpaca_eval/<file>`); without the variable, from the hub as usual."""
    data_dir = os.environ.get(DATA_DIR_ENV)
    if not data_dir:
        if not os.environ.get("HF_HUB_OFFLINE") and not hub_reachable():
            raise DataError(
                f"the Hugging Face hub cannot be reached for {GLM_FILE}; set "
                f"{DATA_DIR_ENV}=<mirror dir> holding "
                f"{hub_dir(GLM_REPO)}/{GLM_FILE}"
            )
        yield
        return

    def from_mirror(repo_id: str, filename: str, **_kwargs) -> str:
        file = Path(data_dir) / hub_dir(repo_id) / filename
        if not file.is_file():
            raise DataError(
                f"{DATA_DIR_ENV}={data_dir}: the AlpacaEval length-controlled GLM "
                f"needs {repo_id}'s {filename}; looked for {file}"
            )
        return str(file)

    original = glm_winrate.hf_hub_download
    glm_winrate.hf_hub_download = from_mirror
    try:
        yield
    finally:
        glm_winrate.hf_hub_download = original
