"""Scoring speed on GSM8K: the 11,900 real outputs in ../shared/reference/outputs/gsm8k.jsonl
(14 systems x rows 0-849), scored by evalpack's `gsm8k_tulu` and by lm-eval 0.4.13's built-in
`gsm8k_cot`, both through lm-eval's own scoring path on the same completions: the task's
filters over all instances (`apply_filters`), then `process_results` for every instance and
filter, in the main process, as lm-eval's evaluator runs them. No model, no prompts.

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/score_gsm8k.py
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import yaml
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask
from lm_eval.tasks import TaskManager

from evalpack.core import data, resources

SHARED = Path(__file__).resolve().parents[2] / "shared"


def pairs(docs: list[dict]) -> list[tuple[dict, str]]:
    """(doc, completion) for every real output, in file order."""
    rows = data.read_jsonl(SHARED / "reference" / "outputs" / "gsm8k.jsonl")
    return [(docs[int(row["key"].rsplit("#", 1)[1])], row["completion"]) for row in rows]


def evalpack_task() -> ConfigurableTask:
    manager = TaskManager(include_path=str(resources.tasks_dir()), include_defaults=False)
    return manager.load(["gsm8k_tulu"])["tasks"]["gsm8k_tulu"]


def lm_eval_gsm8k_cot() -> ConfigurableTask:
    """lm-eval's own `gsm8k_cot` config, its docs read from the mirror instead of the hub."""
    import lm_eval.tasks

    yaml_file = Path(lm_eval.tasks.__file__).parent / "gsm8k" / "gsm8k-cot.yaml"
    config = yaml.safe_load(yaml_file.read_text(encoding="utf-8"))  # plain YAML, no tags
    config.update(custom_dataset=data.load, dataset_kwargs={"path": "openai/gsm8k", "name": "main"})
    return ConfigurableTask(config=config)


def time_scoring(task: ConfigurableTask, work: list[tuple[dict, str]]) -> tuple[float, dict]:
    """Seconds for filters + process_results over all completions, and each metric's mean."""
    name = task.config.task
    task._instances = [
        Instance("generate_until", doc, ("", {}), 0, (name, i, 1), resps=[completion])
        for i, (doc, completion) in enumerate(work)
    ]
    start = time.perf_counter()
    task.apply_filters()
    scores = [
        {
            f"{metric},{key}": value
            for key, response in inst.filtered_resps.items()
            for metric, value in task.process_results(inst.doc, [response]).items()
        }
        for inst in task._instances
    ]
    seconds = time.perf_counter() - start
    means = {metric: sum(s[metric] for s in scores) / len(scores) for metric in scores[0]}
    return seconds, means


def main() -> None:
    if not os.environ.get(data.DATA_DIR_ENV):
        os.environ[data.DATA_DIR_ENV] = str(SHARED / "data")
    ours = evalpack_task()
    theirs = lm_eval_gsm8k_cot()
    work = pairs(list(ours.eval_docs))
    ours_s, ours_means = time_scoring(ours, work)
    theirs_s, theirs_means = time_scoring(theirs, work)
    n = len(work)
    print(f"completions scored: {n} (GSM8K rows 0-849, 14 systems) on {os.cpu_count()} cores")
    print(
        f"evalpack gsm8k_tulu (exact_match + exact_match_numeric):       "
        f"{n / ours_s:9.0f} completions/s  ({ours_s:.2f} s)"
    )
    print(
        f"lm-eval gsm8k_cot (exact_match, strict-match + flexible-extract): "
        f"{n / theirs_s:9.0f} completions/s  ({theirs_s:.2f} s)"
    )
    print(f"ratio evalpack / lm-eval: {theirs_s / ours_s:.2f}x")
    for label, means in (("evalpack", ours_means), ("lm-eval", theirs_means)):
        print(f"  {label}: " + ", ".join(f"{k} {v:.4f}" for k, v in sorted(means.items())))


if __name__ == "__main__":
    main()
