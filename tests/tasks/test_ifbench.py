"""ifbench_tulu and ifbench_olmo3: OLMES's requests on all 300 docs, the benchmark authors'
verdicts on every dev completion, a replay run end to end, offline data, and ifbench_olmo3's
thinking switch.

The checkers one by one: tests/scoring/test_ifbench_checkers.py and test_ifbench_bounds.py."""

import hashlib
import json

import pytest
import yaml

from evalpack.core.data import DataError
from evalpack.hooks import ifbench as tasks_ifbench
from evalpack.scoring.ifbench import checkers, registry
from evalpack.scoring.thinking import split_r1_style
from tests.conftest import (
    DATA_DIR,
    OLMES_REF,
    SHARED,
    TASKS_DIR,
    chat_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
    task_manager,
)
from tests.tasks.conftest import replay_file

ROWS = DATA_DIR / "allenai__IFBench_test" / "default" / "train.jsonl"
AUTHORS = SHARED / "reference" / "ifbench"
OLMES_TASKS = {"ifbench_tulu": "ifbench::tulu", "ifbench_olmo3": "ifbench::olmo3:adapt"}


def metric_names(task: str) -> list[str]:
    text = (TASKS_DIR / "ifbench" / f"{task}.yaml").read_text().replace("!function", "")
    return [m["metric"] for m in yaml.safe_load(text)["metric_list"]]


def test_metrics_are_lm_evals_ifeval_names_and_one_pair_per_instruction_type():
    names = metric_names("ifbench_tulu")
    levels = [f"{agg}_level_{st}_acc" for st in ("strict", "loose") for agg in ("prompt", "inst")]
    per_type = [f"{i}_{st}_acc" for i in registry.INSTRUCTION_TYPES for st in ("strict", "loose")]
    assert sorted(names) == sorted(levels + per_type) and len(names) == 4 + 2 * 58
    # ifbench_olmo3 restates the list (an include replaces it whole) and adds the switch's count
    assert metric_names("ifbench_olmo3") == names + ["thinking_unfinished"]
    record = {
        "instruction_id_list": ["format:list", "words:vowel"],
        "strict": [True, False],
        "loose": [True, True],
    }
    scores = tasks_ifbench.process_results({}, [record])
    assert sorted(scores) == sorted(names)
    assert scores["prompt_level_strict_acc"] == 0.0 and scores["prompt_level_loose_acc"] == 1.0
    assert scores["inst_level_strict_acc"] == [True, False]
    assert scores["words:vowel_strict_acc"] == [False] and scores["format:thesis_loose_acc"] == []


def test_a_malformed_row_is_one_clear_error(tmp_path, monkeypatch):
    good = {
        "key": "1",
        "prompt": "p",
        "instruction_id_list": ["count:numbers"],
        "kwargs": [{"N": 2}],
    }
    bad = {**good, "key": "2", "kwargs": [{"N": None, "keyword": None}]}
    folder = tmp_path / "allenai__IFBench_test" / "default"
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=r"split 'train' row 1: .*missing a required argument: 'N'"):
        tasks_ifbench.load(path="allenai/IFBench_test", splits=["train"])
    assert tasks_ifbench.row_problem(good) is None
    assert "unknown IFBench instruction id" in tasks_ifbench.row_problem(
        {**good, "instruction_id_list": ["custom:keywords_specific_position"]}
    )


@requires_shared
@pytest.mark.parametrize("task_name", sorted(OLMES_TASKS))
def test_task_settings_are_olmes(mirror, task_name):
    task = task_manager().load([task_name])["tasks"][task_name]
    assert len(task.eval_docs) == 300
    olmes = [
        r
        for r in read_jsonl(OLMES_REF / "requests_dev_olmo3.jsonl")
        if r["task"] == OLMES_TASKS[task_name]
    ]
    assert len(olmes) == 3
    gen = dict(task.config.generation_kwargs)
    for row in olmes:
        assert gen["until"] == row["stop_sequences"]
        expected = {k: v for k, v in row["generation_kwargs"].items() if k != "truncate_context"}
        assert {k: v for k, v in gen.items() if k != "until"} == expected
        assert row["assistant_prefix"] == "" and row["repeats"] == 1
    assert task.config.num_fewshot == 0 and not task.config.description
    assert task.config.metadata["primary"] == {
        "metric": "prompt_level_loose_acc",
        "filter": "olmes",
    }


@requires_shared
@pytest.mark.parametrize("task_name", sorted(OLMES_TASKS))
def test_messages_for_all_300_prompts(mirror, task_name):
    rows = read_jsonl(ROWS)
    olmes = {
        r["key"]: r
        for r in read_jsonl(OLMES_REF / "requests_dev_olmo3.jsonl")
        if r["task"] == OLMES_TASKS[task_name]
    }
    instances = chat_requests(task_name)
    assert len(instances) == len(rows) == 300
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
    assert compared == 3


