"""BigCodeBench's replayed verdicts run in rounds, so that the caller holds a bounded number
of records (`task.replay_verdicts`).

A record comes from the candidate's process: the trusted side refuses one over RECORD_LIMIT
bytes before receiving it (`Job.max_result`), and a round holds at most ROUND of them; each
replay job (whose program carries its record) is built only when its batch runs, a batch
carrying at most BATCH_BYTES of records, and a record is dropped once its job is built.
"""

from __future__ import annotations

from collections.abc import Callable

from ... import execution
from .unsafe import NotReplayable

# bytes of the recording run's report: its record (the runner's MAX_RECORD_BYTES) and the rest
RECORD_LIMIT = 17 * 1024 * 1024
ROUND = 32  # programs recorded at a time (their records, at most ROUND * RECORD_LIMIT bytes)
BATCH_BYTES = 128 * 1024 * 1024  # of the records whose replay jobs exist at a time


def replayed(
    indices: list[int],
    recording_job: Callable[[int], execution.Job],
    replay_job: Callable[[int, str], execution.Job],
) -> dict[int, execution.Verdict]:
    """For each of `indices`, the replayed verdict: `recording_job(i)` run, then
    `replay_job(i, record)` on the record it kept; an error verdict where either fails."""
    verdicts: dict[int, execution.Verdict] = {}
    for start in range(0, len(indices), ROUND):
        verdicts.update(_round(indices[start : start + ROUND], recording_job, replay_job))
    return verdicts


def _round(indices, recording_job, replay_job) -> dict[int, execution.Verdict]:
    verdicts, jobs = {}, {}
    for i in indices:
        try:
            jobs[i] = recording_job(i)
        except NotReplayable as exc:
            verdicts[i] = _error(f"not replayable: {exc}")
        except Exception as exc:  # noqa: BLE001 (a test the rewrite cannot take: this replay fails)
            why = f"the test could not be made answerless: {type(exc).__name__}: {exc}"
            verdicts[i] = _error(why)
    records = {}
    for i, run in zip(jobs, execution.run_jobs(list(jobs.values()))):
        if type(run.kept) is str:
            records[i] = run.kept
        else:
            verdicts[i] = _error(f"the recording run left no record ({run.reason[:300]})")
    while records:
        batch, size = {}, 0
        while records and (not batch or size + len(next(iter(records.values()))) <= BATCH_BYTES):
            i = next(iter(records))
            record = records.pop(i)
            size += len(record)
            batch[i] = replay_job(i, record)
        verdicts.update(zip(batch, execution.run_jobs(list(batch.values()))))
    return verdicts


def _error(why: str) -> execution.Verdict:
    return execution.Verdict(False, "error", f"replay: {why}"[:500], 0.0)
