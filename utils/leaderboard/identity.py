"""What identifies a checkpoint's results, and what is only how they are reached.

A checkpoint directory's completions and finished pairs belong to the model and to everything
that changes what it is asked, how it samples or how its output is read: `model`, `gen_kwargs`,
`process_output` and every model argument
except those in `TRANSPORT` (`pretrained` / `model`, `seed`, `max_model_len`, `server`,
`tokenizer`, `chat_template_file`, ...). `TRANSPORT` says where and how the model is reached:
the server's URL, HTTP headers and tokens (the API key itself is read from the environment),
concurrency, retries, timeouts, pacing, batching and device, and `resources` (Ray). Changing
those resumes a checkpoint (a corrected URL, a server restarted on another port or node);
changing anything else under the same name is refused.
"""

from __future__ import annotations

TRANSPORT = frozenset(
    {
        "base_url",
        "header",
        "auth_token",
        "verify_certificate",
        "ca_cert_path",
        "num_concurrent",
        "max_retries",
        "retry_delay",
        "request_interval",
        "timeout",
        "batch_size",
        "max_batch_size",
        "device",
    }
)


def as_mapping(args: str | dict | None) -> dict:
    """Arguments as a mapping: a `k=v,...` string parsed as lm-eval parses `--model_args` (its
    utils, with numpy and requests, are imported for a string only: a board needs them no
    more)."""
    if isinstance(args, dict) or not args:
        return dict(args or {})
    from lm_eval.utils import simple_parse_args_string

    return simple_parse_args_string(args)


def model_args(ckpt: dict) -> dict:
    """The checkpoint's model arguments as a mapping (lm-eval's `k=v,...` string parsed)."""
    return as_mapping(ckpt.get("model_args"))


def identity(ckpt: dict) -> dict:
    """What identifies the checkpoint's results: model, model arguments but transport, and
    generation settings."""
    args = {k: v for k, v in model_args(ckpt).items() if k not in TRANSPORT}
    fields = {key: ckpt.get(key) for key in ("model", "gen_kwargs", "process_output")}
    return {**fields, "model_args": args}


def changes(recorded: dict, ckpt: dict) -> list[str]:
    """`field: old -> new` for each difference between two checkpoints' identities."""
    old, new = identity(recorded), identity(ckpt)
    found = [
        f"{key}: {old[key]!r} -> {new[key]!r}"
        for key in ("model", "gen_kwargs", "process_output")
        if old[key] != new[key]
    ]
    names = sorted(set(old["model_args"]) | set(new["model_args"]))
    for name in names:
        before, after = old["model_args"].get(name), new["model_args"].get(name)
        if before != after:
            found.append(f"model_args.{name}: {before!r} -> {after!r}")
    return found


def transport_changes(recorded: dict, ckpt: dict) -> list[str]:
    """The transport settings that differ (which a resume takes as they are now)."""
    old, new = model_args(recorded), model_args(ckpt)
    moved = [
        f"{k}: {old.get(k)!r} -> {new.get(k)!r}"
        for k in sorted(TRANSPORT)
        if old.get(k) != new.get(k)
    ]
    if recorded.get("resources") != ckpt.get("resources"):
        moved.append(f"resources: {recorded.get('resources')!r} -> {ckpt.get('resources')!r}")
    return moved
