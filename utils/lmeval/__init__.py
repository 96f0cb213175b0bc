"""Every place the pack patches or reads lm-eval's internals (private names such as
`lm_eval.tasks._index`), written against lm-eval `LM_EVAL_VERSION`: fixed_costs (a run indexes
lm-eval's built-in tasks only when it names one; templates compiled once), index_cache (task
indexes kept on disk), index_file (those files, read without lm-eval's task machinery),
lazy_torch (torch loaded only by runs that use it), run_names (a plain run's results folder,
readable). The bottom floor: imports nothing of the pack, so an lm-eval upgrade is checked here
alone."""

LM_EVAL_VERSION = "0.4.13"
