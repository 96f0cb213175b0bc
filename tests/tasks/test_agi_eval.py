"""agi_eval_english_cot_tulu (OLMES `agi_eval_english:0shot_cot::tulu3`): the shipped data is
OLMES's, the requests are OLMES's on every dev record, every doc renders, OLMES's verdicts on its
verdict rows and on adversarial completions for each extraction rule, and runs end to end with
`replay` (lm-eval and the `evalpack` leaderboard)."""

import hashlib
import json

import pytest

from evalpack.hooks import agi_eval
from evalpack.scoring.mc_cot_answers import extract_agieval, scores
from tests.conftest import (
    DATA_DIR,
    OLMES_REF,
    by_doc,
    chat_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
    task_manager,
)

TASKS = [
    "lsat-ar",
    "lsat-lr",
    "lsat-rc",
    "logiqa-en",
    "sat-math",
    "sat-en",
    "aqua-rat",
    "gaokao-english",
]
COUNTS = [230, 510, 269, 651, 220, 206, 254, 306]  # the AGIEval paper's
GROUP = "agi_eval_english_cot_tulu"


def task_name(task: str) -> str:
    return f"{GROUP}_{task.replace('-', '_')}"


def sha(value) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def built():
    """Every doc's instance, by doc key, over the 8 tasks (no mirror needed: shipped data)."""
    return {
        key: insts[0] for t in TASKS for key, insts in by_doc(chat_requests(task_name(t))).items()
    }


def test_shipped_files_are_the_ones_their_checksums_name():
    folder = agi_eval.data_file("lsat-ar").parent
    sums = dict(line.split()[::-1] for line in (folder / "SHA256SUMS").read_text().splitlines())
    assert sorted(sums) == sorted(f"{t}.jsonl" for t in TASKS)
    for name, digest in sums.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name


@requires_shared
def test_shipped_files_are_byte_identical_to_the_mirror():
    """The mirror is a byte copy of OLMES 5a51f50's `oe_eval/dependencies/AGIEval/data/v1/`."""
    for task in TASKS:
        mirror = DATA_DIR / "ruixiangcui__AGIEval" / task / "test.jsonl"
        assert agi_eval.data_file(task).read_bytes() == mirror.read_bytes(), task


