"""Helpers of the sandbox tests: a candidate for `add(a, b)` and its test, escape probes, and
the root-only mark."""

import os
import textwrap

import pytest

from evalpack.execution import Job

TEST = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"
HONEST = "def add(a, b):\n    return a + b\n"
DISHONEST = "def add(a, b):\n    return 0\n"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="full isolation needs root")


def job(program, timeout=2.0):
    """`program` judged by the `add` test."""
    return Job(program=program, test=TEST + "check(add)\n", entry_point="add", timeout=timeout)


def program(text):
    return textwrap.dedent(text).lstrip("\n")


def probe(escape):
    """A candidate that does `escape` at import and then adds honestly: it passes exactly
    when the escape works."""
    return program(escape) + HONEST
