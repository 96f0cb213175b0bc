"""What every floor above shares: data (hub / mirror loading, doc keys), fewshot (verified
exemplars), resources (the shipped task configs and exemplars), catalog (tasks, their YAML
facts, suites), suggest (the one "did you mean"), bounded (hard time bounds: a process pool),
text (cut_at_stops), yaml_files (user YAML read with file and line in errors), uv_settings
(this machine's pip settings, for uv: `make`'s set-up)."""