def test_the_group_builds_without_hub_or_mirror(monkeypatch):
    monkeypatch.delenv("EVALPACK_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loaded = task_manager().load([GROUP])
    assert loaded["group_map"] == {GROUP: [task_name(t) for t in TASKS]}
    sizes = [len(loaded["tasks"][task_name(t)].eval_docs) for t in TASKS]
    assert sizes == COUNTS and sum(sizes) == 2646


@requires_shared
def test_requests_identical_to_olmes_on_every_dev_record(built):
    records = [
        r
        for r in read_jsonl(OLMES_REF / "requests_dev_unseen.jsonl")
        if r["task"].startswith("agi_eval_")
    ]
    assert len(records) == 24
    for ref in records:
        inst = built[ref["key"]]
        messages = json.loads(inst.args[0])
        assert sha(messages) == ref["sha256_messages"], ref["key"]
        assert messages == ref["messages"], ref["key"]
        kwargs = inst.args[1]
        olmes = ref["generation_kwargs"]
        assert kwargs["until"] == ref["stop_sequences"] == []
        assert kwargs["max_gen_toks"] == olmes["max_gen_toks"] == 2048
        assert kwargs["do_sample"] is olmes["do_sample"] is False
        assert kwargs["temperature"] == olmes["temperature"] == 0.0
        assert ref["assistant_prefix"] == "" and ref["repeats"] == 1
        assert inst.doc["label"] == ref["label"]


def test_every_doc_renders_one_user_turn(built):
    """All 2646 docs: one user turn, description and reminder around the query, blank lines
    collapsed inside the query, one option line per option, a letter label."""
    assert len(built) == 2646
    for key, inst in built.items():
        (message,) = json.loads(inst.args[0])
        content = message["content"]
        assert message["role"] == "user", key
        assert content.startswith(agi_eval.DESCRIPTION) and content.endswith(
            agi_eval.FINAL_INSTRUCTION
        ), key
        query = content[len(agi_eval.DESCRIPTION) : -len(agi_eval.FINAL_INSTRUCTION)]
        assert "\n\n" not in query and query.startswith(("Passage: ", "Question: ")), key
        options = inst.doc["options"]
        assert query.endswith(
            agi_eval.clean_text(
                f" ({'ABCDE'[len(options) - 1]}) {agi_eval.strip_choice_prefix(options[-1])}"
            )
        ), key
        assert inst.doc["label"] in "ABCDE"[: len(options)], key


def test_prompt_clean_up_on_a_hand_written_doc():
    doc = {
        "passage": "",
        "question": "Pick one.\n\n\nWhich?",
        "options": ["(A)x", "B. y", " C? z", "D(A)w"],
    }
    assert agi_eval.query(doc) == "Question: Pick one.\nWhich?\n (A) x\n (B) y\n (C) z\n (D) (A) w"
    with_passage = agi_eval.query({**doc, "passage": "See (B)this."})
    assert with_passage.startswith("Passage: See (B) this.\nQuestion: ")


@requires_shared
def test_olmes_verdicts_on_every_agieval_row():
    rows = [
        r
        for r in read_jsonl(OLMES_REF / "scores_dev_unseen.jsonl")
        if r["task"].startswith("agi_eval_")
    ]
    assert len(rows) == 6
    for row in rows:
        assert hashlib.sha256(row["completion"].encode("utf-8")).hexdigest() == row["sha256"]
        found = extract_agieval(row["completion"])
        assert found == {
            "answer": row["model_answer"],
            "answer_format_correct": row["answer_format_correct"],
        }, row["id"]
        hook = agi_eval.process_results({"label": row["label"]}, [row["completion"]])
        for metric in ("exact_match", "exact_match_simple", "answer_format_correct"):
            assert hook[metric] == row[metric], (row["id"], metric)


@pytest.mark.parametrize(
    "text, answer, fmt",
    [
        # the exact phrase: its LAST occurrence; the class is [A-F]
        ("Therefore, the answer is (A). On reflection, Therefore, the answer is (B).", "B", 1.0),
        ("Therefore, the answer is (F).", "F", 1.0),
        ("Therefore, the answer is (C)", "C", 1.0),
        # 0.5: "(X)" between the last lower-case "the answer is " and the next "." on its line
        ("First the answer is (A). No: the answer is (D).", "D", 0.5),
        ("I think the answer is (E) probably.", "E", 0.5),
        # no "(X)" inside that span: the last capital A-E anywhere, inside words too
        ("the answer is B. Also (C) was tempting", "C", 0.0),
        ("the answer is b. DATA", "A", 0.0),
        # no span (no period on the line, capital "The", a colon): "(X)" in the whole text, fmt 0
        ("so the answer is (B)\nthat is all", "B", 0.0),
        ("The answer is definitely (C).", "C", 0.0),
        ("Therefore, the answer is: (D)", "D", 0.0),
        # last resort: the last capital A-E anywhere
        ("Therefore, the answer is ( B ).", "B", 0.0),
        ("I really DUNNO", "D", 0.0),
        ("therefore, the answer is (c).", "", 0.0),
        ("Therefore, the answer is (Z).", "", 0.0),
        ("", "", 0.0),
    ],
)
def test_extraction_rules_and_quirks(text, answer, fmt):
    assert extract_agieval(text) == {"answer": answer, "answer_format_correct": fmt}


def test_metrics_ignore_case_and_punctuation_and_strict_needs_the_phrase():
    assert scores({"answer": "C", "answer_format_correct": 1.0}, "C") == {
        "exact_match": 1.0,
        "exact_match_simple": 1.0,
        "answer_format_correct": 1.0,
        "exact_match_strict": 1.0,
    }
    assert scores({"answer": "c", "answer_format_correct": 0.5}, "C")["exact_match"] == 1.0
    lenient = scores({"answer": "c", "answer_format_correct": 0.5}, "C")
    assert lenient["exact_match_simple"] == 0.0 and lenient["exact_match_strict"] == 0.0
    assert scores({"answer": "", "answer_format_correct": 0.0}, "C")["exact_match"] == 0.0


def replay_file(tmp_path, rows):
    path = tmp_path / "replay.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_group_reports_macro_and_micro_means_with_replay(built, tmp_path):
    """4 lsat-ar docs answered right by the phrase, 1 doc of each other task wrong: the macro
    mean is 1/8, the micro mean 4/11; a 0.5-format answer counts for exact_match only."""
    rows, samples = [], {}
    for task, count in zip(TASKS, [4] + [1] * 7):
        samples[task_name(task)] = list(range(count))
        for row in range(count):
            label = built[f"ruixiangcui__AGIEval/{task}/test#{row}"].doc["label"]
            wrong = "ABCDE"[("ABCDE".index(label) + 1) % 4]
            text = {0: "Therefore, the answer is ({}).", 1: "So the answer is ({})."}.get(
                row, "Therefore, the answer is ({})"
            )
            rows.append(
                {
                    "key": f"ruixiangcui__AGIEval/{task}/test#{row}",
                    "completion": text.format(label if task == "lsat-ar" else wrong),
                }
            )
    out = replay_eval([GROUP], {"completions": replay_file(tmp_path, rows)}, samples=samples)
    lsat = out["results"][task_name("lsat-ar")]
    assert lsat["exact_match,none"] == 1.0 and lsat["exact_match_strict,none"] == 0.75
    assert lsat["answer_format_correct,none"] == pytest.approx(3.5 / 4)
    group = out["results"][GROUP]
    assert group["exact_match,none"] == pytest.approx(1 / 8)
    assert group["exact_match_micro,none"] == pytest.approx(4 / 11)
