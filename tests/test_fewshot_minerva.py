"""The Minerva MATH exemplars in fewshot/minerva_math.json: hash, provenance, quirks, and equality
with the few-shot turns OLMES actually built for every MATH / MATH-500 request."""

import hashlib
import json

from conftest import OLMES_REF, REPO, read_jsonl, requires_shared

RECORD = json.loads((REPO / "fewshot" / "minerva_math.json").read_text(encoding="utf-8"))


def shot_turns(samples):
    turns = []
    for shot in samples:
        turns.append({"role": "user", "content": "Problem:\n" + shot["problem"] + "\n\nSolution:"})
        turns.append({"role": "assistant", "content": shot["solution"].strip()})
    return turns


def test_recorded_sha256_matches_the_samples():
    text = json.dumps(RECORD["samples"], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == RECORD["sha256"]


def test_four_shots_from_lm_eval_0_4_3_with_quirks():
    assert RECORD["name"] == "minerva_math"
    assert "lm-eval==0.4.3" in RECORD["source"] and "list_fewshot_samples" in RECORD["source"]
    samples = RECORD["samples"]
    assert [sorted(s) for s in samples] == [["problem", "solution"]] * 4
    assert samples[0]["problem"].endswith("{\\sqrt{5-x}}$.}")  # the stray brace
    assert "30n&=480\\\n\\Rightarrow" in samples[2]["solution"]  # one backslash, then newline
    assert "6x-4y&=a,\\\n6y-9x" in samples[3]["problem"]
    assert all(s["solution"].endswith("I hope it is correct.") for s in samples)


@requires_shared
def test_shots_equal_olmes_turns_of_every_math_request():
    expected = shot_turns(RECORD["samples"])
    math_requests = [r for r in read_jsonl(OLMES_REF / "requests_dev.jsonl")
                     if r["task"].startswith("minerva_math")]
    assert len(math_requests) == 1187 + 871 + 100
    for request in math_requests:
        assert request["messages"][:8] == expected, request["key"]
        assert len(request["messages"]) == 9
