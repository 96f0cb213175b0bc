"""Shared test helpers: where the real data lives, and skipping cleanly when it is absent."""

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("EVALPACK_SHARED", REPO.parent / "shared"))
DATA_DIR = SHARED / "data"
OLMES_REF = SHARED / "reference" / "olmes"
OUTPUTS = SHARED / "reference" / "outputs"

requires_shared = pytest.mark.skipif(
    not DATA_DIR.is_dir(),
    reason=f"real benchmark data not found at {DATA_DIR} (a fresh clone without ../shared)",
)


def read_jsonl(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
