"""Clients of served judges, which tasks drive themselves from their filters: `client` (an
OpenAI-compatible judge: settings from `--metadata` or the environment, concurrency, retries,
a cache; used by AlpacaEval). Imports core and the HTTP transport of `models`."""
