"""IFEval scoring faithful to OLMES `ifeval::tulu`, offline and deterministic.

`checkers` gives OLMES's verdicts with lm-eval's instruction checkers; `resources` ships and
verifies the NLTK Punkt data they need (`nltk_data/`, Apache-2.0, see its NOTICE).
"""
