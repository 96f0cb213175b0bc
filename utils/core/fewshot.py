"""Few-shot exemplars: byte-exact benchmark data in `fewshot/<name>.json`, checked on load.

Each file records where its texts come from (`source`) and the SHA-256 of its payload (`samples`
or `subtasks`) serialised as `json.dumps(payload, ensure_ascii=False, sort_keys=True,
separators=(",", ":"))`. A file whose payload no longer matches its hash is refused.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache

from .resources import fewshot_dir

FEWSHOT_DIR = fewshot_dir()
PAYLOAD_FIELDS = ("samples", "subtasks")


def payload_sha256(payload) -> str:
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@cache
def load(name: str) -> dict:
    """The verified exemplar file `fewshot/<name>.json`."""
    file = FEWSHOT_DIR / f"{name}.json"
    record = json.loads(file.read_text(encoding="utf-8"))
    field = next(f for f in PAYLOAD_FIELDS if f in record)
    actual = payload_sha256(record[field])
    if actual != record["sha256"]:
        raise ValueError(f"{file}: {field} hash {actual} != recorded {record['sha256']}")
    return record
