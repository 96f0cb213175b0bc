"""uv is given this machine's pip settings (`evalpack.core.uv_settings`), which `make` and the
BigCodeBench libraries' installer use."""

import subprocess
import sys

from evalpack.core import uv_settings
from evalpack.hooks.bigcodebench import libs as bigcodebench_libs
from tests.conftest import REPO


def test_pip_variables_become_uv_settings_and_uv_variables_win(monkeypatch):
    monkeypatch.setenv("PIP_FIND_LINKS", "/wheels/a /wheels/b")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///one file:///two")
    monkeypatch.setenv("PIP_DEFAULT_TIMEOUT", "180")
    monkeypatch.setenv("PIP_PRE", "yes")
    monkeypatch.setenv("UV_CONSTRAINT", "/mine.txt")
    monkeypatch.setenv("PIP_CONSTRAINT", "/pips.txt")
    settings = uv_settings.uv_settings()
    assert settings["UV_FIND_LINKS"] == "/wheels/a,/wheels/b"  # uv: comma-separated
    assert settings["UV_INDEX"] == "file:///one file:///two"
    assert settings["UV_HTTP_TIMEOUT"] == "180" and settings["UV_PRERELEASE"] == "allow"
    assert settings["UV_INDEX_STRATEGY"] == "unsafe-best-match"  # pip's best match
    assert "UV_CONSTRAINT" not in settings  # set by the user: left as it is


def test_the_script_prints_exports_a_shell_can_eval(monkeypatch):
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///with space?")
    script = REPO / "utils" / "core" / "uv_settings.py"
    shell = f'eval "$({sys.executable} -I {script})" && printf %s "$UV_INDEX"'
    done = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, check=True)
    assert done.stdout == "file:///with space?"


def test_the_libraries_install_with_the_venvs_uv_given_pips_settings(monkeypatch, tmp_path):
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    monkeypatch.setattr(sys, "executable", str(python))
    command, env = bigcodebench_libs.pip_install()
    assert command[1:3] == ["-m", "pip"] and env is None  # no uv beside it: pip
    (tmp_path / "bin" / "uv").touch()
    monkeypatch.setenv("PIP_FIND_LINKS", "/wheels")
    command, env = bigcodebench_libs.pip_install()
    assert command[:3] == [str(tmp_path / "bin" / "uv"), "pip", "install"]
    assert env["UV_FIND_LINKS"] == "/wheels" and env["UV_COMPILE_BYTECODE"] == "1"
