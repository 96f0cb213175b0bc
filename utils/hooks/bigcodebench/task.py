"""lm-eval hooks for BigCodeBench (`tasks/bigcodebench`), OLMES `bigcodebench::tulu` and
`bigcodebench_hard::tulu`, executed in the pack's sandbox (`evalpack.execution`).

Requests: OLMES's `instruct` variant in chat form (`doc_to_text` and the YAML's `gen_prefix`).
Scoring, as OLMES's `calibrate_code`: the completion (cut at OLMES's stop strings) is sanitised
against the entry point (`evalpack.scoring.code_sanitize`) and the task's `code_prompt` + a
`pass` body is put before it (BigCodeBench's calibration: the prompt's imports and signature
exist even when the answer left them out). The program runs with the task's unittest
`TestCases` in one sandboxed process, as BigCodeBench's harness runs them
(`job.runner`); one verdict per sample, pass@1 over the samples.

Why the test shares the candidate's process (unlike HumanEval's jobs, which only exchange plain
data): BigCodeBench's tests patch the candidate's modules (`unittest.mock.patch`) and inspect
what it returns (DataFrames, matplotlib Axes, files it wrote), which cannot cross a process
boundary as plain data. The trusted side reads back only plain data (how many tests ran, which
failed and why). See the task README for what this means for forged verdicts, and for the
replayed verdict (`pass_at_1_replayed`): a passing job's record of what the program did
(`job.record`) is played back to the same test in a second job with no candidate
code (`replay_job`, `replay.run`).
"""

from __future__ import annotations

import ast
import logging
import secrets

from ... import execution
from ...core import data
from ...core.text import cut_at_stops
from ...scoring.code_sanitize import sanitize
from ...scoring.sampling_metrics import pass_at_k
from . import answerless as answerless_test
from . import libs as bigcodebench_libs
from . import rounds, sources, unsafe

INSTRUCTION = (
    "Please provide a self-contained Python script that solves the following problem "
    "in a markdown code block:"
)
# OLMES's chat stop sequences for BigCodeBench, enforced here whatever the backend did
STOP_STRINGS = [
    "<|endoftext|>",
    "<|endofmask|>",
    "</s>",
    "\nif __name__",
    "\ndef main(",
    "\nprint(",
    "\n```\n",
]
# seconds: the job's CPU time for the whole test class and each test's wall-clock limit. OLMES's
# default BigCodeBench service documents "per instance exec timeout is 30 sec".
DEFAULT_TIMEOUT = 30.0
ENTRY_POINT = "run_bigcodebench"  # the runner's function the trusted check calls
REPLAY_ENTRY = "run_replay"  # the replay job's (`replay_job`)
# Said by the trusted check (never sent to a candidate) when a program passed as BigCodeBench
# counts passes but a value it made reached the tests: a pass for `pass_at_1`, a failure for
# `pass_at_1_real_values` (`verdict_record`). Drawn per process, so no program can say it.
MADE_FLAG = f"made-{secrets.token_hex(8)}"


def test_plan(test: str) -> tuple[list[str], list[str]]:
    """From the task's test source (trusted side): the test methods `TestCases` defines (the
    names unittest's loader runs) and the modules the test imports at module level."""
    tree = ast.parse(test)
    names, imports = [], []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TestCases":
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.append(item.name)
        elif isinstance(node, ast.Import):
            imports += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imports.append(node.module)
    tests = sorted({name for name in names if name.startswith("test")})
    return tests, list(dict.fromkeys(imports))


PRELOADED = (
    "unittest.mock",
    "numpy",
    "numpy.testing",
    "pandas",
    "pandas.testing",
    "matplotlib.pyplot",
)


def load(timeout: float = DEFAULT_TIMEOUT, **kwargs):
    """`custom_dataset` hook: the split, each doc carrying the run's time limit (settable with
    `--metadata '{"timeout": 60}'`), so scoring and the logs agree on it."""
    if not bigcodebench_libs.installed():  # said before generation, not only at scoring
        logging.getLogger(__name__).warning(missing_libraries())
    dataset = data.load(**kwargs)
    return dataset.map(lambda doc: {"timeout": float(timeout)})


