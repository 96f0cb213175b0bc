"""gpqa_cot_tulu and gpqa_cot_llama3 (OLMES `gpqa:0shot_cot::tulu3` / `::llama3.1`).

GPQA's authors ask that its questions never appear in plain text online. The data is unpacked
from its password-protected zip into a scratch folder (`../shared/tools/gpqa_unpack.py`), and
the tests only ever hold hashes and labels of what the tasks build (`request_summaries`), so a
failing assertion prints hashes and letters, never a question, answer or prompt."""

import hashlib
import json
import os
import re
import subprocess
import sys
from http.server import BaseHTTPRequestHandler

import pytest

from evalpack.hooks import gpqa
from evalpack.scoring import mc_cot_answers
from evalpack.scoring.mc_cot_answers import extract_gpqa, extract_gpqa_llama3
from tests.conftest import (
    OLMES_REF,
    REPO,
    SHARED,
    by_doc,
    chat_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
)
from tests.models.http_stub import LocalServer

GPQA_ZIP = SHARED / "data" / "Idavidrein__gpqa" / "dataset.zip"
UNPACK = SHARED / "tools" / "gpqa_unpack.py"
OLMES_NAMES = {
    "gpqa_cot_tulu": "gpqa:0shot_cot::tulu3",
    "gpqa_cot_llama3": "gpqa:0shot_cot::llama3.1",
}
TEXT = {
    "gpqa_cot_tulu": (gpqa.TULU_DESCRIPTION, gpqa.TULU_FINAL),
    "gpqa_cot_llama3": (gpqa.LLAMA3_DESCRIPTION, gpqa.LLAMA3_FINAL),
}


