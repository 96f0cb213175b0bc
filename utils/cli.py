"""The `evalpack` command: lm-eval's own CLI with the pack's tasks and models.

* The pack's `tasks/` folder is the include path unless `--include_path` is given.
* The pack's models (`replay`, the served-model backends) are registered, after lm-eval's own,
  so every built-in backend stays available.
* Tasks whose YAML declares `metadata: {chat: true, fewshot_as_multiturn: true}` get few-shot
  examples as separate turns when `--apply_chat_template` is on, and a warning when it is off.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import yaml

TASKS_DIR = Path(__file__).resolve().parents[1] / "tasks"
log = logging.getLogger("evalpack")


def register_models() -> None:
    import lm_eval.models  # noqa: F401  (registers the built-in backends first)

    import evalpack.models
    import evalpack.resume  # the `resumable` wrapper that leaderboard runs use
    import evalpack.served  # noqa: F401


class _PlainLoader(yaml.SafeLoader):
    """Reads task YAML without importing hooks: `!function x.y` stays the string `x.y`."""


_PlainLoader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def task_config(name: str, task_index: dict) -> dict:
    """A task's or group's YAML config with `include`s merged (the including file wins)."""
    entry = task_index.get(name)
    if entry is None or entry.yaml_path is None:
        return {}
    return _read_with_includes(Path(entry.yaml_path))


def _read_with_includes(path: Path) -> dict:
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=_PlainLoader) or {}
    base = config.pop("include", None)
    if base:
        return {**_read_with_includes(path.parent / base), **config}
    return config


def chat_tasks(names: list[str], task_index: dict, chat: bool = True) -> list[str]:
    """The tasks among `names` (groups expanded) whose YAML asks for a chat template
    (`metadata: {chat: true}`), or with `chat=False` those that declare they take none."""
    found = []
    for name in names:
        config = task_config(name, task_index)
        if "group" in config and "task" in config:
            members = [t for t in config["task"] if isinstance(t, str)]
            found += chat_tasks(members, task_index, chat)
        elif config.get("metadata", {}).get("chat", not chat) is chat:
            found.append(name)
    return found


def _option(argv: list[str], flag: str) -> str | None:
    """The value of `--flag value` or `--flag=value` in argv; "" for a bare flag."""
    for i, arg in enumerate(argv):
        if arg == flag:
            following = argv[i + 1] if i + 1 < len(argv) else ""
            return "" if following.startswith("--") else following
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def check_chat_settings(argv: list[str]) -> None:
    """Warn when a chat task runs without a chat template, or with few-shot turns collapsed."""
    from lm_eval.tasks import TaskManager

    tasks = _option(argv, "--tasks")
    if not tasks:
        return
    include = _option(argv, "--include_path") or str(TASKS_DIR)
    index = TaskManager(include_path=include, include_defaults=False).task_index
    names = tasks.split(",")
    templated = _option(argv, "--apply_chat_template") is not None
    plain = chat_tasks(names, index, chat=False)
    if plain and templated:
        log.warning(
            "%s are base-model tasks with a plain-text prompt, but --apply_chat_template is set: "
            "the prompt will be wrapped in chat messages", ", ".join(plain),
        )
    needing_chat = chat_tasks(names, index)
    if not needing_chat:
        return
    if not templated:
        log.warning(
            "%s are chat tasks (OLMES builds chat messages for them) but --apply_chat_template "
            "is not set: the prompt will be plain text and will not match OLMES",
            ", ".join(needing_chat),
        )
    elif (_option(argv, "--fewshot_as_multiturn") or "true").lower() in ("false", "0", "no"):
        log.warning(
            "%s expect few-shot examples as separate chat turns; --fewshot_as_multiturn false "
            "collapses them into one user message, which does not match OLMES",
            ", ".join(needing_chat),
        )


def run_lm_eval(argv: list[str]) -> None:
    """lm-eval's CLI on `argv`, with the pack's tasks and models."""
    from lm_eval._cli.harness import HarnessCLI

    register_models()
    if _option(argv, "--include_path") is None and argv and argv[0] not in ("-h", "--help"):
        argv = [*argv, "--include_path", str(TASKS_DIR)]
    check_chat_settings(argv)
    sys.argv = ["evalpack", *argv]
    cli = HarnessCLI()
    cli.execute(cli.parse_args())


# The pack's own subcommands; anything else is lm-eval's command line.
PACK_COMMANDS = ("suite", "leaderboard", "rescore", "report")


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PACK_COMMANDS:
        from evalpack import runs

        runs.main(argv)
    else:
        run_lm_eval(argv)


if __name__ == "__main__":
    main()
