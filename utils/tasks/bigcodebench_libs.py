"""BigCodeBench's libraries, kept apart from the pack's environment.

BigCodeBench's tests were written against its pinned evaluation requirements (numpy 1.x,
pandas 2.0, matplotlib 3.7, ...), which cannot share one environment with the pack's own
dependencies (lm-eval's `datasets` needs pyarrow, which needs numpy 2). They are installed with
pip into one folder inside the virtual environment, `<sys.prefix>/bigcodebench-libs`, which the
sandbox already shows its candidates read-only (it shows them the whole environment), and only
BigCodeBench's programs put it first on their path. Nothing of the sandbox changes.

    python -m evalpack.tasks.bigcodebench_libs install   # pip install --target <folder> -r ...
    python -m evalpack.tasks.bigcodebench_libs path      # where they are (or would be)

`EVALPACK_BIGCODEBENCH_LIBS` names another folder (it must lie inside the Python installation
or the venv: the sandbox shows candidates nothing else).
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

ENV = "EVALPACK_BIGCODEBENCH_LIBS"
MARKER = "numpy"  # a folder without it has not been installed


def folder() -> Path:
    return Path(os.environ.get(ENV) or Path(sys.prefix) / "bigcodebench-libs").resolve()


def installed() -> bool:
    return (folder() / MARKER).is_dir()


def requirements_file() -> Path:
    return Path(
        str(resources.files("evalpack.task_configs") / "bigcodebench" / "requirements-eval.txt")
    )


def install() -> int:
    """pip install the pinned requirements into the folder; pip's exit status."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-warn-conflicts",  # the folder is a world of its own: the venv's pins do not apply
        "--target",
        str(folder()),
        "-r",
        str(requirements_file()),
    ]
    return subprocess.call(command)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["path"]:
        print(folder())
        return 0
    if args == ["install"]:
        return install()
    print("usage: python -m evalpack.tasks.bigcodebench_libs install|path", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
