"""A checkout named `evalpack` (git's default) where Python starts does not shadow the editable
install (`evalpack.core.editable_first`): without the `.pth` it writes, Python imports the
checkout as an empty namespace package. Checked in a venv of its own holding the project's
editable install (its `.pth` and finder), so the outcome does not depend on how this
environment was set up."""

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from evalpack.core import editable_first
from tests.conftest import REPO

PROBE = "import evalpack; print(evalpack.__file__)"


@pytest.fixture
def venv_with_the_install(tmp_path) -> tuple[Path, Path]:
    """(its python, its site-packages): a fresh venv with this environment's editable install."""
    installed = Path(sysconfig.get_paths()["purelib"])
    files = sorted(installed.glob("__editable__*evalpack*"))
    if not files:
        pytest.skip("the pack is not installed editable here (pip install -e .)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = venv.glob("lib/python*/site-packages")
    for file in files:
        (site / file.name).write_bytes(file.read_bytes())
    return venv / "bin" / "python", site


def imported_from(python: Path, cwd: Path) -> str:
    done = subprocess.run(
        [python, "-c", PROBE], cwd=cwd, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


def test_a_checkout_named_evalpack_does_not_shadow_the_install(venv_with_the_install, tmp_path):
    python, site = venv_with_the_install
    beside = tmp_path / "work"
    beside.mkdir()
    (beside / "evalpack").symlink_to(REPO, target_is_directory=True)  # `git clone` there
    assert imported_from(python, beside) == "None"  # the checkout, as a namespace package
    assert editable_first.install(site) == site / editable_first.PTH_NAME
    assert imported_from(python, beside) == str(REPO / "utils" / "__init__.py")
    assert imported_from(python, tmp_path) == str(REPO / "utils" / "__init__.py")
