"""Helpers of the sandbox tests: a candidate for `add(a, b)` and its test, escape probes, and
the root-only mark."""

import os
import textwrap

import pytest

from evalpack.execution import Job

TEST = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"
HONEST = "def add(a, b):\n    return a + b\n"
DISHONEST = "def add(a, b):\n    return 0\n"
# A job's time limit where the limit is not what a test checks: its wall-clock backstop (3 x the
# limit + 2 s) outlasts a loaded machine that gives a job of seconds of CPU a tenth of a core.
GENEROUS = 60.0
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="full isolation needs root")


def job(program, timeout=2.0, **fields):
    """`program` judged by the `add` test (`fields`: the Job's other settings)."""
    return Job(
        program=program, test=TEST + "check(add)\n", entry_point="add", timeout=timeout, **fields
    )


def program(text):
    return textwrap.dedent(text).lstrip("\n")


def forged_reply(tokens_expression):
    """A candidate that answers its first call with a hand-made message (tokens built by
    `tokens_expression`, as a Python expression) and then waits."""
    return program(f"""
        import json, os, socket, stat, time
        def add(a, b):
            tokens = ["d", 1, "s", "result"] + {tokens_expression}
            text = json.dumps(tokens, separators=",:").encode()
            body = len(text).to_bytes(4, "big") + text  # a body with no binary section
            for fd in range(3, 64):
                try:
                    if stat.S_ISSOCK(os.fstat(fd).st_mode):
                        socket.socket(fileno=fd).sendall(len(body).to_bytes(4, "big") + body)
                except OSError:
                    pass
            time.sleep(60)
        """)


def probe(escape):
    """A candidate that does `escape` at import and then adds honestly: it passes exactly
    when the escape works."""
    return program(escape) + HONEST
