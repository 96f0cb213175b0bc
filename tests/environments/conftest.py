"""Fixtures shared by the verifiers environment tests."""

import importlib.util

import pytest

# each test imports verifiers where it uses it: its import (about 2 s) would otherwise be paid
# by every xdist worker collecting these files, most of which run none of them
requires_verifiers = pytest.mark.skipif(
    importlib.util.find_spec("verifiers") is None,
    reason="verifiers not installed: pip install 'evalpack[verifiers]' (make test installs it)",
)


@pytest.fixture(scope="module")
def env_mirror(module_mirror):
    """The real offline mirror, for a whole test module."""
    return module_mirror
