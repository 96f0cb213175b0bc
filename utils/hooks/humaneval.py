"""lm-eval hooks for HumanEval (`tasks/humaneval`), scored by `evalpack.execution`; the shared
implementation of the HumanEval family (HumanEval+ reuses it: `humanevalplus`).

Every sample of every doc is executed in one parallel batch inside the `execute_samples`
filter. The filter leaves, per doc, one record per sample: a verdict record (`verdict_record`)
for each of the sample's runs, here the OLMES program ("olmes") and the extracted one
("extracted"); `process_results` turns them into pass@k. A family member names its own runs
(`sample_jobs`) and reuses `run_samples`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .. import execution
from ..core import data
from ..core.text import cut_at_stops
from ..scoring.sampling_metrics import pass_at_k

# OLMES codex_humaneval::tulu stop strings, enforced here whatever the backend did.
STOP_STRINGS = ["\nclass", "\nif", "\nprint", "\n#", "\n```", "\n```\n\n", "<|eot_id|>"]
DEFAULT_TIMEOUT = 3.0  # seconds per program, as OLMES
KS = (1, 10)

_FENCE = re.compile(
    r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE
)
_CODE_START = re.compile(r"^(?:def |async def |import |from |class |@)", re.MULTILINE)
# the executor's reason for a program that raised one of these while loading: it did not compile
_NOT_COMPILED = re.compile(r"program failed to load: (?:SyntaxError|IndentationError|TabError):")


def load(timeout: float = DEFAULT_TIMEOUT, **kwargs):
    """`custom_dataset` hook: the dataset, each doc carrying the run's execution timeout
    (settable with `--metadata '{"timeout": 5}'`), so scoring and the logs agree on it."""
    dataset = data.load(**kwargs)
    return dataset.map(lambda doc: {"timeout": float(timeout)})


def target_def(prompt: str, entry_point: str) -> re.Match | None:
    return re.search(rf"^(?:async )?def {re.escape(entry_point)}\s*\(", prompt, re.MULTILINE)


def preamble(prompt: str, entry_point: str) -> str:
    """What the prompt has before the target function: imports and helper functions."""
    match = target_def(prompt, entry_point)
    return prompt[: match.start()] if match else ""


def extract_program(prompt: str, completion: str, entry_point: str) -> str:
    """The program a chat-style answer most plausibly means (PrimeIntellect's humaneval
    rubric): the code of a fenced block if any; then, if that code defines the entry point
    itself, the prompt's preamble + the code from its first code line (dropping explanation
    text before it); otherwise the prompt continued by the code, as OLMES does."""
    fenced = _FENCE.search(completion)
    code = fenced.group(1) if fenced else completion
    if target_def(code, entry_point):
        start = _CODE_START.search(code)
        return preamble(prompt, entry_point) + code[start.start() :]
    return prompt + code


def test_program(test: str, entry_point: str) -> str:
    """The trusted test program: a dataset's `test` (defining `check`) and `check(<entry_point>)`."""
    return test + f"\ncheck({entry_point})\n"


def job(doc: dict, program: str, **plan) -> execution.Job:
    """`program` run against the doc's test, with the doc's time limit; `plan`: a family
    member's `execution.Job` fields for the test (HumanEval+: `calls`, `pure`)."""
    return execution.Job(
        program=program,
        test=test_program(doc["test"], doc["entry_point"]),
        entry_point=doc["entry_point"],
        timeout=doc["timeout"],
        trusted_prelude=doc["prompt"],
        **plan,
    )


def sample_jobs(doc: dict, completion: str, **plan) -> dict[str, execution.Job]:
    """The runs of one sample (its completion already cut at the stop strings): OLMES's
    program (prompt + completion) and the extracted program, both against the doc's `test`."""
    return {
        "olmes": job(doc, doc["prompt"] + completion, **plan),
        "extracted": job(
            doc, extract_program(doc["prompt"], completion, doc["entry_point"]), **plan
        ),
    }


def olmes_result(verdict: execution.Verdict) -> str:
    """OLMES's `exec_result` for a verdict: a program that does not compile is a
    "compilation error" (OLMES never runs it); otherwise passed, failed or timed out."""
    if verdict.passed:
        return "passed"
    if verdict.outcome == "timeout":
        return "timed out"
    if verdict.outcome == "error" and _NOT_COMPILED.match(verdict.reason):
        return "compilation error"
    return "failed"


def verdict_record(verdict: execution.Verdict) -> dict:
    """What a sample's log keeps of a verdict: the executor's outcome and reason, which limit
    decided it ("cpu", "wall" or "memory"; "" when none did), the job's CPU time, and OLMES's
    category."""
    cpu = verdict.cpu_seconds
    return {
        "passed": verdict.passed,
        "outcome": verdict.outcome,
        "reason": verdict.reason,
        "limit": verdict.limit,
        "cpu_seconds": None if cpu is None else round(cpu, 3),
        "olmes_result": olmes_result(verdict),
    }


def run_samples(
    resps: list[list[str]],
    docs: list[dict],
    jobs_for: Callable[[dict, str], dict[str, execution.Job]],
    stops: list[str] = STOP_STRINGS,
) -> list[list[dict]]:
    """Every sample of every doc, cut at `stops`, each run as `jobs_for(doc, completion)` says,
    in one parallel batch; per doc, per sample, a verdict record per run name. A job that
    occurs more than once for a doc (identical samples, or extraction changing nothing) runs
    once."""
    jobs: list[execution.Job] = []
    position: dict[tuple[int, str, str], int] = {}
    plan = []  # per doc, per sample: {run name: index into jobs}
    for i, (samples, doc) in enumerate(zip(resps, docs)):
        doc_plan = []
        for sample in samples:
            runs = jobs_for(doc, cut_at_stops(sample, stops))
            for run in runs.values():
                if (i, run.program, run.test) not in position:
                    position[(i, run.program, run.test)] = len(jobs)
                    jobs.append(run)
            doc_plan.append(
                {name: position[(i, run.program, run.test)] for name, run in runs.items()}
            )
        plan.append(doc_plan)
    verdicts = execution.run_jobs(jobs)
    return [
        [
            {name: verdict_record(verdicts[index]) for name, index in sample_plan.items()}
            for sample_plan in doc_plan
        ]
        for doc_plan in plan
    ]


def execute_samples(resps: list[list[str]], docs: list[dict]) -> list[list[dict]]:
    """Custom filter: every sample of every doc run as the OLMES program (prompt + completion)
    and as the extracted program, all in one parallel batch."""
    return run_samples(resps, docs, sample_jobs)


def process_results(doc: dict, results: list[list[dict]]) -> dict:
    """pass@k over the doc's samples; a k larger than the number of samples is left out."""
    samples = results[0]
    scores = {}
    for variant, suffix in (("olmes", ""), ("extracted", "_extracted")):
        correct = sum(s[variant]["passed"] for s in samples)
        for k in KS:
            value = pass_at_k(len(samples), correct, k)
            if value is not None:
                scores[f"pass_at_{k}{suffix}"] = value
    return scores
