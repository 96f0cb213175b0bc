"""lm-eval hooks for BigCodeBench (`tasks/bigcodebench`), OLMES `bigcodebench::tulu` and
`bigcodebench_hard::tulu`, executed in the pack's sandbox (`evalpack.execution`).

Requests: OLMES's `instruct` variant in chat form (`doc_to_text` and the YAML's `gen_prefix`).
Scoring, as OLMES's `calibrate_code`: the completion (cut at OLMES's stop strings) is sanitised
against the entry point (`evalpack.scoring.code_sanitize`) and the task's `code_prompt` + a
`pass` body is put before it (BigCodeBench's calibration: the prompt's imports and signature
exist even when the answer left them out). The program runs with the task's unittest
`TestCases` in one sandboxed process, as BigCodeBench's harness runs them
(`bigcodebench_runner`); one verdict per sample, pass@1 over the samples.

Why the test shares the candidate's process (unlike HumanEval's jobs, which only exchange plain
data): BigCodeBench's tests patch the candidate's modules (`unittest.mock.patch`) and inspect
what it returns (DataFrames, matplotlib Axes, files it wrote), which cannot cross a process
boundary as plain data. The trusted side reads back only plain data (how many tests ran, which
failed and why). See the task README for what this means for forged verdicts, and for the
replayed verdict (`pass_at_1_replayed`): a passing job's record of what the program did
(`bigcodebench_record`) is played back to the same test in a second job with no candidate
code (`replay_job`, `bigcodebench_replay`).
"""

from __future__ import annotations

import ast
import logging
import re
import secrets

from .. import execution
from ..core import data
from ..core.text import cut_at_stops
from ..scoring.code_sanitize import sanitize
from ..scoring.sampling_metrics import pass_at_k
from . import bigcodebench_answerless, bigcodebench_libs, bigcodebench_sources

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

# Failures whose traceback says the test wanted the network, of which a job has loopback only:
# the operating system's own messages (name resolution, no route, no address to bind), not
# exception names a test may raise on purpose through a mock.
_NETWORK = re.compile(
    r"gaierror|Temporary failure in name resolution|Name or service not known|"
    r"Network is unreachable|Cannot assign requested address|NewConnectionError|"
    r"\[Errno (?:99|101)\]"
)

# Trusted: the check on the runner's report (`TRUSTED_CHECK`, then `_check` called on the
# runner's answer). Each job draws a secret; the report must carry its MAC under it (the
# runner's `seal`), name exactly the test methods the test class defines, each passed.
TRUSTED_CHECK = r"""
import hmac as _hmac
import re as _re
import secrets as _secrets
_NETWORK = _re.compile(NETWORK_PATTERN)


def _last_line(text):
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else ""


def _sealed(report, nonce):
    text = repr([sorted(report["tests"].items()), report["failures"], report["error"],
                 report["made"]])
    mac = _hmac.digest(nonce.encode(), text.encode("utf-8", "surrogatepass"), "sha256").hex()
    return _hmac.compare_digest(mac, report["mac"])


def _well_formed(report, *keys):
    assert type(report) is dict and type(report.get("tests")) is dict and \
        type(report.get("failures")) is list and type(report.get("error")) is str and \
        all(type(report.get(key)) is str for key in keys) and \
        all(type(k) is str and type(v) is str for k, v in report["tests"].items()) and \
        all(type(f) is list and len(f) == 2 and type(f[0]) is type(f[1]) is str
            for f in report["failures"]), "the runner's report is malformed"


def _check(report, nonce, names):
    _well_formed(report, "made", "mac")
    assert _sealed(report, nonce), "the runner's report is not sealed with the job's secret"
    _outcomes(report, names)


def _kept(report):
    # the recording run's record, for its replay (unsealed: the replay trusts nothing in it)
    return report["record"] if type(report) is dict and type(report.get("record")) is str else None


def _made(report, made_flag):
    # a pass as BigCodeBench counts it, on a value of a class the program made: failed here
    # under the run's flag, which `verdict_record` turns back into a pass (pass_at_1) and a
    # failure (pass_at_1_real_values); the candidate never sees the flag
    assert not report["made"], f"{made_flag} {report['made'][:300]}"


def _check_replay(report, names):
    # the replay job runs no candidate code (`bigcodebench_replay`): its report needs no seal
    _well_formed(report)
    assert type(report.get("notes")) is list, "the replay's report is malformed"
    try:
        _outcomes(report, names)
    except AssertionError as failure:
        notes = "; ".join(str(note) for note in report["notes"][:3])
        raise AssertionError(f"{failure} ({notes})" if notes else str(failure)) from None


def _outcomes(report, names):
    if report["error"]:
        network = "needs the network: " * bool(_NETWORK.search(report["error"]))
        raise AssertionError(f"{network}module failed: {_last_line(report['error'])}")
    tests, failures = report["tests"], report["failures"]
    assert names, "no test ran"
    missing, extra = sorted(set(names) - set(tests)), sorted(set(tests) - set(names))
    assert not missing, f"{len(missing)} of {len(names)} tests did not run ({', '.join(missing)[:200]})"
    assert not extra, f"results for tests the test class does not define ({', '.join(extra)[:200]})"
    failed = [name for name in names if tests[name] != "passed"]
    if failed:
        traces = dict(failures)
        first = traces.get(failed[0]) or tests[failed[0]]
        network = any(_NETWORK.search(trace) for trace in traces.values())
        kinds = sorted({tests[name] for name in failed} - {"failed", "error"})
        how = f" ({', '.join(kinds)}: counted as failures)" if kinds else ""
        raise AssertionError(
            f"{'needs the network: ' * network}{len(failed)} of {len(names)} tests failed "
            f"({', '.join(failed)[:200]}){how}: {_last_line(first)}")
""".replace("NETWORK_PATTERN", repr(_NETWORK.pattern))


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


