"""Clients of served judges, which tasks drive themselves from their filters: `client` (an
OpenAI-compatible judge: settings from `--metadata` or the environment, concurrency, retries,
a cache; used by AlpacaEval) and `wildguard` (the same on a completions endpoint: the safety
tasks' WildGuard). Imports core and the HTTP transport of `models`."""
