"""BigCodeBench's libraries, kept apart from the pack's environment.

BigCodeBench's tests were written against its pinned evaluation requirements (numpy 1.x,
pandas 2.0, matplotlib 3.7, ...), which cannot share one environment with the pack's own
dependencies (lm-eval's `datasets` needs pyarrow, which needs numpy 2). They are installed with
pip into one folder inside the virtual environment, `<sys.prefix>/bigcodebench-libs`, which the
sandbox already shows its candidates read-only (it shows them the whole environment), and only
BigCodeBench's programs put it first on their path. Nothing of the sandbox changes.

    python -m evalpack.hooks.bigcodebench.libs install   # pip install --target <folder> -r ...
                                                         # (uv's, where the venv has uv)
    python -m evalpack.hooks.bigcodebench.libs path      # where they are (or would be)

The install also puts the NLTK data BigCodeBench's NLP tasks load (`punkt`, `stopwords`) into
`<folder>/nltk_data`, which their jobs get as `NLTK_DATA`: the programs download it themselves
(`nltk.download`), which a job cannot (no network). The files are NLTK's own, unchanged, as the
PyPI wheel of llama-index-core 0.10.30 vendors them (pinned by its sha256 below).

`EVALPACK_BIGCODEBENCH_LIBS` names another folder (it must lie inside the Python installation
or the venv: the sandbox shows candidates nothing else).

The replayed verdict's jobs (the recording run and the replay) read the folder from a copy held
in memory for the run (`held_folders`, the sandbox's `Job.held_runtime`), never from the disk,
whose page cache the first run's programs share.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from functools import cache
from importlib import resources
from pathlib import Path

from ...core import uv_settings

ENV = "EVALPACK_BIGCODEBENCH_LIBS"
MARKER = "numpy"  # a folder without it has not been installed
NLTK_DATA = "nltk_data"  # inside the folder
# NLTK's `punkt` and `stopwords` packages, unchanged, as this wheel vendors them (NLTK data,
# Apache-2.0); the members under NLTK_DATA_IN_WHEEL are copied, macOS's .DS_Store left out.
NLTK_WHEEL = "llama-index-core==0.10.30"
NLTK_WHEEL_SHA256 = "2f291ce2975f9dbf0ea87d684d3d8122ce216265f468f32baa2cf4ecfb34ed2a"
NLTK_DATA_IN_WHEEL = "llama_index/core/_static/nltk_cache/"
NLTK_PACKAGES = ("corpora/stopwords/", "tokenizers/punkt/")


def folder() -> Path:
    return Path(os.environ.get(ENV) or Path(sys.prefix) / "bigcodebench-libs").resolve()


def installed() -> bool:
    """The libraries and the NLTK data (a folder installed before the data was added lacks
    it: `install` again rather than fail the NLP tasks quietly)."""
    return (folder() / MARKER).is_dir() and nltk_data().is_dir()


def missing() -> str:
    """The one line a run (or a leaderboard's plan) without the libraries gets."""
    return (
        f"BigCodeBench's libraries (or their NLTK data) are not installed in {folder()}: run "
        "`python -m evalpack.hooks.bigcodebench.libs install` (see tasks/bigcodebench)"
    )


def requirements_file() -> Path:
    return Path(
        str(resources.files("evalpack.task_configs") / "bigcodebench" / "requirements-eval.txt")
    )


def nltk_data() -> Path:
    return folder() / NLTK_DATA


# What every Python environment has besides the standard library, which the libraries' own code
# imports from the environment (librosa's `pkg_resources`: BigCodeBench/227)
BASE = ("setuptools", "pip", "wheel")


@cache
def held_folders(libs: str, modules: tuple[str, ...]) -> tuple[str, ...]:
    """What the replayed verdict's jobs hold in memory besides the sandbox's view
    (`Job.held_runtime`): the libraries' folder `libs` and the installed BASE distributions;
    without `libs` (the pack's own tests, which run on the environment's packages), the
    installed distributions that provide `modules` instead of the folder. Each distribution
    with everything it requires (extras aside)."""
    providers = importlib.metadata.packages_distributions()
    names = set(BASE)
    if not libs:
        names.update(name for module in modules for name in providers.get(module.split(".")[0], ()))
    return ((libs,) if libs else ()) + _installed(tuple(sorted(names)))


def _installed(names: tuple[str, ...]) -> tuple[str, ...]:
    """The folders and top-level files of the installed distributions `names` and of all they
    require (extras aside), as paths."""
    wanted, seen, folders = list(names), set(), set()
    while wanted:
        name = wanted.pop()
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for path in distribution.files or ():
            if path.parts[0] != "..":  # (its scripts, outside the packages' folder)
                folders.add(str(distribution.locate_file(path.parts[0])))
        for requirement in distribution.requires or ():
            if not re.search(r";.*\bextra\b", requirement):
                wanted.append(re.match(r"[A-Za-z0-9._-]+", requirement).group())
    return tuple(sorted(folders))


def install() -> int:
    """pip install the pinned requirements, then the NLTK data, into a sibling of the folder
    that is renamed into place only when both succeeded (an interrupted install leaves no
    folder that `installed()` would take for a whole one; a failed one leaves nothing); the
    first failing step's exit status. The folder it replaces is moved aside before, and
    deleted after, so that it is never seen half deleted."""
    target = folder()
    staging, old = (target.with_name(f"{target.name}.{end}") for end in ("partial", "old"))
    for leftover in (staging, old):  # from an install that was killed
        shutil.rmtree(leftover, ignore_errors=True)
    status = install_libraries(staging) or install_nltk_data(staging / NLTK_DATA)
    if status:
        shutil.rmtree(staging, ignore_errors=True)
        return status
    if target.exists():
        target.rename(old)
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)
    return 0


def install_libraries(target: Path) -> int:
    command, env = pip_install()
    command += ["--quiet", "--target", str(target), "-r", str(requirements_file())]
    return subprocess.call(command, env=env)


def pip_install() -> tuple[list[str], dict[str, str] | None]:
    """The install command and its environment: uv's `pip install` where uv is installed beside
    this interpreter (`make test` installs it: the same versions, faster), given this machine's
    pip settings (`uv_settings`), else pip's own."""
    uv = Path(sys.executable).with_name("uv")
    if uv.is_file():
        env = {**os.environ, **uv_settings.uv_settings()}
        return [str(uv), "pip", "install", "--python", sys.executable], env
    # the folder is a world of its own: the venv's pins do not apply
    return [sys.executable, "-m", "pip", "install", "--no-warn-conflicts"], None


def install_nltk_data(target_folder: Path) -> int:
    """Download the pinned wheel (no dependencies), check its sha256, copy the NLTK packages
    out of it into `target_folder`."""
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        status = subprocess.call(command + ["--only-binary=:all:", "-d", scratch, NLTK_WHEEL])
        if status:
            return status
        (wheel,) = Path(scratch).glob("*.whl")
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != NLTK_WHEEL_SHA256:
            print(f"{wheel.name}: sha256 {digest}, expected {NLTK_WHEEL_SHA256}", file=sys.stderr)
            return 1
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                inner = name.removeprefix(NLTK_DATA_IN_WHEEL)
                if inner.startswith(NLTK_PACKAGES) and not name.endswith(("/", ".DS_Store")):
                    target = target_folder / inner
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(archive.read(name))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["path"]:
        print(folder())
        return 0
    if args == ["install"]:
        return install()
    if args == ["check"]:  # how the leaderboard's plan asks (it imports no hook)
        print("" if installed() else missing())
        return 0 if installed() else 1
    print("usage: python -m evalpack.hooks.bigcodebench.libs install|path|check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
