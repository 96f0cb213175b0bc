"""The safety tasks (Tülu 3's "Safety (6 task avg.)", AI2 safety-eval 060cc903): the shipped
data is safety-eval's, the requests and the text WildGuard judges are safety-eval's on every
reference row and on every row of the five shipped datasets (rebuilt here from the raw files
as safety-eval reads them), WildGuardTest on fixture rows in the hub's schema, and a gated
dataset without access is one line saying how to get it."""

import csv
import hashlib
import json

import datasets
import pytest
from datasets.exceptions import DatasetNotFoundError

from evalpack.core import data
from evalpack.hooks import safety
from tests.conftest import (
    DATA_DIR,
    FIXTURES,
    SHARED,
    by_doc,
    chat_requests,
    read_jsonl,
    requires_shared,
    task_manager,
)
from tests.tasks.conftest import sha

MIRROR = DATA_DIR / "allenai__safety-eval"
REFERENCE = SHARED / "reference" / "safety"
SHIPPED = {  # task: (benchmark, part, rows)
    "harmbench_tulu": ("harmbench", None, 320),
    "xstest_tulu": ("xstest", None, 450),
    "do_anything_now_tulu": ("do_anything_now", None, 300),
    "trustllm_jailbreaktrigger_tulu": ("trustllm_jailbreaktrigger", None, 400),
    "wildjailbreak_tulu_harmful": ("wildjailbreak", "harmful", 2000),
    "wildjailbreak_tulu_benign": ("wildjailbreak", "benign", 250),
}
GENERATION = {
    "until": [],
    "do_sample": True,
    "temperature": 0.7,
    "top_p": 0.95,
    "max_gen_toks": 2048,
}


@pytest.fixture(scope="module")
def built():
    """Every shipped doc's instance, by doc key (no hub or mirror needed)."""
    return {key: insts[0] for task in SHIPPED for key, insts in by_doc(chat_requests(task)).items()}


def test_shipped_files_are_the_ones_their_checksums_name():
    folder = safety.data_file("harmbench").parents[1]
    sums = dict(line.split()[::-1] for line in (folder / "SHA256SUMS").read_text().splitlines())
    files = {f"{b}/{safety.FILES[(b, p)]}" for b, p, _ in SHIPPED.values()}
    assert set(sums) == files
    for name, digest in sums.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name
    assert "Apache License" in (folder / "LICENSE").read_text()


@requires_shared
def test_shipped_files_are_byte_identical_to_the_mirror():
    """The mirror is a byte copy of safety-eval 060cc903's `evaluation/tasks/generation/`."""
    for benchmark, part, _ in SHIPPED.values():
        shipped = safety.data_file(benchmark, part)
        assert shipped.read_bytes() == (MIRROR / benchmark / shipped.name).read_bytes()