@requires_shared
def test_the_authors_verdicts_on_every_dev_completion():
    """Every row of verdicts_dev.jsonl (754 completions of 58 docs), instruction by instruction,
    strict and loose."""
    docs = {row["key"]: row for row in read_jsonl(ROWS)}
    completions = {
        row["id"]: row["completion"] for row in read_jsonl(AUTHORS / "completions_dev.jsonl")
    }
    reference = read_jsonl(AUTHORS / "verdicts_dev.jsonl")
    assert len(reference) == 754
    covered = set()
    for row in reference:
        record = checkers.score_response(docs[row["key"]], completions[row["id"]])
        assert record["instruction_id_list"] == row["instruction_id_list"], row["id"]
        assert (record["strict"], record["loose"]) == (row["strict"], row["loose"]), row["id"]
        assert "errors" not in record, row["id"]
        covered |= set(row["instruction_id_list"])
    assert len(covered) == 35


@requires_shared
def test_end_to_end_with_replay_on_all_300_docs(mirror):
    """Each doc answered with its own prompt (every checker of the test set runs): lm-eval's
    path gives the records `score_response` gives, and the metrics pool them."""
    out = replay_eval(["ifbench_tulu"], "from_doc=prompt", log_samples=True)
    results = out["results"]["ifbench_tulu"]
    samples = sorted(out["samples"]["ifbench_tulu"], key=lambda s: s["doc_id"])
    rows = read_jsonl(ROWS)
    assert len(samples) == 300
    verdicts = []
    for sample, row in zip(samples, rows):
        record = sample["filtered_resps"][0]
        assert record == checkers.score_response(row, row["prompt"])
        verdicts += zip(record["instruction_id_list"], record["strict"], record["loose"])
    assert len(verdicts) == 344 and len({iid for iid, _, _ in verdicts}) == 58
    prompt_loose = sum(all(s["filtered_resps"][0]["loose"]) for s in samples) / 300
    assert results["prompt_level_loose_acc,olmes"] == pytest.approx(prompt_loose)
    assert results["inst_level_strict_acc,olmes"] == pytest.approx(
        sum(s for _, s, _ in verdicts) / 344
    )
    for iid in registry.INSTRUCTION_TYPES:
        loose = [lo for i, _, lo in verdicts if i == iid]
        assert results[f"{iid}_loose_acc,olmes"] == pytest.approx(sum(loose) / len(loose))
    # the prompt repeated is what repeat:repeat_simple asks for only when it is the sentence
    assert 0 < results["prompt_level_loose_acc,olmes"] < 0.5


def test_a_1mb_response_is_judged_inside_the_bound():
    """Through the task's filter (worker processes, the hard bound per doc): a 1 MB response to
    instructions that split its sentences and words gets real verdicts."""
    big = ("I told them we saw it. Was it there? Yes!\n" * 25_000)[:1_000_000]
    docs = [
        {"instruction_id_list": ["count:pronouns", "format:title_case"], "kwargs": [{"N": 5}, {}]},
        {"instruction_id_list": ["words:start_verb", "ratio:sentence_type"], "kwargs": [{}, {}]},
        {"instruction_id_list": ["words:words_position"], "kwargs": [{"keyword": "told"}]},
    ]
    records = tasks_ifbench.score_docs([[big]] * 3, docs)
    assert [r["strict"] for r in records] == [[True, False], [False, False], [False]]
    assert not any("scoring_failure" in r or "errors" in r for r in records)


@requires_shared
def test_olmo3_switch_scores_the_answer_after_the_thinking(mirror, tmp_path):
    """ifbench_olmo3 with the thinking switch on: the checkers judge the text after the
    reasoning, the record keeps the reasoning, outputs without `</think>` are counted; off, the
    whole output is judged, as OLMES does without `process_output`."""
    rows = read_jsonl(ROWS)[:8]
    thought = "<think>\nHmm, LET me think, step by step, about THIS, carefully.\n</think>\n\n"
    texts = [thought + row["prompt"] for row in rows[:6]] + [
        "<think>" + row["prompt"] for row in rows[6:]
    ]
    completions = replay_file(
        tmp_path,
        [
            {"key": f"allenai__IFBench_test/default/train#{i}", "completion": text}
            for i, text in enumerate(texts)
        ],
    )
    runs = {}
    for switch in (True, False):
        runs[switch] = out = replay_eval(
            ["ifbench_olmo3"],
            {"completions": completions},
            limit=len(rows),
            metadata={"process_output": "r1_style"} if switch else None,
            log_samples=True,
        )
        for sample in out["samples"]["ifbench_olmo3"]:
            text = sample["resps"][0][0]
            judged = split_r1_style(text).answer if switch else text
            expected = checkers.score_response(sample["doc"], judged)
            record = sample["filtered_resps"][0]
            assert (record["strict"], record["loose"]) == (expected["strict"], expected["loose"])
            assert record.get("reasoning") == (split_r1_style(text).reasoning if switch else None)
    assert runs[True]["results"]["ifbench_olmo3"]["thinking_unfinished,olmes"] == 2
    assert "thinking_unfinished,olmes" not in runs[False]["results"]["ifbench_olmo3"]
