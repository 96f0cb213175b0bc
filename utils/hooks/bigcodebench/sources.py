"""The programs of BigCodeBench's jobs, made of this package's own sources.

A candidate process cannot import the pack itself: the sandbox shows it the installation, never
a source checkout (an editable install), so a job's program carries the sources it needs. The
runner (`runner_source`) carries its guard, worker and values halves as strings it executes
into namespaces of its own; the modules the replayed verdict uses on both sides (the codec, the
record, the replay) are installed as modules under their own names by `modules_source`, so
that they import one another as they do here.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

HERE = Path(__file__).parent
PACKAGE = __name__.rpartition(".")[0]  # evalpack.hooks.bigcodebench

# Installs `sources` ([dotted name under `package`, source] in dependency order) as modules,
# making every package above them an empty namespace where the process has none.
INSTALLER = """
def _install_modules(package, sources):
    import sys, types
    def stub(name):
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = []
            sys.modules[name] = module
    parts = package.split(".")
    for i in range(1, len(parts) + 1):
        stub(".".join(parts[:i]))
    for name, source in sources:
        home, _, _ = f"{package}.{name}".rpartition(".")
        stub(home)
        module = types.ModuleType(f"{package}.{name}")
        module.__package__ = home
        module.__file__ = f"<evalpack {name}>"
        sys.modules[module.__name__] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)


"""


def source(name: str) -> str:
    """The source of this package's module `name` (dotted, relative: `job.codec`)."""
    return (HERE / f"{name.replace('.', '/')}.py").read_text(encoding="utf-8")


@cache
def modules_source(names: tuple[str, ...]) -> str:
    """Program text installing this package's modules `names` (in dependency order)."""
    sources = [(name, source(name)) for name in names]
    return f"{INSTALLER}_install_modules({PACKAGE!r}, {sources!r})\n\n\n"


# What a job's process runs, as modules: job/ in the candidate's run and the replay's, replay/
# in the replay's (both import only the standard library and these modules: the package's
# shape test checks it).
RECORD_MODULES = ("job.frames", "job.plots", "job.objects", "job.codec", "job.record")
REPLAY_MODULES = (*RECORD_MODULES, "job.worker", "job.runner", "replay.run")


@cache
def runner_source() -> str:
    """The runner program (`job/runner.py`) with the sources of its guard, worker and values
    halves, after the record's modules; a job appends `CANDIDATE_CODE`."""
    guard, worker, values, runner = (
        source(f"job.{name}") for name in ("guard", "worker", "values", "runner")
    )
    return (
        f"{modules_source(RECORD_MODULES)}{runner}\nGUARD_SOURCE = {guard!r}\n"
        f"WORKER_SOURCE = {worker!r}\nVALUES_SOURCE = {values!r}\n"
    )


def replay_source(record: str, entry_point: str) -> str:
    """The replay job's program: `entry_point(*args)` runs `run_replay(record, *args)`."""
    return (
        f"{modules_source(REPLAY_MODULES)}"
        f"from {PACKAGE}.replay.run import run_replay as _replay\n"
        f"RECORD = {record!r}\n\n\ndef {entry_point}(*args):\n    return _replay(RECORD, *args)\n"
    )


@cache
def trusted_check() -> str:
    """The trusted prelude of every BigCodeBench job (`trusted/check.py`)."""
    return source("trusted.check")


def zygote_prelude(libs: str, modules: tuple[str, ...]) -> str:
    """The slot's zygote prelude (`trusted/zygote.py`), preparing `libs` and `modules`."""
    return f"{source('trusted.zygote')}\nprepare({libs!r}, {modules!r})\n"