# Trusted code each BigCodeBench slot's zygote runs once (`Job.zygote_prelude`): what
# BigCodeBench's harness has imported before every program (`unittest.mock`; matplotlib's pyplot,
# in its `reliability_guard`, and numpy with it), pandas, which most tests import, and the testing
# helpers the runner guards, from the job's libraries and with the settings the runner gives a
# job (Agg, UTC). Every candidate is forked with them loaded instead of importing them (about
# 1 s of CPU a job); numpy's global random state is reseeded in each (once: a process the job
# forks keeps its state, as anywhere), as its import seeds it.
# The zygote stays one thread (its candidates are cloned without libc's fork handlers): pandas'
# attempt at the venv's pyarrow (which refuses numpy 1.x) loads Arrow's jemalloc, whose
# background thread is turned off here.
ZYGOTE_PRELUDE = """
import os, sys, time
if {libs!r}:
    sys.path.insert(0, {libs!r})
os.environ.update(TZ="UTC", MPLBACKEND="Agg", JE_ARROW_MALLOC_CONF="background_thread:false")
time.tzset()
for name in {modules!r}:
    try:
        __import__(name)
    except Exception:  # (a job that imports it raises it again, in its test)
        pass
numpy = sys.modules.get("numpy")
def reseed_once(done=[]):
    if numpy is not None and not done:  # the candidate, not again what it forks (they keep it)
        done.append(True)
        numpy.random.seed()
os.register_at_fork(after_in_child=reseed_once)
"""
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
    return (
        f"BigCodeBench's libraries (or their NLTK data) are not installed in "
        f"{bigcodebench_libs.folder()}: run "
        "`python -m evalpack.tasks.bigcodebench_libs install` (see tasks/bigcodebench)"
    )


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
    (`bigcodebench_answerless`), and what the program did comes back as `Verdict.kept`."""
    names, imports = test_plan(doc["test"])
    test = bigcodebench_answerless.answerless(doc["test"]) if answerless else doc["test"]
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
        program=bigcodebench_sources.runner_source() + f"CANDIDATE_CODE = {program!r}\n",
        test=f"_nonce = _secrets.token_hex(16)\n_report = {call}\n{checks}",
        entry_point=ENTRY_POINT,
        timeout=doc["timeout"],
        trusted_prelude=TRUSTED_CHECK,
        full_runtime=True,  # its libraries, on disk: the candidate's view is not pinned
        zygote_prelude=ZYGOTE_PRELUDE.format(libs=libs, modules=PRELOADED),
    )


def private_tmp() -> bool:
    """Whether a job's `/tmp` is its own (a mount namespace: the record holds all of it)."""
    return execution.isolation().startswith("namespaces")


def replay_job(doc: dict, record: str, libs: str = "") -> execution.Job:
    """The doc's test run on `record` (what a program did, from its job's `Verdict.kept`) in
    a process with no candidate code (`bigcodebench_replay`): the replayed verdict."""
    names, imports = test_plan(doc["test"])
    call = (
        f"{REPLAY_ENTRY}({doc['code_prompt']!r}, {doc['test']!r}, {libs!r}, {imports!r}, "
        f"{private_tmp()!r})"
    )
    return execution.Job(
        program=bigcodebench_sources.replay_source(record, REPLAY_ENTRY),
        test=f"_check_replay({call}, {names!r})\n",
        entry_point=REPLAY_ENTRY,
        timeout=doc["timeout"],
        trusted_prelude=TRUSTED_CHECK,
        full_runtime=True,
        zygote_prelude=ZYGOTE_PRELUDE.format(libs=libs, modules=PRELOADED),
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
    test run on that record (`replay_job`); two batches. A run that left no record (the
    runner's report was not read) fails its replay."""
    passed = [i for i, v in enumerate(verdicts) if v.passed or _made(v)]
    failed, recording = {}, {}
    for i in passed:
        try:
            recording[i] = job(docs[i], programs[i], libs, answerless=True)
        except Exception as exc:  # noqa: BLE001 (a test the rewrite cannot take: this replay fails)
            failed[i] = (
                f"replay: the test could not be made answerless: {type(exc).__name__}: {exc}"
            )
    recorded = execution.run_jobs(list(recording.values()))
    records = {i: run.kept for i, run in zip(recording, recorded) if type(run.kept) is str}
    results = iter(execution.run_jobs([replay_job(docs[i], records[i], libs) for i in records]))
    out: list[execution.Verdict | None] = [None] * len(verdicts)
    for i in passed:
        if i in records:
            out[i] = next(results)
        else:
            reason = failed.get(i, "replay: the recording run left no record")
            out[i] = execution.Verdict(False, "error", reason[:500], 0.0)
    return out


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
