"""The tasks' hooks: the Python behind the task YAML in `tasks/` (each folder's `hooks.py`
imports its functions from here). One module per benchmark: `custom_dataset`, prompts, filters,
`process_results`; `sampled` (a task with `repeats`), `config_files` (what the per-subtask YAML
generators share), `thinking_switch` (OLMES's `process_output` run setting on docs and records),
`olmo3_code` and `olmo3_chat` (the `olmo3:adapt` code, IFEval and AlpacaEval variants),
`olmo3_rules` and `olmo3_aime` (its rule-scored tasks: MMLU, BBH, AGIEval, GPQA, MATH, GSM8K,
AIME); `bigcodebench/` is a package of its own (it ships code into sandbox jobs).
Hooks import `core`, `scoring`, `execution` and `judges` only. Importing them (lm-eval does,
through each task folder's `hooks.py`) keeps lm-eval's notes about the pack's tasks quiet
(`lmeval.quiet`)."""

from ..lmeval import quiet

quiet.install()
