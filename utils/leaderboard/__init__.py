"""The leaderboard engine: many checkpoints x a suite, resumable, locally or on Ray.

checkpoints (models.yaml checks) + gen_settings (a checkpoint's gen_kwargs) + thinking (its
thinking switch), plan (what can run,
before the run) + probes (servers and judges asked once), board (the run: units, retries,
progress), retries, outcome (a NaN primary metric is a failure), executors (local), ray_dispatch
+ ray_address (Ray), worker (one checkpoint's model, its tasks in turn), stream (a served
checkpoint's tasks side by side), gpu_pool (--gpus shared by the checkpoints with `serve:`) +
serve (their server processes) + serve_guard (a server's group dies with its worker) +
served_unit (a worker's servers, stopped at the last answer) + router (requests balanced across
replicas), rundirs (the board's folders and markers), progress,
inprocess (lm-eval commands run in this process). Imports core, lmeval, models, judges."""
