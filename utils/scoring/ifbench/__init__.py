"""IFBench scoring (Pyatkin et al. 2025): the pack's own checkers for the benchmark's 58
instruction types, with the semantics of the authors' code (allenai/IFBench db69a6f), offline.

`checkers` judges a response (strict and loose), `registry` maps instruction ids to the checker
functions of `counting`, `wording`, `layout` and `custom`, which share `text`'s NLTK-based
splitting; `resources` ships and verifies the NLTK data (`nltk_data/`, see its NOTICE).
"""