def test_every_task_builds_without_hub_or_mirror(monkeypatch):
    monkeypatch.delenv("EVALPACK_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    names = [t for t in SHIPPED if not t.startswith("wildjailbreak")] + ["wildjailbreak_tulu"]
    loaded = task_manager().load(names)
    assert loaded["group_map"] == {
        "wildjailbreak_tulu": ["wildjailbreak_tulu_harmful", "wildjailbreak_tulu_benign"]
    }
    for task, (_, _, rows) in SHIPPED.items():
        assert len(loaded["tasks"][task].eval_docs) == rows, task


@requires_shared
def test_requests_identical_to_safety_evals_on_every_reference_row(built):
    records = read_jsonl(REFERENCE / "requests_dev.jsonl")
    assert len(records) == 18 and {r["task"] for r in records} == {
        "harmbench",
        "xstest",
        "do_anything_now",
        "trustllm_jailbreaktrigger",
        "wildjailbreak_harmful",
        "wildjailbreak_benign",
    }
    for ref in records:
        inst = built[ref["key"]]
        assert sha(json.loads(inst.args[0])) == ref["sha256_messages"], ref["key"]
        kwargs = inst.args[1]
        assert kwargs == GENERATION and ref["stop_sequences"] == []
        assert {k: ref["generation_kwargs"][k] for k in GENERATION if k != "until"} == {
            k: v for k, v in GENERATION.items() if k != "until"
        }
        assert ref["assistant_prefix"] == "" and ref["repeats"] == 1
        judged = hashlib.sha256(inst.doc["judge_prompt"].encode("utf-8")).hexdigest()
        assert judged == ref["judge_prompt_sha256"], ref["key"]
        if ref["label"] is not None:  # XSTest's prompt type
            assert inst.doc["type"] == ref["label"]


def raw_rows(benchmark: str, part: str | None) -> list[dict]:
    """A shipped file's rows read as safety-eval's loaders read them."""
    file = safety.data_file(benchmark, part)
    with open(file, encoding="utf-8") as fh:
        if file.suffix == ".csv":
            return list(csv.DictReader(fh))
        if file.suffix == ".json":
            return json.load(fh)
        return [json.loads(line) for line in fh]


def safety_evals_pair(benchmark: str, part: str | None, row: dict) -> tuple[str, str]:
    """(what the model is asked, what WildGuard is shown as the request), by safety-eval's
    rules: HarmBench's context rule, XSTest's prompt, `adversarial` for DAN and WildJailbreak,
    and `vanilla` judged where the benchmark's first row has one (not WildJailbreak benign,
    whose `vanilla` safety-eval deletes)."""
    if benchmark == "harmbench":
        text = row["Behavior"]
        if row["FunctionalCategory"] == "contextual":
            text = row["ContextString"] + "\n\n---\n\n" + row["Behavior"]
        return text, text
    if benchmark in ("xstest", "trustllm_jailbreaktrigger"):
        return row["prompt"], row["prompt"]
    judged = row["vanilla"] if part != "benign" else row["adversarial"]
    return row["adversarial"], judged


def test_every_shipped_row_asks_and_judges_what_safety_eval_does(built):
    for task, (benchmark, part, count) in SHIPPED.items():
        rows = raw_rows(benchmark, part)
        assert len(rows) == count
        stem = safety.data_file(benchmark, part).stem
        for i, row in enumerate(rows):
            inst = built[f"allenai__safety-eval/{benchmark}/{stem}#{i}"]
            asked, judged = safety_evals_pair(benchmark, part, row)
            assert json.loads(inst.args[0]) == [{"role": "user", "content": asked}], (task, i)
            assert inst.doc["judge_prompt"] == judged, (task, i)


WGT_KEPT = [0, 2, 4, 6, 7, 9, 10]  # the fixture rows with both labels and a harmful prompt


def test_wildguardtest_keeps_safety_evals_rows(fixture_mirror):
    instances = chat_requests("wildguardtest_tulu")
    rows = read_jsonl(FIXTURES / "data" / "allenai__wildguardmix" / "wildguardtest" / "test.jsonl")
    assert [i.doc["doc_key"] for i in instances] == [
        f"allenai__wildguardmix/wildguardtest/test#{i}" for i in WGT_KEPT
    ]
    for inst, i in zip(instances, WGT_KEPT):
        row = rows[i]
        assert json.loads(inst.args[0]) == [{"role": "user", "content": row["prompt"]}]
        assert inst.args[1] == GENERATION
        assert inst.doc["judge_prompt"] == row["prompt"]
        assert inst.doc["prompt_type"] == ("adversarial" if row["adversarial"] else "vanilla")
        assert inst.doc["subcategory"] == inst.doc["category"] == row["subcategory"]


def test_wildguardtest_without_access_is_one_line(monkeypatch):
    monkeypatch.delenv("EVALPACK_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def gated(*args, **kwargs):
        raise DatasetNotFoundError(
            "Dataset 'allenai/wildguardmix' is a gated dataset on the Hub. You must be "
            "authenticated to access it."
        )

    monkeypatch.setattr(datasets, "load_dataset", gated)
    with pytest.raises(data.DataError) as error:
        safety.load_wildguardtest()
    text = str(error.value)
    assert "\n" not in text and "gated" in text
    assert "https://huggingface.co/datasets/allenai/wildguardmix" in text and "HF_TOKEN" in text
    assert "allenai__wildguardmix/wildguardtest/test.jsonl" in text


def test_a_bad_judge_setting_fails_before_generation():
    with pytest.raises(ValueError, match="unknown judge setting"):
        safety.load("xstest", judge_base_ur="http://127.0.0.1:1/v1")
