"""The `evalpack` command: `cli` (lm-eval's CLI with the pack's tasks, models and
subcommands), `subcommands` (`suite`, `leaderboard run`, `rescore`, `report`), `console`
(one-line errors, a quiet lm-eval), `rescore`. The top floor: may import every other package."""
