"""Dataset loading: the Hugging Face hub by default, an offline mirror when `EVALPACK_DATA_DIR` is set.

Every task YAML names this module's `load` as its `custom_dataset` and its hub coordinates in
`dataset_kwargs` (`path`, `name`, `splits`, `revision`). lm-eval calls
`load(**metadata, **dataset_kwargs)`.

`revision` pins the hub dataset's commit: `doc_key` is a row number, so a re-upload on the hub
would shift every key that replays, OLMES references and resumed runs join on. Every task YAML
declares one (null where the commit could not be known, see each task's README); lm-eval
records `dataset_kwargs` in every run's results (`configs`). A mirror has one copy of each
dataset: it is read whatever the revision.

The mirror layout is the hub's: `<dir>/<owner>__<name>/<config>/<split>.jsonl` (config `default`
when the dataset has none), one JSON object per line with the hub's own field names.

Each row gets a `doc_key` field, `<owner>__<name>/<config>/<split>#<row>`, the stable key the
OLMES reference files and the `replay` model use to join completions to docs.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    # `datasets` (with pandas, ~0.5 s to import) is imported by the functions that build a
    # dataset: boards, reports and rescoring read mirror paths and JSONL here without it.
    import datasets

DATA_DIR_ENV = "EVALPACK_DATA_DIR"


class DataError(ValueError):
    """Data that is missing or malformed, with the place that was wrong."""

    one_line = True  # uncaught, its message alone (`quiet`: a plain lm_eval run)


def hub_dir(path: str) -> str:
    return path.replace("/", "__")


def mirror_file(data_dir: str | Path, path: str, name: str | None, split: str) -> Path:
    return Path(data_dir) / hub_dir(path) / (name or "default") / f"{split}.jsonl"


def one_level_down(data_dir: str | Path, path: str) -> str:
    """For a dataset missing from the mirror: a hint when a folder inside it holds the dataset
    (EVALPACK_DATA_DIR set one level too high), else ""."""
    found = sorted(Path(data_dir).glob(f"*/{hub_dir(path)}"))
    return f" (it is in {found[0].parent}: set {DATA_DIR_ENV} to that folder)" if found else ""


def numbered_jsonl(file: str | Path) -> list[tuple[int, dict]]:
    """(line number, row) for each row of a JSONL file, blank lines skipped; a bad line is a
    `DataError` naming the file and line number."""
    rows = []
    with open(file, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{file}, line {lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise DataError(f"{file}, line {lineno}: expected a JSON object")
            rows.append((lineno, row))
    return rows


def read_jsonl(file: str | Path) -> list[dict]:
    """Rows of a JSONL file (see `numbered_jsonl`)."""
    return [row for _, row in numbered_jsonl(file)]


def with_keys(rows: list[dict], path: str, name: str | None, split: str) -> list[dict]:
    prefix = f"{hub_dir(path)}/{name or 'default'}/{split}"
    return [{**row, "doc_key": f"{prefix}#{i}"} for i, row in enumerate(rows)]


def load_split(
    path: str, name: str | None, split: str, revision: str | None = None
) -> datasets.Dataset:
    """One split, from the mirror when `EVALPACK_DATA_DIR` is set, else from the hub at
    `revision` (None: the hub's latest)."""
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        file = mirror_file(data_dir, path, name, split)
        if not file.is_file():
            raise DataError(
                f"{DATA_DIR_ENV}={data_dir}: no file for dataset {path!r} config {name!r} "
                f"split {split!r}; looked for {file}{one_level_down(data_dir, path)}"
            )
        rows = read_jsonl(file)
    else:
        rows = load_from_hub(path, name, split, revision)
    import datasets

    return datasets.Dataset.from_list(with_keys(rows, path, name, split))


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the hub endpoint (`HF_ENDPOINT`) accepts a connection within `timeout` seconds
    (assumed behind a proxy, which only the hub client knows how to use)."""
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        port = url.port or (80 if url.scheme == "http" else 443)
        socket.create_connection((url.hostname, port), timeout=timeout).close()
    except OSError:
        return False
    return True


def load_from_hub(
    path: str, name: str | None, split: str, revision: str | None = None
) -> list[dict]:
    """One split from the hub (or the local HF cache under `HF_HUB_OFFLINE=1`). Without a way to
    the data, a `DataError` in one line naming the dataset and the mirror file to provide (for
    a gated dataset without access, also how to get it); an unreachable hub is found in seconds,
    not after the hub client's retries."""
    where = f"{hub_dir(path)}/{name or 'default'}/{split}.jsonl"
    offline = any(
        os.environ.get(v, "").lower() in ("1", "true", "yes", "on")
        for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )
    why = (
        "offline and not in the Hugging Face cache"
        if offline
        else ("the Hugging Face hub cannot be reached")
    )
    failure = DataError(
        f"dataset {path!r} split {split!r}: {why}; set "
        f"{DATA_DIR_ENV}=<mirror dir> holding {where} (runs and `evalpack "
        "rescore` both read the datasets)"
    )
    if not offline and not hub_reachable():
        raise failure
    import datasets
    from datasets.exceptions import DatasetNotFoundError

    try:
        return list(datasets.load_dataset(path, name, split=split, revision=revision))
    except ConnectionError:
        raise failure from None
    except DatasetNotFoundError as exc:
        if "gated" not in str(exc):
            raise
        raise DataError(
            f"dataset {path!r} is gated on the Hugging Face hub: accept its terms at "
            f"https://huggingface.co/datasets/{path} and log in (`hf auth login` or "
            f"HF_TOKEN), or set {DATA_DIR_ENV}=<mirror dir> holding {where}"
        ) from None


def load(
    path: str,
    name: str | None = None,
    splits: tuple[str, ...] = ("test",),
    revision: str | None = None,
    **_metadata,
) -> datasets.DatasetDict:
    """`custom_dataset` hook: the named splits of one hub dataset at `revision`. Extra keyword
    arguments are the task's metadata, which lm-eval passes along; they do not affect loading."""
    import datasets

    return datasets.DatasetDict(
        {split: load_split(path, name, split, revision) for split in splits}
    )
