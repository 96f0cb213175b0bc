"""ifeval_tulu: OLMES's messages and verdicts on real responses, end to end, offline data.

The checkers one by one: tests/test_ifeval_checkers.py."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from evalpack.core.data import DataError
from evalpack.hooks import ifeval as tasks_ifeval
from evalpack.scoring.ifeval import checkers, resources
from tests.conftest import (
    DATA_DIR,
    OLMES_REF,
    OUTPUTS,
    chat_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
    task_manager,
)

IFEVAL_ROWS = DATA_DIR / "google__IFEval" / "default" / "train.jsonl"


def test_the_shipped_punkt_files_verify():
    root = resources.install_punkt()
    resources.verify(root)
    assert (root / "NOTICE").is_file() and (root / "LICENSE-Apache-2.0.txt").is_file()


def test_a_missing_or_altered_punkt_file_is_one_clear_error(tmp_path, monkeypatch):
    root = tmp_path / "nltk_data"
    shutil.copytree(resources.data_dir(), root)
    target = root / "tokenizers" / "punkt_tab" / "english" / "sent_starters.txt"
    target.write_text(target.read_text() + "extra\n")
    with pytest.raises(resources.ResourceError, match="sent_starters.txt does not match"):
        resources.verify(root)
    target.unlink()
    monkeypatch.setattr(resources, "data_dir", lambda: root)
    with pytest.raises(
        resources.ResourceError, match="tokenizers/punkt_tab/english/sent_starters.txt .*not found"
    ):
        resources.install_punkt()


def _network_off() -> list[str]:
    probe = (
        subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
        if shutil.which("unshare")
        else None
    )
    if probe is not None and probe.returncode == 0:
        return ["unshare", "-n"]
    return []


OFFLINE_SCRIPT = """
import json, nltk
def refuse(*args, **kwargs):
    raise SystemExit("nltk.download called")
nltk.download = refuse
from evalpack.scoring.ifeval import checkers
doc = {"key": 7, "prompt": "p", "kwargs": [
    {"relation": "less than", "num_sentences": 3},
    {"capital_relation": "at least", "capital_frequency": 2}, {}],
    "instruction_id_list": ["length_constraints:number_sentences",
                            "change_case:capital_word_frequency", "change_case:english_lowercase"]}
