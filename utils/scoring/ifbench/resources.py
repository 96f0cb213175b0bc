"""The offline NLTK data the IFBench checkers need, shipped with the pack and verified.

The authors' checkers split sentences and words with NLTK's Punkt English model (shipped for
IFEval: `evalpack.scoring.ifeval.resources`), count stop words from NLTK's English list and tag
a response's first word with NLTK's averaged perceptron tagger. The last two ship here
(`nltk_data/`, Apache-2.0, see its NOTICE: the tagger as JSON, never a pickle); both folders go
first on NLTK's search path, so nothing is downloaded and no other copy on the machine is used.
A missing or altered file is an error naming it.
"""

from __future__ import annotations

import functools
import hashlib
from importlib.resources import files
from pathlib import Path

from ..ifeval import resources as ifeval_resources

TAGGER = "taggers/averaged_perceptron_tagger_eng/averaged_perceptron_tagger_eng"
FILES = {  # path under nltk_data/ -> sha256 (provenance: nltk_data/NOTICE)
    "corpora/stopwords/english": "019f104ba2ed07436d05f9cdd3383034ad66014edc27fc651f837e1a038b6451",
    f"{TAGGER}.weights.json": "4109f26d3dd254279a9edc18a553f70f66b18d9f0eae5fc285de65d4d1e9c0c6",
    f"{TAGGER}.tagdict.json": "2e127c624b1f57a8feca9dcc94b560f334d742707809d2c51f0e455059a9b98f",
    f"{TAGGER}.classes.json": "daa33abf604c85911339d83c566e230b19811aacb95b67d5834991ea02e5441f",
}

ResourceError = ifeval_resources.ResourceError


def data_dir() -> Path:
    """The pack's IFBench NLTK data folder (`evalpack/scoring/ifbench/nltk_data`)."""
    return Path(str(files(__package__) / "nltk_data"))


def verify(root: Path) -> None:
    """Raise `ResourceError` naming the first file under `root` that is missing or whose sha256
    differs from the shipped one."""
    for name, digest in FILES.items():
        path = root / name
        if not path.is_file():
            raise ResourceError(
                f"IFBench needs NLTK resource {name}, not found at {path}; "
                "it ships with evalpack: reinstall the package"
            )
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise ResourceError(
                f"IFBench NLTK resource {path} does not match its sha256 {digest}; "
                "reinstall the package"
            )


def install() -> Path:
    """Verify the shipped files (Punkt's too) and put both folders first on NLTK's search path."""
    import nltk

    ifeval_resources.install_punkt()
    root = data_dir()
    verify(root)
    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
    return root


@functools.cache
def stopwords() -> frozenset[str]:
    """NLTK's English stop words (what `nltk.corpus.stopwords.words('english')` returns: the
    file's non-blank lines)."""
    text = (install() / "corpora" / "stopwords" / "english").read_text(encoding="utf-8")
    return frozenset(line for line in text.split("\n") if line.strip())


@functools.cache
def tagger():
    """NLTK's English perceptron tagger, loaded once from the shipped JSON files (what
    `nltk.pos_tag` builds on every call)."""
    install()
    from nltk.tag.perceptron import PerceptronTagger

    return PerceptronTagger()
