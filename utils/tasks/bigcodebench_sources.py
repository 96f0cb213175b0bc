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
PACKAGE = __name__.rpartition(".")[0]  # evalpack.tasks

# Installs `SOURCES` ([name, source] in dependency order) as modules of PACKAGE, making the
# package (and its parent) empty namespaces where the process has neither.
INSTALLER = """
def _install_modules(package, sources):
    import sys, types
    parts = package.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name not in sys.modules:
            stub = types.ModuleType(name)
            stub.__path__ = []
            sys.modules[name] = stub
    for name, source in sources:
        module = types.ModuleType(f"{package}.{name}")
        module.__package__ = package
        module.__file__ = f"<evalpack {name}>"
        sys.modules[module.__name__] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)


"""


def _source(name: str) -> str:
    return (HERE / f"{name}.py").read_text(encoding="utf-8")


@cache
def modules_source(names: tuple[str, ...]) -> str:
    """Program text installing this package's modules `names` (in dependency order)."""
    sources = [(name, _source(name)) for name in names]
    return f"{INSTALLER}_install_modules({PACKAGE!r}, {sources!r})\n\n\n"


RECORD_MODULES = (
    "bigcodebench_frames",
    "bigcodebench_plots",
    "bigcodebench_objects",
    "bigcodebench_codec",
    "bigcodebench_record",
)
REPLAY_MODULES = (
    *RECORD_MODULES,
    "bigcodebench_worker",
    "bigcodebench_runner",
    "bigcodebench_replay",
)


@cache
def runner_source() -> str:
    """The runner program (`bigcodebench_runner.py`) with the sources of its guard, worker and
    values halves, after the record's modules; a job appends `CANDIDATE_CODE`."""
    guard, worker, values, runner = (
        _source(f"bigcodebench_{name}") for name in ("guard", "worker", "values", "runner")
    )
    return (
        f"{modules_source(RECORD_MODULES)}{runner}\nGUARD_SOURCE = {guard!r}\n"
        f"WORKER_SOURCE = {worker!r}\nVALUES_SOURCE = {values!r}\n"
    )


def replay_source(record: str, entry_point: str) -> str:
    """The replay job's program: `entry_point(*args)` runs `run_replay(record, *args)`."""
    return (
        f"{modules_source(REPLAY_MODULES)}"
        f"from {PACKAGE}.bigcodebench_replay import run_replay as _replay\n"
        f"RECORD = {record!r}\n\n\ndef {entry_point}(*args):\n    return _replay(RECORD, *args)\n"
    )
