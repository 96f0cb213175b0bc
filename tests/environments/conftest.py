"""Fixtures shared by the verifiers environment tests."""

import pytest


@pytest.fixture(scope="module")
def env_mirror(module_mirror):
    """The real offline mirror, for a whole test module."""
    return module_mirror
