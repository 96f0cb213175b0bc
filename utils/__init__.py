"""evalpack: OLMES-faithful and reasoning-benchmark tasks for lm-evaluation-harness."""
