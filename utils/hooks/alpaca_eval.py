"""lm-eval hooks for AlpacaEval 2 (`tasks/alpaca_eval`), OLMES `alpaca_eval_v2::tulu`.

The model answers each of the 805 instructions (one user turn, the instruction untouched);
the `judge` filter then sends every doc's first answer, paired with the dataset's GPT-4-turbo
reference, to the judge in one concurrent batch (`evalpack.scoring.alpaca_judge`, through the
judge's HTTP client `evalpack.judges.client`), and leaves per doc its judgement record; the
metrics aggregate the records over all docs. This hook is the one task hook that imports from
`models/`: the judge is a model the task itself drives.

The judge is set with `--metadata` keys `judge_base_url`, `judge_model`, `judge_api_key_env`,
... (or `EVALPACK_JUDGE_*` environment variables; see `JudgeSettings`); the loader checks
them before anything is generated and stamps them on each doc (never the key itself, only the
name of the variable holding it), which is how the filter sees them.
"""

from __future__ import annotations

import json
import logging
import os

import datasets

from ..core import data
from ..judges.client import JudgeClient, JudgeSettings, JudgeUnavailable, unconfigured
from ..scoring.alpaca_judge import ANNOTATOR, JUDGE_MODELS, METRICS, item_of, judge, metric

log = logging.getLogger(__name__)

HUB_FILE = "{name}.json"  # the loading script's data file for a config
FIELDS = ("instruction", "output", "generator", "dataset")


def load(
    path: str = "tatsu-lab/alpaca_eval",
    name: str = "alpaca_eval_gpt4_baseline",
    splits=("eval",),
    revision: str | None = None,
    annotator: str = ANNOTATOR,
    **metadata,
) -> datasets.DatasetDict:
    """`custom_dataset` hook: the rows from the `EVALPACK_DATA_DIR` mirror, or the config's
    JSON file on the hub (the hub dataset is a loading script `datasets` no longer runs).
    Each doc gets `doc_key`, `judge` (the run's judge settings as JSON) and `annotator` (the
    YAML's `dataset_kwargs.annotator`: AlpacaEval 2's gpt4_turbo judge unless it names another)."""
    settings = {k: v for k, v in metadata.items() if k.startswith("judge_")}
    JudgeSettings.resolve(settings)  # a bad setting fails now, not after generation
    if annotator not in JUDGE_MODELS:
        raise ValueError(
            f"unknown AlpacaEval annotator {annotator!r}; known: {sorted(JUDGE_MODELS)}"
        )
    out = {}
    for split in splits:
        rows = (
            _mirror_rows(path, name, split)
            if os.environ.get(data.DATA_DIR_ENV)
            else (_hub_rows(path, name, split, revision))
        )
        rows = [
            {**row, "judge": json.dumps(settings, sort_keys=True), "annotator": annotator}
            for row in _checked(rows, f"{path}/{name}/{split}")
        ]
        out[split] = datasets.Dataset.from_list(data.with_keys(rows, path, name, split))
    return datasets.DatasetDict(out)


def _mirror_rows(path: str, name: str, split: str) -> list[dict]:
    file = data.mirror_file(os.environ[data.DATA_DIR_ENV], path, name, split)
    if not file.is_file():
        raise data.DataError(
            f"{data.DATA_DIR_ENV}: no file for dataset {path!r} config "
            f"{name!r} split {split!r}; looked for {file}"
            f"{data.one_level_down(os.environ[data.DATA_DIR_ENV], path)}"
        )
    return data.read_jsonl(file)


def _hub_rows(path: str, name: str, split: str, revision: str | None) -> list[dict]:
    """The config's data file from the hub (or the HF cache); one clear error without it."""
    from huggingface_hub import hf_hub_download

    failure = data.DataError(
        f"dataset {path!r} config {name!r}: its file {HUB_FILE.format(name=name)} cannot be "
        f"fetched from the Hugging Face hub; set {data.DATA_DIR_ENV}=<mirror dir> holding "
        f"{data.hub_dir(path)}/{name}/{split}.jsonl"
    )
    if not os.environ.get("HF_HUB_OFFLINE") and not data.hub_reachable():
        raise failure
    try:
        file = hf_hub_download(
            path, HUB_FILE.format(name=name), repo_type="dataset", revision=revision
        )
    except OSError:  # the hub client's connection and missing-file errors
        raise failure from None
    with open(file, encoding="utf-8") as fh:
        return json.load(fh)


def _checked(rows: list[dict], where: str) -> list[dict]:
    for i, row in enumerate(rows):
        for field in FIELDS:
            if not isinstance(row.get(field), str):
                raise data.DataError(f"{where} row {i}: field {field!r} missing or not text")
    return [{field: row[field] for field in FIELDS} for row in rows]


def doc_to_text(doc: dict) -> str:
    return doc["instruction"]


def judge_outputs(resps: list[list[str]], docs: list[dict]) -> list[dict]:
    """Custom filter: every doc's first answer judged against its reference, all at once.
    A judge that stops answering ends judging with one error line; the generations stay in
    the run's samples and cache, and every doc's record says it has no judgement."""
    if not docs:
        return []
    outputs = [samples[0] for samples in resps]  # OLMES judges the first sample of a doc
    settings = JudgeSettings.resolve(json.loads(docs[0]["judge"]))
    missing = unconfigured(settings)
    if missing:  # nothing is sent anywhere; the generations stay for `evalpack rescore`
        log.error("AlpacaEval not judged: %s", missing)
        return [_unjudged(doc, output, missing) for doc, output in zip(docs, outputs)]
    client = JudgeClient(settings)
    try:
        records = judge(docs, outputs, client, docs[0].get("annotator", ANNOTATOR))
    except JudgeUnavailable as exc:
        log.error(
            "AlpacaEval judging stopped: %s. The generations are kept (samples with "
            "--log_samples, --use_cache): score them with `evalpack rescore` once the "
            "judge answers.",
            exc,
        )
        records = [_unjudged(doc, output, str(exc)) for doc, output in zip(docs, outputs)]
    finally:
        client.close()
    failed = sum(r["preference"] is None for r in records)
    log.info(
        "AlpacaEval: %d docs, %d judge requests sent, %d without a judgement",
        len(records),
        client.sent,
        failed,
    )
    return records


def _unjudged(doc: dict, output: str, error: str) -> dict:
    return {
        "preference": None,
        "judge_top_logprobs": None,
        "price": 0.0,
        "error": error,
        "output_length": len(output),
        "reference_length": len(doc["output"]),
    }


def process_results(doc: dict, results: list[dict]) -> dict:
    item = item_of(results[0])
    return {name: item for name in METRICS}


def _aggregation(name: str):
    def aggregate(items: list) -> float:
        return metric(items, name)

    aggregate.__name__ = name
    return aggregate


length_controlled_winrate = _aggregation("length_controlled_winrate")
lc_standard_error = _aggregation("lc_standard_error")
win_rate = _aggregation("win_rate")
standard_error = _aggregation("standard_error")
avg_length = _aggregation("avg_length")
n_wins = _aggregation("n_wins")
n_draws = _aggregation("n_draws")
discrete_win_rate = _aggregation("discrete_win_rate")
total_price = _aggregation("total_price")
n_failed = _aggregation("n_failed")
