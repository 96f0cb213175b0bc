"""The trusted check on a BigCodeBench runner's report: the prelude of every BigCodeBench job
(`Job.trusted_prelude`, run by the sandbox's trusted worker, never by the candidate), then
`_check` (or `_check_replay`, `_kept`, `_made`) called by the job's test on the runner's answer.
Each job draws a secret; the report must carry its MAC under it (the runner's `seal`), name
exactly the test methods the test class defines, each passed. Shipped as source (`sources`):
standard library only."""

import hmac as _hmac
import re as _re
import secrets as _secrets  # noqa: F401 (the job's test draws its secret with it)

# Failures whose traceback says the test wanted the network, of which a job has loopback only:
# the operating system's own messages (name resolution, no route, no address to bind), not
# exception names a test may raise on purpose through a mock.
_NETWORK = _re.compile(
    r"gaierror|Temporary failure in name resolution|Name or service not known|"
    r"Network is unreachable|Cannot assign requested address|NewConnectionError|"
    r"\[Errno (?:99|101)\]"
)


def _last_line(text):
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else ""


def _sealed(report, nonce):
    text = repr(
        [sorted(report["tests"].items()), report["failures"], report["error"], report["made"]]
    )
    mac = _hmac.digest(nonce.encode(), text.encode("utf-8", "surrogatepass"), "sha256").hex()
    return _hmac.compare_digest(mac, report["mac"])


def _well_formed(report, *keys):
    assert (
        type(report) is dict
        and type(report.get("tests")) is dict
        and type(report.get("failures")) is list
        and type(report.get("error")) is str
        and all(type(report.get(key)) is str for key in keys)
        and all(type(k) is str and type(v) is str for k, v in report["tests"].items())
        and all(
            type(f) is list and len(f) == 2 and type(f[0]) is type(f[1]) is str
            for f in report["failures"]
        )
    ), "the runner's report is malformed"


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
    # the replay job runs no candidate code (`replay.run`): its report needs no seal
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
    assert not missing, (
        f"{len(missing)} of {len(names)} tests did not run ({', '.join(missing)[:200]})"
    )
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
            f"({', '.join(failed)[:200]}){how}: {_last_line(first)}"
        )
