"""Shipped into the sandbox's trusted side of a BigCodeBench job: standard library only."""
