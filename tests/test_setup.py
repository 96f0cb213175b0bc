"""Set-up papercuts: `make demo` reads a user's own EVALPACK_DATA_DIR, and every documented CPU
torch install keeps the pack's setuptools pin (torch asks for setuptools>=77.0.3, and pip would
take the newest, past the pack's `<81`, printing an ERROR)."""

import os
import re
import shutil
import subprocess

import pytest

from tests.conftest import REPO

DEMO_MATH = REPO / "demo" / "data" / "EleutherAI__hendrycks_math"


def demo_data_dirs(**env: str) -> set[str]:
    """The EVALPACK_DATA_DIR values `make demo` would run with (`make -n`: nothing runs)."""
    clean = {k: v for k, v in os.environ.items() if k != "EVALPACK_DATA_DIR"}
    done = subprocess.run(
        ["make", "-n", "-C", str(REPO), "demo"],
        capture_output=True,
        text=True,
        check=True,
        env={**clean, **env},
        timeout=60,
    )
    return set(re.findall(r"EVALPACK_DATA_DIR=(\S+) ", done.stdout))


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_demo_reads_the_users_data_dir(tmp_path):
    mine = tmp_path / "mirror"
    mine.mkdir()
    (mine / DEMO_MATH.name).symlink_to(DEMO_MATH, target_is_directory=True)
    assert demo_data_dirs(EVALPACK_DATA_DIR=str(mine)) == {str(mine)}
    # a folder without MATH: the sample the pack ships
    assert demo_data_dirs(EVALPACK_DATA_DIR=str(tmp_path)) == {str(REPO / "demo" / "data")}


def test_every_cpu_torch_install_keeps_the_setuptools_pin():
    (pin,) = re.findall(
        r'^ *"(setuptools[^"]*)",', (REPO / "pyproject.toml").read_text(), re.MULTILINE
    )
    lines = [
        line
        for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
        for line in path.read_text(encoding="utf-8").splitlines()
        if "pip install torch" in line
    ]
    assert len(lines) >= 3
    for line in lines:
        assert f'"{pin}"' in line, line