def sha(value) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def gpqa_dir(tmp_path_factory):
    """GPQA main unpacked into a scratch mirror root, set as EVALPACK_DATA_DIR."""
    if not GPQA_ZIP.is_file():
        pytest.skip(f"GPQA's zip not found at {GPQA_ZIP}")
    root = tmp_path_factory.mktemp("gpqa")
    subprocess.run(
        [sys.executable, str(UNPACK), "--zip", str(GPQA_ZIP), "--out", str(root)],
        check=True,
        capture_output=True,
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALPACK_DATA_DIR", str(root))
        yield root


def summary(task: str, inst) -> dict:
    """What a test may see of one built request: hashes, flags and letters, no text."""
    (message,) = messages = json.loads(inst.args[0])
    description, final = TEXT[task]
    content = message["content"]
    doc = inst.doc
    return {
        "sha256_messages": sha(messages),
        "role": message["role"],
        "framed": content.startswith(description + "Question: ") and content.endswith("\n" + final),
        "option_lines": len(re.findall(r"^ \([A-D]\) ", content, flags=re.MULTILINE)),
        "label": doc["label"],
        "gold_at_label": doc["choices"]["ABCD".index(doc["label"])]
        == gpqa.preprocess(doc["Correct Answer"]),
        "generation": {
            k: inst.args[1][k] for k in ("until", "max_gen_toks", "do_sample", "temperature")
        },
    }


@pytest.fixture(scope="module")
def request_summaries(gpqa_dir):
    """task -> doc key -> `summary` of its request (the built instances are not kept)."""
    return {
        task: {key: summary(task, insts[0]) for key, insts in by_doc(chat_requests(task)).items()}
        for task in OLMES_NAMES
    }


def test_both_tasks_build_every_doc(request_summaries):
    for built in request_summaries.values():
        assert set(built) == {f"Idavidrein__gpqa/gpqa_main/train#{i}" for i in range(448)}
        for key, row in built.items():
            assert row["role"] == "user" and row["framed"] and row["option_lines"] == 4, key
            assert row["gold_at_label"], key
            assert row["generation"] == {
                "until": [],
                "max_gen_toks": 2048,
                "do_sample": False,
                "temperature": 0.0,
            }, key


def test_requests_identical_to_olmes_hashes(request_summaries):
    records = read_jsonl(OLMES_REF / "requests_dev_unseen_gpqa_hashes.jsonl")
    assert sorted({r["task"] for r in records}) == sorted(OLMES_NAMES.values())
    assert len(records) == 10
    tasks = {olmes: ours for ours, olmes in OLMES_NAMES.items()}
    for ref in records:
        ours = request_summaries[tasks[ref["task"]]][ref["key"]]
        assert ours["sha256_messages"] == ref["sha256_messages"], ref["key"]
        assert ours["label"] == ref["label"], ref["key"]
        assert ref["stop_sequences"] == ours["generation"]["until"] == []
        assert ref["generation_kwargs"]["max_gen_toks"] == ours["generation"]["max_gen_toks"]
        assert ref["assistant_prefix"] == "" and ref["repeats"] == 1


def test_the_shuffle_uses_the_row_index():
    """Answers "w", "x", "y" wrong and "z" right: OLMES's Random(111 + row) order per row."""
    doc = {
        "Incorrect Answer 1": "w",
        "Incorrect Answer 2": "x",
        "Incorrect Answer 3": "y",
        "Correct Answer": " z [title]y",
    }
    assert [gpqa.shuffled_choices(doc, row) for row in (0, 1, 2)] == [
        (["w", "y", "z. y", "x"], "C"),
        (["w", "x", "y", "z. y"], "D"),
        (["z. y", "x", "y", "w"], "A"),
    ]


@pytest.mark.parametrize(
    "raw, clean",
    [
        (None, " "),
        ("  12 [title] mass  ", "12. mass"),
        ("a [ref 1] b", "a b"),
        ("a   b", "a  b"),  # one pass of "  " -> " ", as OLMES
    ],
)
def test_answer_clean_up(raw, clean):
    assert gpqa.preprocess(raw) == clean


@requires_shared
def test_olmes_verdicts_on_every_gpqa_row():
    rows = [
        r
        for r in read_jsonl(OLMES_REF / "scores_dev_unseen.jsonl")
        if r["task"].startswith("gpqa:")
    ]
    assert len(rows) == 8
    extract = {
        "gpqa:0shot_cot::tulu3": gpqa.process_results_tulu,
        "gpqa:0shot_cot::llama3.1": gpqa.process_results_llama3,
    }
    for row in rows:
        assert hashlib.sha256(row["completion"].encode("utf-8")).hexdigest() == row["sha256"]
        hook = extract[row["task"]]({"label": row["label"]}, [row["completion"]])
        assert hook["exact_match"] == row["exact_match"], row["id"]
        assert hook["answer_format_correct"] == row["answer_format_correct"], row["id"]
        assert row["max_tokens_reached"] is False  # short completions (not computed: README)


@pytest.mark.parametrize(
    "text, answer, fmt",
    [
        # the exact phrase, LAST occurrence, class [A-D]
        ("Therefore, the answer is (A). Wait. Therefore, the answer is (C).", "C", 1.0),
        ("Therefore, the answer is (E).", "", 0.0),
        # 0.5: the LAST "(X)" anywhere, before "The correct answer is: X" (the FIRST of those)
        ("(A) is wrong, (B) is right. Therefore the answer is B.", "B", 0.5),
        ("The correct answer is: D. No, The correct answer is: A", "D", 0.5),
        ("The correct answer is: D, see (C)", "C", 0.5),
        # 0.0: the last standalone capital A-D
        ("Therefore, the answer is C.", "C", 0.0),
        ("Between A and B,\nI pick D over C\nfinal", "C", 0.0),
        ("DNA binds, ABC", "", 0.0),
        ("the answer is (b)", "", 0.0),
    ],
)
def test_tulu_extraction_rules_and_quirks(text, answer, fmt):
    assert extract_gpqa(text) == {"answer": answer, "answer_format_correct": fmt}


@pytest.mark.parametrize(
    "text, answer, fmt",
    [
        ("The best answer is B.", "B", 1.0),
        ("The best answer is (C).", "C", 1.0),
        ("The best answer is Definitely C", "D", 1.0),  # no word boundary: the "D" of "Definitely"
        ("The best answer is A. Checking again, The best answer is B", "B", 1.0),
        ("The best answer is: B", "B", 0.0),  # a colon breaks the phrase; last standalone letter
        ("the best answer is (a)", "", 0.0),
        ("Therefore, the answer is (D).", "D", 0.5),
    ],
)
def test_llama3_extraction_rules_and_quirks(text, answer, fmt):
    assert extract_gpqa_llama3(text) == {"answer": answer, "answer_format_correct": fmt}


@pytest.mark.parametrize(
    "text",
    [
        "A",
        "xA B",
        "A\nB C\n",
        "ÉA B",
        "AB\n\nC_D",
        "(A)\n",
        "A.B",
        "\nD\r\nC",
        "x" * 3000 + " A " + "y" * 3000,
        "C\u2028D",
    ],
)
def test_last_standalone_letter_equals_olmes_pattern(text):
    olmes = re.findall(".*\\b([A-D])\\b", text)  # OLMES's (quadratic) last resort
    assert mc_cot_answers.last_standalone_letter(text) == (olmes[-1] if olmes else None)


def test_strict_counts_only_the_exact_phrase():
    lenient = gpqa.process_results_tulu({"label": "B"}, ["So (B)."])
    assert lenient == {"exact_match": 1.0, "answer_format_correct": 0.5, "exact_match_strict": 0.0}


class GatedHub(BaseHTTPRequestHandler):
    """The hub's answer to a gated dataset without a login: 401, X-Error-Code GatedRepo."""

    def do_GET(self):
        body = json.dumps(
            {
                "error": "Access to dataset Idavidrein/gpqa is restricted. You "
                "must be authenticated to access it."
            }
        ).encode()
        self.send_response(401)
        self.send_header("X-Error-Code", "GatedRepo")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, *args):
        pass


