"""Shared test helpers: where the real data lives, and skipping cleanly when it is absent."""

import functools
import json
import os
import signal
import time
from pathlib import Path

import pytest

# the session's one leaderboard (fixture `leaderboard`), for every test folder: defined once, built once
pytest_plugins = ["tests.boards"]

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("EVALPACK_SHARED", REPO.parent / "shared"))
DATA_DIR = SHARED / "data"
OLMES_REF = SHARED / "reference" / "olmes"
OUTPUTS = SHARED / "reference" / "outputs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"  # rows in the real schemas (no mirror)
# Seconds after which a test that checks something cannot hang (a linear-time parser, a refused
# evaluation) fails instead of hanging: far beyond any load, never a claim about speed.
BACKSTOP = 120


def wait_for(condition, what: str) -> None:
    """Return once `condition()` holds; fail the test naming `what` after `BACKSTOP` seconds."""
    deadline = time.monotonic() + BACKSTOP
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


# Under pytest-xdist (`make test`: a worker per core and one more) these run on one worker
# each, one after the other: "sandbox", tests that run sandboxed jobs, some of which check
# machine-wide sandbox state (no leftover process or file) or limits measured under CPU and
# memory pressure; "leaderboard", the tests of the session's one leaderboard
# (tests/boards.py), built once.
XDIST_GROUPS = {
    "tests/sandbox/": "sandbox",
    "tests/tasks/test_humaneval.py": "sandbox",
    "tests/tasks/test_humanevalplus.py": "sandbox",
    "tests/tasks/test_olmo3_code.py": "sandbox",
    "tests/tasks/test_mbppplus.py": "sandbox",
    "tests/leaderboard/test_runs.py": "leaderboard",
    "tests/report/test_reports.py": "leaderboard",
    "tests/lmeval/test_results_folders.py": "leaderboard",  # elsewhere, a second build (25 s)
    "tests/test_install.py": "install",  # one wheel build at a time in the checkout's build/
    # BigCodeBench's tests in one process: one held runtime (1.3 GB, built per process) for all,
    # and none built beside the page-cache test (a build reads that test's unread file)
    "tests/tasks/test_bigcodebench": "bigcodebench",
}


def files_with_module_fixtures() -> set[str]:
    """Test files that define a module-scoped fixture (a Ray cluster, a served model, a venv):
    each worker that ran one of their tests would build it again."""
    return {
        path.relative_to(REPO).as_posix()
        for path in (REPO / "tests").rglob("test_*.py")
        if 'scope="module"' in path.read_text(encoding="utf-8")
    }


# Files whose tests run one at a time (one scope each) for 7 s or more (a board, a whole lm-eval
# run: `benchmarks/suite_cpu.py`): xdist hands out the largest scopes first and the one-test
# scopes in collection order, so these go first among those; last, one of them kept a worker
# busy for 10 s after the other had finished.
LONG_SINGLE_TESTS = (
    "tests/leaderboard/test_first_leaderboard.py",
    "tests/leaderboard/test_serve_ray.py",
    "tests/leaderboard/test_serve.py",
    "tests/leaderboard/test_stream.py",
    "tests/leaderboard/test_olmo3_suite.py",
    "tests/tasks/test_plain_lm_eval.py",
    "tests/judges/test_wildguard.py",
    "tests/scoring/test_math_answers.py",
)


def pytest_collection_modifyitems(items):
    """LONG_SINGLE_TESTS' tests first, the order otherwise unchanged."""
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in LONG_SINGLE_TESTS)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's scope scheduling with a scope per group above, one per file that defines a
    module-scoped fixture, and one per other test. (xdist's own `--dist loadgroup` marks do not
    take under pytest 9: it renames node ids.)"""
    from xdist.scheduler import LoadScopeScheduling

    one_worker = files_with_module_fixtures()

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            group = next((g for prefix, g in XDIST_GROUPS.items() if path.startswith(prefix)), None)
            return group or (path if path in one_worker else nodeid)

    return GroupScheduling(config, log)


@pytest.fixture(scope="session", autouse=True)
def evalpack_cache(tmp_path_factory):
    """The pack's cache folder (lm-eval's built-in task index) for this test session, shared by
    its xdist workers and the processes tests start; never the user's own."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "evalpack-cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALPACK_CACHE_DIR", str(folder))
        yield folder


requires_shared = pytest.mark.skipif(
    not DATA_DIR.is_dir(),
    reason=f"real benchmark data not found at {DATA_DIR} (a fresh clone without ../shared)",
)


def sigint_as_at_a_terminal() -> None:
    """Call before starting a process a test Ctrl-Cs: a child inherits an ignored SIGINT (a
    background job of a non-interactive shell, e.g. `make test &`, ignores it), so the test
    process takes Python's usual handler, as in a terminal, whose children get the default."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def read_jsonl(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def olmes_requests(task):
    """OLMES's own requests for `task` (e.g. "codex_humaneval::tulu") from requests_dev.jsonl."""
    return [r for r in read_jsonl(OLMES_REF / "requests_dev.jsonl") if r["task"] == task]


TASKS_DIR = REPO / "tasks"


@pytest.fixture
def mirror(monkeypatch):
    """Point the pack's loader at the real offline mirror."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"real benchmark data not found at {DATA_DIR}")
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(DATA_DIR))
    return DATA_DIR


@pytest.fixture(scope="module")
def module_mirror():
    """`mirror` for a whole test module (module-scoped fixtures that build requests)."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"real benchmark data not found at {DATA_DIR}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALPACK_DATA_DIR", str(DATA_DIR))
        yield DATA_DIR


def by_doc(instances):
    """lm-eval instances grouped by doc key, each doc's in request order."""
    docs = {}
    for inst in instances:
        docs.setdefault(inst.doc["doc_key"], []).append(inst)
    return {key: sorted(insts, key=lambda i: i.idx) for key, insts in docs.items()}


def task_manager(metadata=None):
    """lm-eval's TaskManager over the pack's tasks. Without `metadata`, one per process: its
    index of the pack's YAMLs is built once (~0.3 s each time); `load` makes new tasks."""
    if metadata is None:
        return _pack_task_manager()
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=metadata)


@functools.cache
def _pack_task_manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASKS_DIR), include_defaults=False)


def chat_requests(task_name, num_fewshot=None, samples=None):
    """Instances of one task as lm-eval builds them in chat mode (of the docs at the indices
    `samples` only, when given); with the `replay` model's template each context is the JSON of
    the message list."""
    from evalpack.models.requests import render_messages

    task = task_manager().load([task_name])["tasks"][task_name]
    if num_fewshot is not None:
        task.set_config(key="num_fewshot", value=num_fewshot)
    task.build_all_requests(
        samples=samples,
        rank=0,
        world_size=1,
        apply_chat_template=True,
        fewshot_as_multiturn=True,
        chat_template=lambda msgs, add_generation_prompt=True: render_messages(msgs),
    )
    return task.instances


def replay_eval(tasks, model_args, **kwargs):
    """Run `tasks` through lm-eval end to end with the `replay` model, in chat mode. Like a
    leaderboard worker, a test process computes lm-eval's environment report once."""
    from lm_eval import simple_evaluate

    from evalpack.lmeval import lazy_torch
    from evalpack.models.registry import register

    register()
    lazy_torch.install()

    return simple_evaluate(
        model="replay",
        model_args=model_args,
        tasks=tasks,
        apply_chat_template=True,
        fewshot_as_multiturn=True,
        task_manager=task_manager(kwargs.get("metadata")),
        **kwargs,
    )
