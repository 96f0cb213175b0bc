"""The `resumable` wrapper (`evalpack.models.resume`): sampled completions survive an interruption."""

import json
from collections import Counter

import pytest
from lm_eval import simple_evaluate
from lm_eval.api.instance import Instance
from lm_eval.api.model import LM, hash_args

import evalpack.models.backends
import evalpack.models.replay  # noqa: F401  (registers replay)
from evalpack.models import resume
from evalpack.models.served import ServedRequestError
from tests.conftest import read_jsonl, task_manager
from tests.models.http_stub import Stub

SAMPLED = {"until": [], "do_sample": True, "temperature": 0.8}


def sampled_requests(docs: int, repeats: int) -> list[Instance]:
    """As lm-eval lists them: each doc's Instance once per repeat."""
    requests = []
    for doc_id in range(docs):
        instance = Instance(
            request_type="generate_until",
            doc={"doc_key": f"d#{doc_id}"},
            arguments=(f"prompt {doc_id}", SAMPLED),
            idx=0,
            metadata=("t", doc_id, repeats),
        )
        requests += [instance] * repeats
    return requests


def wrapper(tmp_path) -> resume.ResumableLM:
    completions = tmp_path / "completions.jsonl"
    if not completions.exists():
        completions.write_text(
            "".join(
                json.dumps(
                    {"task": "t", "doc_id": d, "repeat": r, "completion": f"doc {d} sample {r}"}
                )
                + "\n"
                for d in range(2)
                for r in range(3)
            )
        )
    return resume.ResumableLM(
        model="replay",
        log=str(tmp_path / "log.jsonl"),
        model_args={"completions": str(completions), "request_log": str(tmp_path / "asked.jsonl")},
    )


def test_split_cached_takes_the_kth_logged_completion_for_the_kth_request():
    cached, missing = resume.split_cached(["a", "b", "a", "a"], {"a": ["a0", "a1"]})
    assert cached == {0: "a0", 2: "a1"}
    assert missing == [1, 3]