def test_a_missing_login_is_one_line_saying_how_to_get_access(tmp_path):
    hub = LocalServer(GatedHub).start()
    try:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("HF_") and k not in ("EVALPACK_DATA_DIR", "HUGGING_FACE_HUB_TOKEN")
        }
        env.update(HF_ENDPOINT=hub.url(""), HF_HOME=str(tmp_path))
        code = (
            "from evalpack.core import data\ntry:\n"
            "    data.load('Idavidrein/gpqa', 'gpqa_main', ('train',))\n"
            "except data.DataError as exc:\n    print(exc)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
            check=False,
        )
    finally:
        hub.stop()
    assert done.stdout == (
        "dataset 'Idavidrein/gpqa' is gated on the Hugging Face hub: accept its terms at "
        "https://huggingface.co/datasets/Idavidrein/gpqa and log in (`hf auth login` or "
        "HF_TOKEN), or set EVALPACK_DATA_DIR=<mirror dir> holding "
        "Idavidrein__gpqa/gpqa_main/train.jsonl\n"
    )


def test_replay_scores_both_formulations(gpqa_dir, request_summaries, tmp_path):
    """Per task, 4 docs: the task's own phrase, a fallback, a wrong phrase, nothing."""
    keys = [f"Idavidrein__gpqa/gpqa_main/train#{i}" for i in range(4)]
    phrases = {
        "gpqa_cot_tulu": "Therefore, the answer is ({})",
        "gpqa_cot_llama3": "The best answer is {}.",
    }
    rows = []
    for task, phrase in phrases.items():
        labels = [request_summaries[task][key]["label"] for key in keys]
        wrong = "ABCD"[("ABCD".index(labels[2]) + 1) % 4]
        texts = [phrase.format(labels[0]), f"so ({labels[1]})", phrase.format(wrong), "hmm"]
        rows += [{"task": task, "doc_id": i, "completion": t} for i, t in enumerate(texts)]
    path = tmp_path / "replay.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = replay_eval(list(phrases), {"completions": str(path)}, limit=4)
    for task in phrases:
        result = out["results"][task]
        assert result["exact_match,none"] == 0.5
        assert result["answer_format_correct,none"] == pytest.approx(2.5 / 4)
        assert result["exact_match_strict,none"] == 0.25


def test_leaderboard_runs_the_suite_offline_and_reports_it(gpqa_dir, tmp_path):
    """`evalpack leaderboard run --suite tulu_3_unseen` with `replay` answering every doc with
    the exact phrase and its label, then `evalpack report` (AGIEval needs no data dir)."""
    models = tmp_path / "models.yaml"
    models.write_text(
        "checkpoints:\n  - name: phrase\n    model: replay\n    model_args: "
        "{from_doc: 'Therefore, the answer is ({label}).'}\n"
    )
    board, report = tmp_path / "board", tmp_path / "report"
    evalpack = [sys.executable, "-m", "evalpack"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    run = subprocess.run(
        [
            *evalpack,
            "leaderboard",
            "run",
            "--models",
            str(models),
            "--suite",
            "tulu_3_unseen",
            "--tasks",
            "agi_eval_english_cot_tulu,gpqa_cot_tulu",
            "--limit",
            "2",
            "--output",
            str(board),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, "leaderboard run failed (its logs are in the board folder)"
    made = subprocess.run(
        [*evalpack, "report", str(board), "--output", str(report)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert made.returncode == 0
    text = (report / "report.md").read_text(encoding="utf-8")
    assert "| phrase | 100.0 ± 0.0 | 100.0 ± 0.0 | 100.0 |" in text
    assert "| phrase | 16/2646 | 2/448 |" in text
    assert "## AGIEval English (0-shot CoT): 8 subtasks (exact_match)" in text
