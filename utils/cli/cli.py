"""The `evalpack` command: lm-eval's own CLI with the pack's tasks, models and subcommands.

* lm-eval's `run` (also without the word `run`), `ls` and `validate` see the pack's tasks: its
  task folder is the include path unless `--include_path` is given.
* The pack's models (`replay`, the served-model backends, `resumable`) are registered after
  lm-eval's own, so every built-in backend stays available.
* The pack's subcommands (`suite`, `leaderboard run`, `rescore`, `report`) sit beside lm-eval's
  in one parser: `evalpack --help` lists them all, each `--help` has examples.
* Chat settings are checked on the parsed arguments of `run`: tasks whose YAML declares
  `metadata: {chat: true}` warn without `--apply_chat_template`, base-model tasks with it.
* Errors are one line, Ctrl-C too; `--verbose` (or `EVALPACK_TRACEBACK=1`) shows tracebacks and
  the pack's debug log (`console.py`).
"""

from __future__ import annotations

import argparse
import logging
import sys

from lm_eval._cli.harness import HarnessCLI

from ..core import catalog
from ..models.registry import register as register_models
from . import console
from .subcommands import PACK_COMMANDS

log = logging.getLogger("evalpack")

DESCRIPTION = """\
OLMES-faithful and reasoning-benchmark tasks for lm-evaluation-harness 0.4.13.

lm-eval's commands (the pack's tasks and models included):
  run         evaluate a model on tasks (`run` may be left out)
  ls          list tasks, groups, subtasks
  validate    check task configurations
The pack's commands:
  suite       list the named suites, or show one's lm-eval flags
  leaderboard run every checkpoint of a models.yaml on a suite, resumable
  rescore     recompute metrics from --log_samples output, no model
  report      a leaderboard report (Markdown, HTML, JSON, plots)

Errors are one line; --verbose (or EVALPACK_TRACEBACK=1) shows the traceback and debug log.
Ctrl-C stops sending requests, keeps the answers in hand (--use_cache) and exits.
"""

EXAMPLES = """\
examples:
  evalpack --model replay --model_args from_doc=solution --tasks minerva_math_tulu \\
      --apply_chat_template --limit 10 --output_path out --log_samples
  evalpack --model hf --model_args pretrained=allenai/Llama-3.1-Tulu-3-8B-SFT \\
      --tasks gsm8k_tulu,bbh_cot_v1_tulu --apply_chat_template --output_path out
  evalpack ls tasks
  evalpack suite show tulu_3_dev
  evalpack leaderboard run --models models.yaml --suite tulu_3_dev_core --output board
  evalpack report board --output board/report
"""


class EvalpackCLI(HarnessCLI):
    """lm-eval's `HarnessCLI` named `evalpack`, with the pack's subcommands added."""

    def __init__(self) -> None:
        super().__init__()
        self._parser.prog = "evalpack"
        self._parser.description = DESCRIPTION
        self._parser.epilog = EXAMPLES
        for parser in self._subparsers.choices.values():  # lm-eval's, named for its own command
            parser.prog = parser.prog.replace("lm-eval", "evalpack", 1)
            parser.usage = parser.usage and parser.usage.replace("lm-eval", "evalpack")
        self._subparsers._prog_prefix = "evalpack"  # argparse's prefix for subcommands added next
        for command in PACK_COMMANDS:
            command.create(self._subparsers)

    def parse(self, argv: list[str]) -> argparse.Namespace:
        """Parse `argv`; a bare `--` ends the pack's own flags (what follows goes to lm-eval
        untouched, for `leaderboard run`); no command means lm-eval's `run`."""
        cut = argv.index("--") if "--" in argv else len(argv)
        own, passed = argv[:cut], argv[cut + 1 :]
        if own and own[0] not in self._subparsers.choices and own[0] not in ("-h", "--help"):
            own = ["run", *own]
        args = self._parser.parse_args(own)
        args.lm_eval_args = passed
        return args


def run_command(args: argparse.Namespace) -> int:
    """The pack's commands run here; lm-eval's through `inprocess`, imported only for them: it
    brings lm-eval's task machinery (`datasets`, pandas), about a second of CPU that the pack's
    commands (a board, a report) do not need."""
    if getattr(args, "pack_command", None):
        return args.func(args)
    from ..leaderboard.inprocess import execute

    return execute(args)


def main(argv: list[str] | None = None) -> None:
    verbose, argv = console.wants_traceback(list(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if verbose:
        logging.getLogger("evalpack").setLevel(logging.DEBUG)
    register_models()
    cli = EvalpackCLI()
    if not argv:
        cli._parser.print_help()
        return
    args = cli.parse(argv)
    try:
        console.quiet_lm_eval(
            catalog.requested_tasks(args) if hasattr(args, "tasks") else [],
            console.caches_itself(getattr(args, "model", None)),
        )
        status = run_command(args)
    except KeyboardInterrupt as exc:
        if verbose:
            raise
        # a served backend's `ServedInterrupted` says what was kept and what a rerun sends
        print(f"evalpack: {exc or 'interrupted'}", file=sys.stderr)
        sys.exit(130)
    except console.NAMED_ERRORS as exc:
        if verbose:
            raise
        # bad input (a task name, model args, a data or models file, a dead server): one line
        command = f" {args.pack_command}" if getattr(args, "pack_command", None) else ""
        line = console.error_line(exc, getattr(args, "include_path", None))
        raise SystemExit(f"evalpack{command}: error: {line} {console.TRACEBACK_HINT}") from None
    sys.exit(status)


if __name__ == "__main__":
    main()
