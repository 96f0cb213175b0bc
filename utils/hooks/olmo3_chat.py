"""lm-eval hooks for the instruction-following and chat tasks of OLMES's `olmo3:adapt` suite,
`ifeval_olmo3` (OLMES `ifeval::olmo3:adapt`), `ifbench_olmo3` (`ifbench::olmo3:adapt`) and
`alpaca_eval_v3_olmo3` (OLMES `alpaca_eval_v3::olmo3:adapt`): the Tulu 3 tasks' scorers
(`ifeval`, `ifbench`, `alpaca_eval`) applied to the answer after the reasoning when the thinking
switch is on (`thinking_switch`), each doc's record keeping the reasoning beside the verdict and
whether the thinking ended.
"""

from __future__ import annotations

from . import alpaca_eval, ifbench, ifeval, thinking_switch


def load_ifeval(process_output=None, **kwargs):
    """`custom_dataset` hook: IFEval's docs with the run's thinking switch."""
    return thinking_switch.stamp(ifeval.load(**kwargs), process_output)


def load_ifbench(process_output=None, **kwargs):
    """`custom_dataset` hook: IFBench's docs (checked) with the run's thinking switch."""
    return thinking_switch.stamp(ifbench.load(**kwargs), process_output)


def load_alpaca_eval(process_output=None, **kwargs):
    """`custom_dataset` hook: AlpacaEval's docs with the judge settings and thinking switch."""
    return thinking_switch.stamp(alpaca_eval.load(**kwargs), process_output)


def with_thinking(score_docs):
    """A filter scoring each doc's first sample with `score_docs` (a filter of the Tulu 3 task
    that reads `samples[0]`), on the answer after the reasoning when the switch is on."""

    def score(resps: list[list[str]], docs: list[dict]) -> list[dict]:
        thoughts = [thinking_switch.split(samples[0], doc) for samples, doc in zip(resps, docs)]
        answers = [
            [thinking_switch.scored_text(samples[0], thought)]
            for samples, thought in zip(resps, thoughts)
        ]
        records = score_docs(answers, docs)
        return [
            {**record, **thinking_switch.thinking_record(thought)}
            for record, thought in zip(records, thoughts)
        ]

    score.__name__ = f"{score_docs.__name__}_with_thinking"
    return score


def counting_unfinished(process_results):
    """`process_results` of the Tulu 3 task plus, with the switch on, `thinking_unfinished`."""

    def process(doc: dict, results: list[dict]) -> dict:
        scores = process_results(doc, results)
        if "thinking_finished" in results[0]:
            scores["thinking_unfinished"] = thinking_switch.unfinished(results[:1])
        return scores

    return process


score_ifeval = with_thinking(ifeval.score_docs)
process_ifeval = counting_unfinished(ifeval.process_results)
score_ifbench = with_thinking(ifbench.score_docs)
process_ifbench = counting_unfinished(ifbench.process_results)
judge_alpaca_eval = with_thinking(alpaca_eval.judge_outputs)
process_alpaca_eval = counting_unfinished(alpaca_eval.process_results)


def total(counts: list[int]) -> int:
    """Aggregation of `thinking_unfinished`: the sum over the run's docs."""
    return sum(counts)
