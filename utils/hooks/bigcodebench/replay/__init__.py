"""Shipped into the replay's process (no candidate code): standard library, `job/` and
siblings only."""
