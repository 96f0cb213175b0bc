"""The pack's tasks as `verifiers` environments (the optional extra `evalpack[verifiers]`):
rows (what the lm-eval path sends per doc), scoring (rewards from the tasks' own scorers,
per-subtask results and pass@k over rollouts), taskset (the verifiers classes; imports
`verifiers`)."""
