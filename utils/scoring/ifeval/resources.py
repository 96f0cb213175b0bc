"""The offline NLTK data the IFEval checkers need, shipped with the pack and verified.

Two checkers use NLTK's Punkt English model: `length_constraints:number_sentences` (sentence
splitting) and `change_case:capital_word_frequency` (`word_tokenize`). NLTK >= 3.9 reads it from
`tokenizers/punkt_tab/english/`; lm-eval's IFEval module downloads it at import when it is not
found. The pack ships those four files (from nltk_data's `punkt_tab` package, Apache-2.0, see
`nltk_data/NOTICE`) and puts their folder first on NLTK's search path, so nothing is downloaded
and no other copy on the machine is used. A missing or altered file is an error naming it.
"""

from __future__ import annotations

import hashlib
import logging
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path

log = logging.getLogger(__name__)

PUNKT_FILES = {  # path under nltk_data/ -> sha256 (nltk_data punkt_tab.zip, 2024-07-09)
    "tokenizers/punkt_tab/english/abbrev_types.txt": "92a3e070f43d9b4c5534758ca40ad7343b04e7e29bfe0c2eb658a39445a4f779",
    "tokenizers/punkt_tab/english/collocations.tab": "8e2da1225e4dd2cc9dba261ee231ccb134859e21b46006e7f472c5ee269af0cf",
    "tokenizers/punkt_tab/english/ortho_context.tab": "4bbcca25ed3d3f06c02402abf8419b9f033b8adc06e7b482eca4e45f81a5dc4c",
    "tokenizers/punkt_tab/english/sent_starters.txt": "f3f8535483e1dba487241b764945168123bca3209a9645e59acd1225dc76edac",
}
# The NLTK release whose Punkt code splits exactly as OLMES's nltk 3.8.1 with the old pickle
# (checked on the 541 GPT-4 responses, their loose variants and the prompts). 3.9.4 and 3.10.x
# tokenize some words differently and 3.10.4 also splits some sentences differently.
FAITHFUL_NLTK = "3.9.1"


class ResourceError(LookupError):
    """A data file the IFEval checkers need is missing or not the shipped one."""


def data_dir() -> Path:
    """The pack's own NLTK data folder (`evalpack/scoring/ifeval/nltk_data`)."""
    return Path(str(files(__package__) / "nltk_data"))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verify(root: Path) -> None:
    """Raise `ResourceError` naming the first Punkt file under `root` that is missing or whose
    sha256 differs from the shipped one."""
    for name, digest in PUNKT_FILES.items():
        path = root / name
        if not path.is_file():
            raise ResourceError(
                f"IFEval needs NLTK resource {name} (Punkt English model), not found at {path}; "
                "it ships with evalpack: reinstall the package"
            )
        if _sha256(path) != digest:
            raise ResourceError(
                f"IFEval NLTK resource {path} does not match its sha256 {digest}; "
                "reinstall the package"
            )


def install_punkt() -> Path:
    """Verify the shipped Punkt files and put their folder first on NLTK's search path (once).
    Call before importing lm-eval's IFEval modules: they download Punkt when it is missing."""
    import nltk

    root = data_dir()
    verify(root)
    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
        if version("nltk") != FAITHFUL_NLTK:
            log.warning(
                "IFEval: nltk %s installed; sentence and word counts match OLMES's with nltk "
                "%s (pinned by evalpack)",
                version("nltk"),
                FAITHFUL_NLTK,
            )
    return root