print(json.dumps(checkers.score_response(doc, "Mr. Smith met MR. JONES. They TALKED.")))
"""


def test_scores_offline_without_any_download(tmp_path):
    """Network off where possible, downloads refused, and NLTK_DATA pointing at a decoy Punkt
    model with empty tables (it would split "Mr. Smith met MR. JONES." after "Mr." and "MR."):
    the shipped model is the one used."""
    decoy = tmp_path / "decoy" / "tokenizers" / "punkt_tab" / "english"
    decoy.mkdir(parents=True)
    for name in resources.PUNKT_FILES:
        (decoy / name.rsplit("/", 1)[-1]).write_text("")
    env = {**os.environ, "NLTK_DATA": str(tmp_path / "decoy"), "HOME": str(tmp_path)}
    run = subprocess.run(
        [*_network_off(), sys.executable, "-c", OFFLINE_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    record = json.loads(run.stdout.strip().splitlines()[-1])
    assert record["strict"] == [True, True, False]


def test_metrics_from_one_record():
    record = {
        "instruction_id_list": [
            "punctuation:no_comma",
            "keywords:frequency",
            "punctuation:no_comma",
        ],
        "strict": [True, False, False],
        "loose": [True, True, True],
    }
    scores = tasks_ifeval.process_results({}, [record])
    assert scores["prompt_level_strict_acc"] == 0.0 and scores["prompt_level_loose_acc"] == 1.0
    assert scores["inst_level_strict_acc"] == [True, False, False]
    assert scores["punctuation:no_comma_strict_acc"] == [True, False]
    assert scores["keywords:frequency_loose_acc"] == [True]
    assert scores["startend:quotation_loose_acc"] == []
    assert len(scores) == 4 + 2 * 25
    # instruction level is a micro mean over instructions, not a mean of per-doc means
    assert tasks_ifeval.micro_mean([[True, False, False], [True]]) == 0.5
    assert tasks_ifeval.micro_mean([[], []]) is None


def test_a_doc_that_never_finishes_is_cut_off(monkeypatch):
    import time

    monkeypatch.setattr(tasks_ifeval, "DOC_TIMEOUT", 1.0)
    monkeypatch.setattr(tasks_ifeval, "_judge", lambda job: time.sleep(30))
    doc = {
        "key": 1,
        "prompt": "p",
        "instruction_id_list": ["punctuation:no_comma"] * 2,
        "kwargs": [{}, {}],
    }
    [record] = tasks_ifeval.score_docs([["No commas"]], [doc])
    assert record["strict"] == record["loose"] == [False, False]
    assert record["scoring_failure"] == "hard time bound 1s"


def test_a_malformed_row_is_one_clear_error(tmp_path, monkeypatch):
    good = {
        "key": 1,
        "prompt": "p",
        "instruction_id_list": ["punctuation:no_comma"],
        "kwargs": [{}],
    }
    bad = {**good, "key": 2, "instruction_id_list": ["punctuation:no_comma", "x:y"]}
    folder = tmp_path / "google__IFEval" / "default"
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=r"split 'train' row 1: .*unknown instruction ids \['x:y'"):
        tasks_ifeval.load(path="google/IFEval", splits=["train"])
    known = checkers.registry()
    short = {**good, "kwargs": []}
    assert "field 'kwargs' must be a list of 1" in tasks_ifeval.row_problem(short, known)
    assert tasks_ifeval.row_problem(good, known) is None


@requires_shared
def test_task_settings_are_olmes(mirror):
    task = task_manager().load(["ifeval_tulu"])["tasks"]["ifeval_tulu"]
    assert len(task.eval_docs) == 541
    olmes = next(
        r for r in read_jsonl(OLMES_REF / "requests_dev_next.jsonl") if r["task"] == "ifeval::tulu"
    )
    gen = dict(task.config.generation_kwargs)
    assert gen.pop("until") == olmes["stop_sequences"] == []
    expected = {k: v for k, v in olmes["generation_kwargs"].items() if k != "truncate_context"}
    assert gen == expected == {"max_gen_toks": 2048, "do_sample": False, "temperature": 0.0}
    assert olmes["assistant_prefix"] == "" and olmes["repeats"] == 1
    assert task.config.num_fewshot == 0 and not task.config.description
    assert task.config.metadata["primary"] == {
        "metric": "prompt_level_loose_acc",
        "filter": "olmes",
    }


@requires_shared
def test_olmes_copy_of_the_data_is_a_documented_option(mirror):
    # ifeval_tulu_h4 reads HuggingFaceH4/ifeval: not in the mirror, so its file is named
    with pytest.raises(DataError, match="HuggingFaceH4__ifeval/default/train.jsonl"):
        task_manager().load(["ifeval_tulu_h4"])


@requires_shared
def test_messages_for_all_541_prompts(mirror):
    rows = read_jsonl(IFEVAL_ROWS)
    olmes = {
        r["key"]: r
        for r in read_jsonl(OLMES_REF / "requests_dev_next.jsonl")
        if r["task"] == "ifeval::tulu"
    }
    assert len(olmes) == 100
    instances = chat_requests("ifeval_tulu")
    assert len(instances) == len(rows) == 541
    compared = 0
    for inst in instances:
        messages = json.loads(inst.args[0])
        assert messages == [{"role": "user", "content": rows[inst.doc_id]["prompt"]}]
        reference = olmes.get(inst.doc["doc_key"])
        if reference:
            compared += 1
            assert messages == reference["messages"]
            encoded = json.dumps(messages, ensure_ascii=False, separators=(",", ":"))
            assert hashlib.sha256(encoded.encode()).hexdigest() == reference["sha256_messages"]
    assert compared == 100


def _real_cases():
    docs = {
        f"google__IFEval/default/train#{i}": row for i, row in enumerate(read_jsonl(IFEVAL_ROWS))
    }
    completions = {row["id"]: row for row in read_jsonl(OUTPUTS / "ifeval.jsonl")}
    return docs, completions


@requires_shared
def test_olmes_verdicts_on_every_real_response_available():
    docs, completions = _real_cases()
    reference = read_jsonl(OLMES_REF / "scores_dev_ifeval.jsonl")
    deterministic = [row for row in reference if not row["nondeterministic"]]
    assert len(reference) == 122 and len(deterministic) == 122
    for row in deterministic:
        record = checkers.score_response(docs[row["key"]], completions[row["id"]]["completion"])
        assert record["instruction_id_list"] == row["instruction_id_list"]
        assert (record["strict"], record["loose"]) == (
            row["inst_level_strict"],
            row["inst_level_loose"],
        ), row["id"]
        assert (all(record["strict"]), all(record["loose"])) == (
            row["prompt_level_strict"],
            row["prompt_level_loose"],
        ), row["id"]


@requires_shared
def test_end_to_end_with_replay_on_the_541_gpt4_responses(mirror):
    out = replay_eval(["ifeval_tulu"], f"completions={OUTPUTS / 'ifeval.jsonl'}", log_samples=True)
    results = out["results"]["ifeval_tulu"]
    samples = out["samples"]["ifeval_tulu"]
    records = [s["filtered_resps"][0] for s in samples]
    assert len(records) == 541 and not any("errors" in r for r in records)
    assert sum(all(r["strict"]) for r in records) == 417
    assert sum(all(r["loose"]) for r in records) == 431
    assert results["prompt_level_strict_acc,olmes"] == pytest.approx(417 / 541)
    assert results["prompt_level_loose_acc,olmes"] == pytest.approx(431 / 541)
    verdicts = [
        (iid, s, lo)
        for r in records
        for iid, s, lo in zip(r["instruction_id_list"], r["strict"], r["loose"])
    ]
    assert len(verdicts) == 834
    assert results["inst_level_loose_acc,olmes"] == pytest.approx(
        sum(lo for _, _, lo in verdicts) / 834
    )
    for iid in checkers.INSTRUCTION_TYPES:
        loose = [lo for i, _, lo in verdicts if i == iid]
        assert results[f"{iid}_loose_acc,olmes"] == pytest.approx(sum(loose) / len(loose))
    # OLMES's verdicts on the dev fifth come through lm-eval's own path too
    reference = {r["key"]: r for r in read_jsonl(OLMES_REF / "scores_dev_ifeval.jsonl")}
    checked = 0
    for sample in samples:
        row = reference.get(sample["doc"]["doc_key"])
        if row:
            checked += 1
            assert sample["filtered_resps"][0]["loose"] == row["inst_level_loose"]
    assert checked == 122