def missing_libraries() -> str:
    return bigcodebench_libs.missing()


def doc_to_text(doc: dict) -> str:
    """OLMES's user turn for the `instruct` variant."""
    return INSTRUCTION + "\n" + doc["instruct_prompt"].strip() + "\n"


def calibrated_program(doc: dict, completion: str) -> str:
    """OLMES's program for a completion (cut at the stop strings): `code_prompt` with a `pass`
    body, then the completion sanitised against the entry point."""
    return doc["code_prompt"] + "\n    pass\n" + sanitize(completion, doc["entry_point"])


def job(doc: dict, program: str, libs: str = "", answerless: bool = False) -> execution.Job:
    """`program` run with the doc's unittest class by the runner, under the doc's limit, with
    the folder `libs` (BigCodeBench's libraries) first on its path: a full-runtime job (it
    sees the whole installation, not the sandbox's in-memory view; docs/security.md). With
    `answerless`, the recording run of `pass_at_1_replayed`: the test without its answers
    (`answerless`), and what the program did comes back as `Verdict.kept`; it reads the
    installation from a copy held in memory (`held_runtime`), never from the disk, whose page
    cache the first run's programs, which saw the answers, share."""
    names, imports = test_plan(doc["test"])
    if answerless:  # (a replay of a test that runs the program's files as code: none)
        unsafe.check(doc["test"])
    test = answerless_test.answerless(doc["test"]) if answerless else doc["test"]
    call = (
        f"{ENTRY_POINT}({test!r}, {doc['timeout']!r}, {libs!r}, _nonce, {imports!r}, "
        f"{private_tmp()!r}, {answerless!r})"
    )
    checks = (
        "KEPT = _kept(_report)\n"  # (its tests check nothing: the replay judges the record)
        if answerless
        else f"_check(_report, _nonce, {names!r})\n_made(_report, {MADE_FLAG!r})\n"
    )
    return execution.Job(
        program=sources.runner_source() + f"CANDIDATE_CODE = {program!r}\n",
        test=f"_nonce = _secrets.token_hex(16)\n_report = {call}\n{checks}",
        entry_point=ENTRY_POINT,
        timeout=doc["timeout"],
        trusted_prelude=sources.trusted_check(),
        full_runtime=True,  # its libraries (on disk in the first run)
        held_runtime=held_runtime(libs) if answerless else (),
        zygote_prelude=sources.zygote_prelude(libs, PRELOADED),
        max_result=rounds.RECORD_LIMIT,  # its record, capped before it is read
    )


def held_runtime(libs: str) -> tuple[str, ...]:
    """The folders the replayed verdict's jobs (recording, replay) read from memory."""
    return bigcodebench_libs.held_folders(libs, PRELOADED)


def private_tmp() -> bool:
    """Whether a job's `/tmp` is its own (a mount namespace: the record holds all of it)."""
    return execution.isolation().startswith("namespaces")


def replay_job(doc: dict, record: str, libs: str = "") -> execution.Job:
    """The doc's test run on `record` (what a program did, from its job's `Verdict.kept`) in
    a process with no candidate code (`replay.run`): the replayed verdict."""
    names, imports = test_plan(doc["test"])
    call = (
        f"{REPLAY_ENTRY}({doc['code_prompt']!r}, {doc['test']!r}, {libs!r}, {imports!r}, "
        f"{private_tmp()!r})"
    )
    return execution.Job(
        program=sources.replay_source(record, REPLAY_ENTRY),
        test=f"_check_replay({call}, {names!r})\n",
        entry_point=REPLAY_ENTRY,
        timeout=doc["timeout"],
        trusted_prelude=sources.trusted_check(),
        full_runtime=True,
        held_runtime=held_runtime(libs),
        zygote_prelude=sources.zygote_prelude(libs, PRELOADED),
    )


def _made(verdict: execution.Verdict) -> str:
    """The value of a class the program made that a passing job's tests met, or ""."""
    flagged = f"assertion failed {MADE_FLAG} "
    if not verdict.passed and verdict.reason.startswith(flagged):
        return verdict.reason[len(flagged) :]
    return ""


