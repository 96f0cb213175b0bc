"""Package data: the task YAML (the lm-eval `--include_path` root), installed as `evalpack.task_configs`."""
