"""IFBench checkers on bad input (no text, deep markup, other scripts, long responses) and
their bounds; the shipped NLTK data, verified and used offline."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from evalpack.scoring.ifbench import checkers, registry, resources
from tests.conftest import BACKSTOP
from tests.scoring.ifbench_cases import CASES

BAD_INPUTS = {
    "empty": "",
    "whitespace": " \n\t\n ",
    "nested markdown": "> " * 3000 + "* " * 3000 + "[" * 3000 + "(" * 3000 + "**x**" + "]" * 3000,
    "other scripts": "日本語の文章です。これはテストです！ Привет, мир. مرحبا بالعالم؟ 🙂 " * 500,
    "one long word": "a" * 200_000,
    "long prose": "They said it was fine, and we agreed. Was it? Yes!\n" * 4000,
    "quotes and commas": '"' + ',"x' * 60_000,
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_every_checker_gives_a_verdict_on_bad_input(name):
    """No checker raises out of `score_response` or needs long: each instruction gets two
    booleans, and an error, when there is one, names what went wrong."""
    ids = list(registry.INSTRUCTION_TYPES)
    doc = {"instruction_id_list": ids, "kwargs": [CASES[iid][0] for iid in ids]}
    record = checkers.score_response(doc, BAD_INPUTS[name])
    assert record["instruction_id_list"] == ids
    assert all(isinstance(v, bool) for v in record["strict"] + record["loose"])
    errors = [e for e in record.get("errors", []) if e]
    # only the authors' own failures: csv's field limit, an empty CSV field, no sentence
    allowed = ("field larger than field limit", "string index out of range", "no sentence")
    assert all(any(a in e for a in allowed) for e in errors), errors
    if not BAD_INPUTS[name].strip():
        assert not any(record["strict"]) and not any(record["loose"])


def test_a_checker_past_its_bound_gives_up_and_says_so(monkeypatch):
    def spin(text):  # CPU work that ends only at the bound (or, if the bound failed, later)
        deadline = time.monotonic() + BACKSTOP
        while time.monotonic() < deadline:
            sum(range(1000))
        return True

    monkeypatch.setattr(checkers, "CHECK_SECONDS", 0.5)
    monkeypatch.setitem(registry.CHECKERS, "format:no_whitespace", spin)
    doc = {"instruction_id_list": ["format:no_whitespace", "words:vowel"], "kwargs": [{}, {}]}
    record = checkers.score_response(doc, "Spam")
    assert record["strict"] == record["loose"] == [False, True]
    assert record["errors"][0] == (
        "format:no_whitespace: gave up: the checker ran past its bound of 0.5 CPU seconds"
    )
    assert record["errors"][1] is None


def test_the_shipped_nltk_data_verifies():
    root = resources.install()
    resources.verify(root)
    assert (root / "NOTICE").is_file() and (root / "LICENSE-Apache-2.0.txt").is_file()
    import nltk

    # what NLTK's own corpus reader reads from the shipped folder
    assert resources.stopwords() == set(nltk.corpus.stopwords.words("english"))
    assert len(resources.stopwords()) == 179 and "the" in resources.stopwords()
    assert not list(root.rglob("*.pickle"))


def test_a_missing_or_altered_file_is_one_clear_error(tmp_path, monkeypatch):
    root = tmp_path / "nltk_data"
    shutil.copytree(resources.data_dir(), root)
    target = root / "corpora" / "stopwords" / "english"
    target.write_text(target.read_text() + "extra\n")
    with pytest.raises(resources.ResourceError, match="stopwords/english does not match"):
        resources.verify(root)
    (root / resources.TAGGER).with_suffix(".classes.json").unlink()
    target.unlink()
    with pytest.raises(resources.ResourceError, match="corpora/stopwords/english, not found"):
        resources.verify(root)


OFFLINE_SCRIPT = """
import json, nltk
def refuse(*args, **kwargs):
    raise SystemExit("nltk.download called")
nltk.download = refuse
from evalpack.scoring.ifbench import checkers
doc = {"instruction_id_list": ["words:start_verb", "ratio:stop_words"],
       "kwargs": [{}, {"percentage": 40}]}
print(json.dumps(checkers.score_response(doc, "Write a poem about them and us.")))
"""


def test_scores_offline_without_any_download(tmp_path):
    """Downloads refused, the network off where possible, NLTK_DATA pointing at a decoy tagger
    and stop-word list: the shipped data is what is used."""
    decoy = tmp_path / "decoy"
    tagger = decoy / resources.TAGGER
    tagger.parent.mkdir(parents=True)
    for part in ("weights", "tagdict", "classes"):
        tagger.with_suffix(f".{part}.json").write_text("{}" if part != "classes" else '["NN"]')
    (decoy / "corpora" / "stopwords").mkdir(parents=True)
    (decoy / "corpora" / "stopwords" / "english").write_text("write\npoem\n")
    env = {**os.environ, "NLTK_DATA": str(decoy), "HOME": str(tmp_path)}
    unshare = ["unshare", "-n"] if shutil.which("unshare") else []
    if unshare and subprocess.run([*unshare, "true"], capture_output=True, check=False).returncode:
        unshare = []
    run = subprocess.run(
        [*unshare, sys.executable, "-c", OFFLINE_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=BACKSTOP * 3,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    record = json.loads(run.stdout.strip().splitlines()[-1])
    # the decoys would tag every word NN and find 2 stop words of 7 (under 40%); the shipped
    # tagger tags "Write" VB, the shipped list has "a", "about", "them", "and" (over 40%)
    assert record["strict"] == [True, False]
