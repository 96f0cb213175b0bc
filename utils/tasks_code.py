"""lm-eval hooks for HumanEval (`tasks/codex_humaneval_tulu`), scored by `evalpack.execution`.

Every sample of every doc is executed in one parallel batch inside the `execute_samples`
filter. The filter leaves, per doc, one record per sample (outcome and reason from the
executor, for both the OLMES program and the extracted one); `process_results` turns them
into pass@k.
"""

from __future__ import annotations

import re

from evalpack import data, execution
from evalpack.models import cut_at_stops
from evalpack.sampling_metrics import pass_at_k

# OLMES codex_humaneval::tulu stop strings, enforced here whatever the backend did.
STOP_STRINGS = ["\nclass", "\nif", "\nprint", "\n#", "\n```", "\n```\n\n", "<|eot_id|>"]
DEFAULT_TIMEOUT = 3.0  # seconds per program, as OLMES
KS = (1, 10)

_FENCE = re.compile(
    r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE
)
_CODE_START = re.compile(r"^(?:def |async def |import |from |class |@)", re.MULTILINE)


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
        return preamble(prompt, entry_point) + code[start.start():]
    return prompt + code


def _job(doc: dict, program: str) -> execution.Job:
    return execution.Job(
        program=program,
        test=doc["test"] + f"\ncheck({doc['entry_point']})\n",
        entry_point=doc["entry_point"],
        timeout=doc["timeout"],
        trusted_prelude=doc["prompt"],
    )


def _verdict_record(verdict: execution.Verdict) -> dict:
    return {"passed": verdict.passed, "outcome": verdict.outcome, "reason": verdict.reason}


def execute_samples(resps: list[list[str]], docs: list[dict]) -> list[list[dict]]:
    """Custom filter: every sample of every doc run as the OLMES program (prompt + completion)
    and as the extracted program, all in one parallel batch. A program that occurs more than
    once for a doc (identical samples, or extraction changing nothing) runs once."""
    jobs: list[execution.Job] = []
    position: dict[tuple[int, str], int] = {}
    plan = []  # per doc, per sample: (olmes job, extracted job)
    for i, (samples, doc) in enumerate(zip(resps, docs)):
        doc_plan = []
        for sample in samples:
            completion = cut_at_stops(sample, STOP_STRINGS)
            pair = []
            for program in (
                doc["prompt"] + completion,
                extract_program(doc["prompt"], completion, doc["entry_point"]),
            ):
                if (i, program) not in position:
                    position[(i, program)] = len(jobs)
                    jobs.append(_job(doc, program))
                pair.append(position[(i, program)])
            doc_plan.append(pair)
        plan.append(doc_plan)
    verdicts = execution.run_jobs(jobs)
    return [
        [
            {"olmes": _verdict_record(verdicts[plain]),
             "extracted": _verdict_record(verdicts[extracted])}
            for plain, extracted in doc_plan
        ]
        for doc_plan in plan
    ]


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
