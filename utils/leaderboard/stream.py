"""A checkpoint's tasks as one stream of work against a served model (used by `worker`).

Run one after the other, each task's generation drains to its slowest request (the server has
ever fewer requests in flight) and the server then waits while the task is scored and the next
one is built. Here every pair of a unit runs in its own thread, each still an ordinary
`evalpack run` with its own results, sample logs, completion log and markers:

* the tasks whose scoring is heavy (their YAML's `scoring_cost: heavy`: MATH, HumanEval+,
  BigCodeBench) start first, the others after them in the unit's order;
* pair k+1 starts building its requests as soon as pair k's requests go out (its first model
  call), so building is never done twice at once and the first requests go out early;
* the served model's concurrency is shared by all pairs (`evalpack.models.slots`): the server
  has `num_concurrent` requests in flight until the checkpoint's last one, and a free slot goes
  to the waiting request of a heavily scored task, then of the task with the most generation
  ahead of it (its requests' `max_tokens` summed; the earliest task among equals), so the
  slowly scored tasks finish generating first and are scored (sympy, sandboxed programs) while
  the others generate, and the stream ends on requests of cheaply scored tasks;
* a pair that fails ends its own thread only (and lets the next one start).

lm-eval's and the pack's log records of a pair's thread go to the pair's `lm_eval.log`; output
written straight to the process's stdout/stderr (progress bars, child processes) goes to the
worker's log, since the pairs share the process.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from ..core import catalog
from ..models.slots import running_as

LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"
JOIN_STEP = 0.5  # seconds; joins are short so that Ctrl-C reaches the main thread


@contextlib.contextmanager
def logging_into(log_file: Path):
    """Within: log records of this thread appended to `log_file`; yields the open file, for
    what the pair writes itself (its command line, a traceback)."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    thread = threading.get_ident()
    with open(log_file, "a", encoding="utf-8", buffering=1) as fh:
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        handler.addFilter(lambda record: record.thread == thread)
        logging.getLogger().addHandler(handler)
        try:
            yield fh
        finally:
            logging.getLogger().removeHandler(handler)


def import_lazy_modules() -> None:
    """Finish importing, before the pairs' threads start, what a pair's thread would import
    while another thread works:
    - what loads lazily on first attribute access: `datasets` checks
      `transformers.PreTrainedTokenizerBase` when it hashes a dataset, and a thread that does so
      while another is still importing it gets an AttributeError (a MATH pair failed so while
      HumanEval's were building);
    - lm-eval's results-table writer (`pytablewriter`, imported as a run ends), whose logging
      library (loguru) makes locks at import that its fork handlers take and give back around
      every fork: one made while another thread forks (a scorer's workers) is given back
      under its holder, "RuntimeError: release unlocked lock" (a served pair failed so under
      load)."""
    with contextlib.suppress(ImportError):
        import transformers

        transformers.PreTrainedTokenizerBase  # noqa: B018  (the access imports it)
    with contextlib.suppress(ImportError):
        import pytablewriter  # noqa: F401


def heavy_scoring_first(pairs: list[dict]) -> list[tuple[dict, bool]]:
    """The pairs, those whose task's scoring is heavy first (each group in the given order),
    each with whether it is."""
    marked = [(pair, catalog.heavy_scoring(pair["task"])) for pair in pairs]
    return sorted(marked, key=lambda marked_pair: not marked_pair[1])


def run_side_by_side(
    pairs: list[dict],
    run_one: Callable[[dict], None],
    through: Callable[[dict, bool], None] | None = None,
) -> None:
    """`run_one(pair)` for every pair, each in its own thread, heavily scored tasks first, pair
    k+1 starting when pair k reaches the model (or ends), with requests of heavily scored tasks,
    then of earlier pairs, first in line; `through(pair, ended)` is called after each of the
    pair's model calls (ended False) and when it ends (True)."""
    through = through or (lambda pair, ended: None)
    import_lazy_modules()
    ordered = heavy_scoring_first(pairs)
    reached = [threading.Event() for _ in ordered]

    def run(number: int, pair: dict, heavy: bool) -> None:
        if number:
            reached[number - 1].wait()
        try:
            with running_as(number, reached[number].set, heavy, lambda: through(pair, False)):
                run_one(pair)
        finally:
            reached[number].set()
            through(pair, True)

    threads = [
        threading.Thread(
            target=run, args=(number, pair, heavy), daemon=True, name=f"pair-{pair['task']}"
        )
        for number, (pair, heavy) in enumerate(ordered)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():
            thread.join(JOIN_STEP)