def test_a_torn_last_line_is_skipped(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text('{"key": "a", "completion": "x"}\n{"key": "a", "compl')
    assert resume.read_log(log) == {"a": ["x"]}


def test_sampled_repeats_resume_from_the_log(tmp_path):
    requests = sampled_requests(docs=2, repeats=3)
    first = wrapper(tmp_path).generate_until(requests)
    assert first == [f"doc {d} sample {r}" for d in range(2) for r in range(3)]
    assert len(read_jsonl(tmp_path / "log.jsonl")) == 6
    # interrupted after 4 completions had been logged, the 5th half written
    lines = (tmp_path / "log.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "log.jsonl").write_text("".join(lines[:4]) + lines[4][:10])
    asked_before = len(read_jsonl(tmp_path / "asked.jsonl"))
    again = wrapper(tmp_path).generate_until(requests)
    asked = read_jsonl(tmp_path / "asked.jsonl")[asked_before:]
    assert Counter(a["doc_id"] for a in asked) == {1: 2}  # only doc 1's last two samples
    assert again[:4] == first[:4]  # the logged samples are reused, in order
    assert len(again) == 6
    assert sorted(len(v) for v in resume.read_log(tmp_path / "log.jsonl").values()) == [3, 3]


def test_a_backend_reporting_as_it_goes_is_logged_once(tmp_path):
    lm = wrapper(tmp_path)
    requests = sampled_requests(docs=1, repeats=2)

    def reporting(reqs, disable_tqdm=False):
        texts = [f"s{i}" for i in range(len(reqs))]
        for req, text in zip(reqs, texts):
            lm.inner.cache_hook.add_partial("generate_until", req.args, text)
        return texts

    lm.inner.generate_until = reporting
    assert lm.generate_until(requests) == ["s0", "s1"]
    assert [row["completion"] for row in read_jsonl(tmp_path / "log.jsonl")] == ["s0", "s1"]


class KeyedBackend(LM):
    """Like the pack's served backends: looks up and stores each repeat under its own key in
    the cache behind its hook, and can fail part way (a server going down)."""

    def __init__(self, fail_after: int | None = None) -> None:
        super().__init__()
        self.fail_after = fail_after
        self.sent = []

    def generate_until(self, requests, disable_tqdm=False):
        answers = []
        for repeat, request in enumerate(requests):
            args = (request.args[0], repeat)
            answer = self.cache_hook.dbdict.get(hash_args("keyed", args))
            if answer is None:
                if len(self.sent) == self.fail_after:
                    raise RuntimeError("server down")
                answer = f"sample {repeat}"
                self.sent.append(args)
                self.cache_hook.add_partial("keyed", args, answer)
            answers.append(answer)
        return answers

    def loglikelihood(self, requests):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests):
        raise NotImplementedError


def with_backend(tmp_path, backend: LM) -> resume.ResumableLM:
    lm = wrapper(tmp_path)
    lm.inner = backend
    backend.set_cache_hook(lm.log)
    return lm


def test_a_backend_with_its_own_keys_resumes_after_failing_part_way(tmp_path):
    requests = sampled_requests(docs=1, repeats=3)
    with pytest.raises(RuntimeError, match="server down"):
        with_backend(tmp_path, KeyedBackend(fail_after=2)).generate_until(requests)
    rerun = KeyedBackend()
    assert with_backend(tmp_path, rerun).generate_until(requests) == [
        "sample 0",
        "sample 1",
        "sample 2",
    ]
    assert rerun.sent == [("prompt 0", 2)]  # only the one the failed run never received


def test_a_served_backend_resumes_a_failed_sampled_run_through_the_wrapper(tmp_path):
    stub = Stub().start()
    try:
        stub.fault_for = lambda payload: (
            "500" if payload["sample_id"] == "aime24_reasoning/1/2" else None
        )
        data = tmp_path / "problems.jsonl"
        data.write_text(
            json.dumps({"question": "What is 6*7?", "answer": "42"})
            + "\n"
            + json.dumps({"question": "What is 2+3?", "answer": "5"})
            + "\n"
        )
        metadata = {"data_file": str(data), "repeats": 4}
        model_args = {
            "model": "answer-server",
            "log": str(tmp_path / "log.jsonl"),
            "model_args": f"base_url={stub.url('/answer')},max_retries=1,retry_delay=0.05",
        }

        def evaluate():
            return simple_evaluate(
                model="resumable",
                model_args=model_args,
                tasks=["aime24_reasoning"],
                task_manager=task_manager(metadata),
                metadata=metadata,
            )

        with pytest.raises(ServedRequestError):
            evaluate()
        stub.records.clear()
        stub.fault_for = lambda payload: None
        evaluate()
        assert [p["sample_id"] for p in stub.payloads("/answer")] == ["aime24_reasoning/1/2"]
        stub.records.clear()
        evaluate()
        assert stub.records == []  # the last run came from the log alone
    finally:
        stub.stop()


@pytest.mark.parametrize(
    "model_args", ["from_doc=solution,batch_size=8", {"from_doc": "solution", "batch_size": 8}]
)
def test_the_checkpoints_own_args_win_over_the_runs(tmp_path, model_args):
    # lm-eval passes the run's --batch_size / --device to every model; a checkpoint that sets
    # batch_size itself (as models.yaml entries for `hf` do) must not fail with "multiple values"
    lm = resume.ResumableLM(
        model="replay",
        log=str(tmp_path / "log.jsonl"),
        model_args=model_args,
        batch_size=1,
        device="cpu",
    )
    assert lm.inner.source == "from_doc=solution"


def test_more_repeats_later_ask_a_served_backend_only_for_the_new_ones(tmp_path):
    # the served backends key each repeat themselves: given only the missing repeats they would
    # number them from 0 again and answer them with the old samples
    stub = Stub().start()
    try:

        def run(repeats):
            lm = resume.ResumableLM(
                model="answer-server",
                log=str(tmp_path / "log.jsonl"),
                model_args={"base_url": stub.url("/answer"), "seed": 1},
            )
            return lm.generate_until(sampled_requests(docs=1, repeats=repeats))

        first = run(2)
        stub.records.clear()
        second = run(4)
        assert [p["sample_id"] for p in stub.payloads("/answer")] == ["t/0/2", "t/0/3"]
        assert second[:2] == first and len(set(second)) == 4
    finally:
        stub.stop()
