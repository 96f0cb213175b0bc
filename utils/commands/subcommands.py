"""The pack's own subcommands, on lm-eval 0.4.13's subcommand mechanism (`SubCommand`), so
`evalpack --help` lists them beside lm-eval's `run`, `ls` and `validate`.

Each handler returns an exit status; bad input (a models or suites file, a results directory)
ends in one line naming it (see `cli.main`).
"""

from __future__ import annotations

import argparse
import logging
import sys
import textwrap
from pathlib import Path

from lm_eval._cli.subcommand import SubCommand

from . import catalog, leaderboard, report, rescore
from . import checkpoints as checkpoints_file

log = logging.getLogger("evalpack")


class PackCommand(SubCommand):
    """A pack subcommand: name, one-line help, examples; `_add_args` adds its arguments."""

    name = ""
    help = ""
    examples = ""

    def __init__(self, subparsers: argparse._SubParsersAction, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._parser = subparsers.add_parser(
            self.name, help=self.help, description=self.help,
            epilog="examples:\n" + textwrap.indent(textwrap.dedent(self.examples).strip(), "  "),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        self._add_args()
        self._parser.set_defaults(func=self._execute, pack_command=self.name)

    def _execute(self, args: argparse.Namespace) -> int:
        return args.handler(args)


class Suite(PackCommand):
    name = "suite"
    help = "list the named suites, or show the lm-eval flags each task of one runs with"
    examples = """
        evalpack suite list
        evalpack suite show tulu_3_dev
        evalpack suite show my_suite --suites my_suites.yaml
    """

    def _add_args(self) -> None:
        actions = self._parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        listing = actions.add_parser("list", help="the suites and their tasks")
        listing.set_defaults(handler=suite_list)
        show = actions.add_parser("show", help="one suite's tasks with their lm-eval flags")
        show.add_argument("name", help="suite name (see `evalpack suite list`)")
        show.set_defaults(handler=suite_show)
        for sub in (listing, show):
            sub.add_argument("--suites", help="YAML file with your own suites")


class Leaderboard(PackCommand):
    name = "leaderboard"
    help = "run every checkpoint of a models.yaml on a suite, resumable, locally or on Ray"
    examples = """
        evalpack leaderboard run --models models.yaml --suite tulu_3_dev_core --output board
        evalpack leaderboard run --models models.yaml --suite tulu_3_dev --tasks gsm8k_tulu \\
            --limit 50 --output board -- --batch_size 8
        evalpack leaderboard run --models models.yaml --suite tulu_3_dev --output /shared/board \\
            --executor ray --address auto       # see docs/leaderboards.md
    """

    def _add_args(self) -> None:
        actions = self._parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        run = actions.add_parser(
            "run", help="every (checkpoint, task) pair not yet finished",
            epilog="Extra lm-eval flags for every pair go after `--`.")
        run.add_argument("--models", required=True,
                         help="YAML: checkpoints: [{name, model, model_args, resources}]")
        run.add_argument("--suite", required=True, help="suite name (see `evalpack suite list`)")
        run.add_argument("--suites", help="YAML file with your own suites")
        run.add_argument("--tasks", help="comma-separated subset of the suite's tasks")
        run.add_argument("--output", default="leaderboard",
                         help="leaderboard directory (with Ray: a folder every node sees)")
        run.add_argument("--limit", type=int, help="lm-eval --limit (docs per task)")
        run.add_argument("--executor", choices=("local", "ray"), default="local",
                         help="local: one checkpoint at a time here (default); ray: every "
                              "checkpoint as a Ray task with its resources")
        run.add_argument("--address", help="Ray cluster address: auto (default) or ray://HOST:PORT")
        run.add_argument("--max_retries", type=int, default=2,
                         help="times a failed or lost checkpoint's unfinished pairs are retried")
        run.set_defaults(handler=leaderboard_run)


class Rescore(PackCommand):
    name = "rescore"
    help = "recompute every metric of saved runs from their --log_samples output (no model)"
    examples = """
        evalpack rescore board                       # -> board_rescored/
        evalpack rescore out/ --output out_rescored  # any lm-eval --output_path
        evalpack rescore board --tasks gsm8k_tulu,ifeval_tulu   # only these tasks' runs
    """

    def _add_args(self) -> None:
        self._parser.add_argument("dir", help="an lm-eval --output_path or a leaderboard directory")
        self._parser.add_argument("--output", help="where the rescored runs go (default: DIR_rescored)")
        self._parser.add_argument("--tasks", help="comma-separated: rescore only the runs of these "
                                  "tasks or groups (default: every run)")
        self._parser.set_defaults(handler=rescore_run)


class Report(PackCommand):
    name = "report"
    help = "a leaderboard report (Markdown, HTML, JSON, plots) from lm-eval result files"
    examples = """
        evalpack report board --output board/report
        evalpack report sft=runs/sft dpo=runs/dpo --reference Tulu-3-8B-DPO
        evalpack report board --reference my_reference.yaml   # or --reference none
        evalpack report board --baseline base-sft      # paired Δ vs your checkpoint base-sft
    """

    def _add_args(self) -> None:
        self._parser.add_argument("dirs", nargs="+",
                                  help="lm-eval output or leaderboard dirs; NAME=DIR names a row")
        self._parser.add_argument("--output", default="report", help="where the report goes")
        self._parser.add_argument(
            "--reference",
            help="a published model of the tasks' YAML (default Tulu-3-8B-SFT; also "
                 "Tulu-3-8B-DPO, Tulu-3-8B, Llama-3.1-8B-Instruct), a YAML file "
                 "{name, scores: {task: {value, metric, source}}}, or 'none'")
        self._parser.add_argument(
            "--baseline", help="a checkpoint of the report: every other one gets its difference "
                               "from it per task, with a paired 95%% confidence interval")
        self._parser.add_argument("--title", default="evalpack leaderboard")
        self._parser.set_defaults(handler=report.report_command)


PACK_COMMANDS = (Suite, Leaderboard, Rescore, Report)


# --- handlers -----------------------------------------------------------------------------------


def suite_list(args: argparse.Namespace) -> int:
    for name, suite in catalog.load_suites(args.suites).items():
        tasks = ", ".join(e["task"] for e in suite["tasks"])
        sys.stdout.write(f"{name}: {suite.get('description', '')}\n    {tasks}\n")
    return 0


def suite_show(args: argparse.Namespace) -> int:
    entries = catalog.suite_entries(catalog.load_suites(args.suites), args.name)
    missing = set(catalog.missing_tasks(entries))
    for entry in catalog.suite_tasks(catalog.load_suites(args.suites), args.name):
        sys.stdout.write(" ".join(catalog.task_flags(entry)) + "\n")
    for task in sorted(missing):
        sys.stdout.write(f"# missing: {task} (no such task in this version of the pack)\n")
    return 0


def leaderboard_run(args: argparse.Namespace) -> int:
    try:
        checkpoints = checkpoints_file.load_checkpoints(args.models)
    except checkpoints_file.CheckpointsError as exc:
        sys.stderr.writelines(f"evalpack leaderboard: error: {line}\n" for line in exc.problems)
        return 2
    only = args.tasks.split(",") if args.tasks else None
    entries = catalog.suite_tasks(catalog.load_suites(args.suites), args.suite, only)
    extra = (["--limit", str(args.limit)] if args.limit is not None else []) + args.lm_eval_args
    try:
        outcome = leaderboard.run_leaderboard(
            checkpoints, entries, Path(args.output), extra, executor=args.executor,
            address=args.address, max_retries=args.max_retries)
    except (KeyboardInterrupt, leaderboard.Interrupted) as exc:
        where = f"during {exc}" if str(exc) else "before any pair started"
        sys.stderr.write(f"evalpack leaderboard: interrupted {where}; finished pairs are kept, "
                         "rerun the same command to resume\n")
        return 130
    log.info(
        "leaderboard %s: %d pairs finished earlier, %d ran, %d failed%s",
        args.output, len(outcome["done"]), len(outcome["ran"]), len(outcome["failed"]),
        f" ({', '.join(sorted(outcome['failed']))})" if outcome["failed"] else "",
    )
    return 1 if outcome["failed"] else 0


def rescore_run(args: argparse.Namespace) -> int:
    source = Path(args.dir)
    output = Path(args.output) if args.output else source.with_name(source.name + "_rescored")
    tasks = [t for t in (args.tasks or "").split(",") if t]
    failed = rescore.rescore(source, output, tasks)
    log.info("rescored runs written under %s", output)
    return 1 if failed else 0
