"""lm-eval hooks for the code tasks of OLMES's `olmo3:adapt` suite: HumanEval+
(`codex_humanevalplus_olmo3`, OLMES `codex_humanevalplus::olmo3:adapt`) and MBPP+
(`mbppplus_olmo3`, OLMES `mbppplus::olmo3:adapt`).

Both ask for concise reasoning ending with the code in a fence after "Here is the completed
function:", sample 10 answers per problem with no stop string, and run the code OLMES reads
from the answer (`evalpack.scoring.code_answers`) in the sandbox (`evalpack.execution`) against
EvalPlus's tests, 20 s per program:

* HumanEval+: the problem's prompt followed by the code, against `test` + `check(entry_point)`.
* MBPP+: the reference solution's text up to its first ":" (its imports and the signature),
  ":", a placeholder docstring, then the code (OLMES's way of keeping the reference's imports),
  against the problem's `test` script, which calls the function itself.

With the thinking switch on (`evalpack.hooks.thinking_switch`) the code is read from the answer
after the reasoning; each sample's record keeps the reasoning, the code run and OLMES's
`answer_format_correct`.
"""

from __future__ import annotations

import re

from .. import execution
from ..core import data
from ..scoring.code_answers import olmes_code_answer
from ..scoring.sampling_metrics import pass_at_k
from . import humanevalplus, thinking_switch
from .humaneval import run_samples

TIMEOUT = 20.0  # seconds per program: OLMES's metric_kwargs for both tasks
HUMANEVALPLUS_KS = (1, 10)
MBPPPLUS_KS = (1, 5, 10)
HUMANEVALPLUS_PROMPT = (
    "Complete the following function:\n{prompt}\nProvide CONCISE reasoning on how to arrive at "
    "the answer, and make sure to finish the response with the following, where (CODE) is the "
    "code for the complete function:\n\nHere is the completed function:\n\n```python\n(CODE)\n```"
)
MBPPPLUS_PROMPT = (
    "{code_prompt}\n\nProvide CONCISE reasoning on how to arrive at the answer, and make sure to "
    "finish the response with the following:\n\nHere is the completed function:\n\n```python\n"
    "(CODE)\n```\nwhere (CODE) is the code for the complete function."
)
MBPP_DOCSTRING = "\n    '''doc_string'''\n\n"
# the function an MBPP+ test script calls with each input (not always the reference's first def)
_CALLED = re.compile(r"^    assertion\((\w+)\(", re.MULTILINE)
_FIRST_DEF = re.compile(r"^def (\w+)\s*\(", re.MULTILINE)
# the inputs an MBPP+ test script calls it with, one list of arguments per call
_INPUTS = re.compile(r"^inputs = (.+)$", re.MULTILINE)


def load_humanevalplus(timeout=TIMEOUT, process_output=None, humaneval_revision=None, **kwargs):
    """`custom_dataset` hook: HumanEval+ docs with the run's time limit and thinking switch."""
    dataset = humanevalplus.load(timeout=timeout, humaneval_revision=humaneval_revision, **kwargs)
    return thinking_switch.stamp(dataset, process_output)


def load_mbppplus(timeout=TIMEOUT, process_output=None, **kwargs):
    """`custom_dataset` hook: MBPP+ docs, each with its time limit, thinking switch and the name
    of the function its test calls."""
    dataset = data.load(**kwargs)

    def extend(doc: dict) -> dict:
        return {"timeout": float(timeout), "entry_point": mbpp_entry_point(doc)}

    return thinking_switch.stamp(dataset.map(extend), process_output)


def mbpp_entry_point(doc: dict) -> str:
    called = _CALLED.search(doc["test"]) or _FIRST_DEF.search(doc["code"])
    if called is None:
        raise data.DataError(f"{doc['doc_key']}: no function found in its test or code")
    return called.group(1)


def code_prompt(doc: dict) -> str:
    """OLMES's MBPP `code_prompt`: the task text and the reference's first line up to ":"."""
    return doc["prompt"] + doc["code"].split(":")[0] + ":"


def humanevalplus_prompt(doc: dict) -> str:
    return HUMANEVALPLUS_PROMPT.format(prompt=doc["prompt"])


def mbppplus_prompt(doc: dict) -> str:
    return MBPPPLUS_PROMPT.format(code_prompt=code_prompt(doc))


def humanevalplus_jobs(doc: dict, code: str) -> dict[str, execution.Job]:
    return {"olmes": humanevalplus.job(doc, doc["prompt"] + code)}


def mbppplus_jobs(doc: dict, code: str) -> dict[str, execution.Job]:
    inputs = _INPUTS.search(doc["test"])
    return {
        "olmes": execution.Job(
            program=doc["code"].split(":")[0] + ":" + MBPP_DOCSTRING + code,
            test=doc["test"],
            entry_point=doc["entry_point"],
            timeout=doc["timeout"],
            calls=inputs.group(1) if inputs else "",
            pure=humanevalplus.pure_functions(doc["test"]),
        )
    }


def run(resps: list[list[str]], docs: list[dict], jobs_for) -> list[list[dict]]:
    """Every sample's code (read after its reasoning when the switch is on) run in one parallel
    batch; per sample, the verdict record with the code, `answer_format_correct` and thinking."""
    thoughts = [
        [thinking_switch.split(s, doc) for s in samples] for samples, doc in zip(resps, docs)
    ]
    answers = [
        [
            olmes_code_answer(thinking_switch.scored_text(s, t))
            for s, t in zip(samples, doc_thoughts)
        ]
        for samples, doc_thoughts in zip(resps, thoughts)
    ]
    codes = [[answer.answer for answer in doc_answers] for doc_answers in answers]
    verdicts = run_samples(codes, docs, jobs_for, stops=[])  # no stop string: nothing cut
    return [
        [
            {
                **verdict["olmes"],
                "code": answer.answer,
                "answer_format_correct": answer.answer_format_correct,
                **thinking_switch.thinking_record(thought),
            }
            for verdict, answer, thought in zip(doc_verdicts, doc_answers, doc_thoughts)
        ]
        for doc_verdicts, doc_answers, doc_thoughts in zip(verdicts, answers, thoughts)
    ]


def execute_humanevalplus(resps: list[list[str]], docs: list[dict]) -> list[list[dict]]:
    """Custom filter: every HumanEval+ sample run as OLMES runs it."""
    return run(resps, docs, humanevalplus_jobs)


def execute_mbppplus(resps: list[list[str]], docs: list[dict]) -> list[list[dict]]:
    """Custom filter: every MBPP+ sample run as OLMES runs it."""
    return run(resps, docs, mbppplus_jobs)


def scores(samples: list[dict], ks: tuple[int, ...]) -> dict:
    """pass@k (k up to the number of samples), the mean `answer_format_correct`, and with the
    switch on, how many samples never ended their thinking."""
    correct = sum(s["passed"] for s in samples)
    out = {
        f"pass_at_{k}": pass_at_k(len(samples), correct, k)
        for k in ks
        if pass_at_k(len(samples), correct, k) is not None
    }
    out["answer_format_correct"] = sum(s["answer_format_correct"] for s in samples) / len(samples)
    if any("thinking_finished" in s for s in samples):
        out["thinking_unfinished"] = thinking_switch.unfinished(samples)
    return out


def process_humanevalplus(doc: dict, results: list[list[dict]]) -> dict:
    return scores(results[0], HUMANEVALPLUS_KS)


def process_mbppplus(doc: dict, results: list[list[dict]]) -> dict:
    return scores(results[0], MBPPPLUS_KS)
