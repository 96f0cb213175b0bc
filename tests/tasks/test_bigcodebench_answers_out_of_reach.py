"""Where else a BigCodeBench program could find its answers, for the replayed verdict
(`pass_at_1_replayed`, tasks/bigcodebench/README.md): the one in its own module is taken out of
the recording run (test_bigcodebench_redteam_values.py, `READS_ANSWERS`); the dataset and the
checkout are not in a job's view; a test the answerless rewrite cannot take fails its replay
alone, with the reason, and nothing else stops."""

import os

from evalpack.hooks.bigcodebench import task as bigcodebench
from tests.conftest import DATA_DIR, REPO
from tests.tasks.test_bigcodebench_redteam_values import DOUBLES, HONEST_DOUBLE, needs_root, records

# Where else a program could find its answers: the dataset (the offline mirror, the hub's
# cache) and the pack's checkout are not in a job's view (only the installation is).
SOURCES_OF_ANSWERS = [
    str(DATA_DIR / "bigcode__bigcodebench-hard/default/v0.1.2.jsonl"),
    os.path.expanduser("~/.cache/huggingface"),
    str(REPO / "tests"),
]
LOOKS = """
import unittest
class TestCases(unittest.TestCase):
    def test_nothing_found(self):
        self.assertEqual(task_func(0), [])
"""


@needs_root
def test_the_dataset_is_out_of_a_jobs_view():
    visible = [path for path in SOURCES_OF_ANSWERS if os.path.exists(path)]
    assert str(REPO / "tests") in visible  # (here it exists: the job must not see it)
    program = (
        f"import os\ndef task_func(x):\n    return [p for p in {visible!r} if os.path.exists(p)]\n"
    )
    record = records([(LOOKS, program)])[0]
    assert record["passed"] and record["passed_replayed"], record["reason"]


@needs_root
def test_a_test_the_rewrite_cannot_take_fails_its_replay_alone(monkeypatch):
    def refuses(test):
        raise ValueError("an unforeseen test")

    monkeypatch.setattr(bigcodebench.answerless_test, "answerless", refuses)
    record = records([(DOUBLES, HONEST_DOUBLE)])[0]
    assert record["passed"] and not record["passed_replayed"], record["replay_reason"]
    assert "could not be made answerless: ValueError: an unforeseen test" in record["replay_reason"]