def verdict_record(
    verdict: execution.Verdict, program: str, replayed: execution.Verdict | None = None
) -> dict:
    """What a sample's log keeps: the verdict as BigCodeBench counts it (`passed`), whether
    every value the tests looked at was of a real class (`passed_real_values`; `made_values`
    names the first that was not), whether the test passed again on the replayed record of
    what the program did (`passed_replayed`, `replay_reason`: `replayed`, that job's verdict,
    None where the program did not pass), whether it failed for want of the network, the
    job's CPU time, and the program that ran (the calibrated one)."""
    cpu = verdict.cpu_seconds
    made = _made(verdict)
    reason = f"all tests passed, on values the program made: {made}" if made else verdict.reason
    return {
        "passed": verdict.passed or bool(made),
        "passed_real_values": verdict.passed,
        "made_values": made,
        "passed_replayed": replayed is not None and replayed.passed,
        "replay_reason": "" if replayed is None else replayed.reason,
        "outcome": "passed" if made else verdict.outcome,
        "reason": reason,
        "limit": verdict.limit,
        "needs_network": "needs the network" in verdict.reason,
        "cpu_seconds": None if cpu is None else round(cpu, 3),
        "program": program,
    }


def execute_samples(resps: list[list[str]], docs: list[dict]) -> list[list[dict]]:
    """Custom filter: every sample of every doc calibrated and run, all in one parallel batch
    (a program occurring twice for a doc runs once); then each that passed is replayed, in a
    second batch (`replay_job`)."""
    if not bigcodebench_libs.installed():
        raise RuntimeError(missing_libraries())
    libs = str(bigcodebench_libs.folder())
    programs = [
        [calibrated_program(doc, cut_at_stops(sample, STOP_STRINGS)) for sample in samples]
        for samples, doc in zip(resps, docs)
    ]
    jobs, index = [], {}
    for i, (doc_programs, doc) in enumerate(zip(programs, docs)):
        for program in doc_programs:
            if (i, program) not in index:
                index[(i, program)] = len(jobs)
                jobs.append(job(doc, program, libs))
    verdicts = execution.run_jobs(jobs)
    replayed = replay_verdicts(verdicts, [docs[i] for i, _ in index], [p for _, p in index], libs)
    return [
        [verdict_record(verdicts[index[(i, p)]], p, replayed[index[(i, p)]]) for p in doc_programs]
        for i, doc_programs in enumerate(programs)
    ]


def replay_verdicts(
    verdicts: list[execution.Verdict], docs: list[dict], programs: list[str], libs: str
) -> list[execution.Verdict | None]:
    """For each job's verdict (of `programs[i]` for `docs[i]`), the replayed verdict of the
    jobs that passed as BigCodeBench counts (None for the others): each such program run again
    on its test without the answers, recording what it did (`job(answerless=True)`), then its
    test run on that record (`replay_job`), in rounds (`rounds`). A run that left
    no record (the runner's report was not read, or was over the cap) fails its replay."""
    replayed = rounds.replayed(
        [i for i, v in enumerate(verdicts) if v.passed or _made(v)],
        lambda i: job(docs[i], programs[i], libs, answerless=True),
        lambda i, record: replay_job(docs[i], record, libs),
    )
    return [replayed.get(i) for i in range(len(verdicts))]


def process_results(doc: dict, results: list[list[dict]]) -> dict:
    """pass@1 over the doc's samples (OLMES: one greedy sample), the same counting only
    passes on real values, the same counting only passes that held again on the replayed
    record, and whether any sample failed only for want of the network (a count over the
    run)."""
    samples = results[0]
    return {
        "pass_at_1": pass_at_k(len(samples), sum(s["passed"] for s in samples), 1),
        "pass_at_1_real_values": pass_at_k(
            len(samples), sum(s["passed_real_values"] for s in samples), 1
        ),
        "pass_at_1_replayed": pass_at_k(
            len(samples), sum(s["passed_replayed"] for s in samples), 1
        ),
        "needs_network": int(any(s["needs_network"] for s in samples)),
    }


def total(counts: list[int]) -> int:
    """Aggregation for counts: the sum over all docs of the run."""
    return sum(counts)
