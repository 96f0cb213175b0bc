"""Shipped into a BigCodeBench job's process, beside the candidate: standard library and
siblings only."""
