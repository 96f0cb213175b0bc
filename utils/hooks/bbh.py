"""lm-eval hooks for BIG-Bench Hard (`tasks/bbh_cot_v1_tulu`, `tasks/bbh_cot_tulu`).

OLMES puts the subtask's description at the start of the FIRST user turn (the first shot's, or
the doc's own at 0 shots), never in a system message; lm-eval would make `description` a system
message. So the tasks use `BBHTask`, which takes the subtask's 3 CoT shots and description from
`fewshot/bbh_cot.json` and fills the `description_prefix` field that `doc_to_text` starts with:
the description on the first shot, or on the doc itself when the run has 0 shots.

The `score_docs` filter leaves one record per doc with the answers every extractor found and
their verdicts (what `--log_samples` shows); the process_results hooks only read it.
"""

from __future__ import annotations

from lm_eval.api.task import ConfigurableTask

from ..core import fewshot
from ..scoring import bbh_answers


def subtask_of(doc: dict) -> str:
    """The BBH subtask of a doc, from its key `lukaemon__bbh/<subtask>/test#<row>`."""
    return doc["doc_key"].split("/")[1]


def subtask_exemplars(subtask: str) -> dict:
    return fewshot.load("bbh_cot")["subtasks"][subtask]


class BBHTask(ConfigurableTask):
    def __init__(self, config: dict | None = None, **kwargs) -> None:
        config = {k: v for k, v in (config or {}).items() if k != "class"}
        exemplars = subtask_exemplars(config["dataset_kwargs"]["name"])
        self.description_text = exemplars["description"]
        shots = [
            {**shot, "description_prefix": self.description_text if i == 0 else ""}
            for i, shot in enumerate(exemplars["samples"])
        ]
        config["fewshot_config"] = {
            **(config.get("fewshot_config") or {}),
            "sampler": "first_n",
            "samples": shots,
        }
        super().__init__(config=config, **kwargs)

    def fewshot_context(self, doc: dict, num_fewshot: int, **kwargs):
        prefix = self.description_text if num_fewshot == 0 else ""
        return super().fewshot_context({**doc, "description_prefix": prefix}, num_fewshot, **kwargs)


def score_docs(resps: list[list[str]], docs: list[dict]) -> list[dict]:
    """Custom filter: the first sample of each doc through every BBH extractor."""
    return [
        {
            "target": doc["target"],
            **bbh_answers.score_bbh(samples[0], doc["target"], subtask_of(doc)),
        }
        for samples, doc in zip(resps, docs)
    ]


def process_results_cot_v1(doc: dict, results: list[dict]) -> dict:
    """OLMES cot-v1 (`exact_match`) and the intended letter handling (`exact_match_flex`);
    `*_macro` copies feed the unweighted group mean."""
    record = results[0]
    scores = {
        "exact_match": float(record["exact_match"]),
        "exact_match_flex": float(record["exact_match_flex"]),
    }
    return {**scores, **{f"{name}_macro": value for name, value in scores.items()}}


def process_results_release(doc: dict, results: list[dict]) -> dict:
    """The release-time extractor the Tülu-3 paper's first BBH figure used."""
    value = float(results[0]["exact_match_release"])
    return {"exact_match": value, "exact_match_macro": value}
