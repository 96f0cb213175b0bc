"""The pack's own subcommands, on lm-eval 0.4.13's subcommand mechanism (`SubCommand`), so
`evalpack --help` lists them beside lm-eval's `run`, `ls` and `validate`.

Each handler returns an exit status; bad input (a models or suites file, a results directory)
ends in one line naming it (see `cli.main`).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import textwrap
from pathlib import Path

from lm_eval._cli.subcommand import SubCommand

from ..core import catalog
from ..leaderboard import board as leaderboard
from ..leaderboard import checkpoints as checkpoints_file
from ..leaderboard import gpu_pool, plan
from ..report import report

log = logging.getLogger("evalpack")


class PackCommand(SubCommand):
    """A pack subcommand: name, one-line help, examples; `_add_args` adds its arguments."""

    name = ""
    help = ""
    examples = ""

    def __init__(self, subparsers: argparse._SubParsersAction, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._parser = subparsers.add_parser(
            self.name,
            help=self.help,
            description=self.help,
            epilog=self.epilog_text(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        self._add_args()
        self._parser.set_defaults(func=self._execute, pack_command=self.name)

    def epilog_text(self) -> str:
        return "examples:\n" + textwrap.indent(textwrap.dedent(self.examples).strip(), "  ")

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
        evalpack leaderboard check --models models.yaml --suite tulu_3_dev --output board
        evalpack leaderboard run --models models.yaml --suite tulu_3_dev --output board --strict
        evalpack leaderboard run --models models.yaml --suite tulu_3_dev --output /shared/board \\
            --executor ray --address auto       # see docs/leaderboards.md
        evalpack leaderboard run --models models.yaml --suite tulu_3_dev --output board \\
            --gpus 0,1,2,3       # checkpoints with serve: {command, gpus_per_replica, replicas}
        # a first leaderboard, step by step: docs/first_leaderboard.md
    """

    def _add_args(self) -> None:
        actions = self._parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        run = actions.add_parser(
            "run",
            help="every (checkpoint, task) pair not yet finished",
            description="Prints the plan (checkpoint x task: will run, finished earlier, "
            "cannot run and why), then runs the pairs that can run.",
            epilog="Extra lm-eval flags for every pair go after `--`.\n\n" + self.epilog_text(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        check = actions.add_parser(
            "check",
            help="print the plan only (what would run, what cannot and why)",
            epilog="Exits 1 when a pair cannot run.\n\n" + self.epilog_text(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        run.add_argument(
            "--dry_run",
            action="store_true",
            help="print the plan and stop (as `leaderboard check`)",
        )
        run.add_argument(
            "--strict",
            action="store_true",
            help="a pair that cannot run is an error before anything starts",
        )
        run.set_defaults(handler=leaderboard_run)
        check.set_defaults(handler=leaderboard_run, dry_run=True, strict=False)
        for parser in (run, check):
            add_board_args(parser)


def add_board_args(run: argparse.ArgumentParser) -> None:
    """The arguments `leaderboard run` and `leaderboard check` share."""
    run.add_argument(
        "--models",
        required=True,
        help="YAML: checkpoints: [{name, model, model_args, resources, serve}]",
    )
    run.add_argument("--suite", required=True, help="suite name (see `evalpack suite list`)")
    run.add_argument("--suites", help="YAML file with your own suites")
    run.add_argument("--tasks", help="comma-separated subset of the suite's tasks")
    run.add_argument(
        "--output",
        default="leaderboard",
        help="leaderboard directory (with Ray: a folder every node sees)",
    )
    run.add_argument("--limit", type=int, help="lm-eval --limit (docs per task)")
    run.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: one checkpoint at a time here (default); ray: every "
        "checkpoint as a Ray task with its resources",
    )
    run.add_argument("--address", help="Ray cluster address: auto (default) or ray://HOST:PORT")
    run.add_argument(
        "--gpus",
        help="devices for the servers the board starts (checkpoints with serve: {command, "
        "gpus_per_replica, replicas}): e.g. 0,1,2,3; default: every visible GPU; none: "
        "servers on CPU",
    )
    run.add_argument(
        "--max_retries",
        type=int,
        default=2,
        help="times a failed or lost checkpoint's unfinished pairs are "
        "retried (failures a retry cannot fix are not)",
    )


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
        self._parser.add_argument(
            "--output", help="where the rescored runs go (default: DIR_rescored)"
        )
        self._parser.add_argument(
            "--tasks",
            help="comma-separated: rescore only the runs of these "
            "tasks or groups (default: every run)",
        )
        self._parser.set_defaults(handler=rescore_run)


class Report(PackCommand):
    name = "report"
    help = "a leaderboard report (Markdown, HTML, JSON, plots) from lm-eval result files"
    examples = """
        evalpack report board --output board/report
        evalpack report sft=runs/sft dpo=runs/dpo --reference Tulu-3-8B-DPO
        evalpack report board --reference my_reference.yaml   # or --reference none
        evalpack report board --baseline base-sft      # paired Δ vs your checkpoint base-sft
        evalpack report board --checkpoints models.yaml  # only this models.yaml's rows
    """

    def _add_args(self) -> None:
        self._parser.add_argument(
            "dirs", nargs="+", help="lm-eval output or leaderboard dirs; NAME=DIR names a row"
        )
        self._parser.add_argument(
            "--output", default="report", help="the folder the report goes to (default: ./report)"
        )
        self._parser.add_argument(
            "--reference",
            help="a published model of the tasks' YAML (default Tulu-3-8B-SFT; also "
            "Tulu-3-8B-DPO, Tulu-3-8B, Llama-3.1-8B-Instruct), a YAML file "
            "{name, scores: {task: {value, metric, source}}}, or 'none'",
        )
        self._parser.add_argument(
            "--baseline",
            help="a checkpoint of the report: every other one gets its difference "
            "from it per task, with a paired 95%% confidence interval",
        )
        self._parser.add_argument(
            "--checkpoints",
            help="only these rows: comma-separated names, or a models.yaml "
            "(its checkpoints; leaves out folders of earlier ones)",
        )
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
    missing = catalog.unbuilt(entries)
    for entry in catalog.suite_tasks(catalog.load_suites(args.suites), args.name):
        sys.stdout.write(" ".join(catalog.task_flags(entry)) + "\n")
    for task, reason in missing.items():
        what = "missing" if reason == catalog.NO_TASK else "not buildable here"
        sys.stdout.write(f"# {what}: {task} ({reason})\n")
    return 0


def leaderboard_run(args: argparse.Namespace) -> int:
    try:
        checkpoints = checkpoints_file.load_checkpoints(args.models)
    except checkpoints_file.CheckpointsError as exc:
        sys.stderr.writelines(f"evalpack leaderboard: error: {line}\n" for line in exc.problems)
        return 2
    try:
        gpus = board_gpus(checkpoints, args)
    except ValueError as exc:
        sys.stderr.writelines(
            f"evalpack leaderboard: error: {line}\n" for line in str(exc).split("\n")
        )
        return 2
    only = args.tasks.split(",") if args.tasks else None
    entries = catalog.suite_tasks(catalog.load_suites(args.suites), args.suite, only)
    extra = (["--limit", str(args.limit)] if args.limit is not None else []) + args.lm_eval_args
    board = plan.make_plan(
        checkpoints, entries, Path(args.output), extra, local=args.executor == "local"
    )
    board["unbuilt"] = catalog.unbuilt(
        catalog.suite_entries(catalog.load_suites(args.suites), args.suite, only)
    )
    sys.stdout.write(plan.render(board))
    sys.stdout.flush()
    cannot = plan.cannot_run(board)
    if args.dry_run:
        return 1 if cannot else 0
    if cannot and args.strict:
        sys.stderr.write(
            f"evalpack leaderboard: error: {len(cannot)} pairs cannot run (listed "
            "above); --strict starts nothing\n"
        )
        return 2
    plan.save(board, Path(args.output), args.suite)
    signal.signal(signal.SIGTERM, terminate_as_interrupt)  # stop the workers, say how to resume
    try:
        outcome = leaderboard.run_leaderboard(
            checkpoints,
            entries,
            Path(args.output),
            extra,
            executor=args.executor,
            address=args.address,
            max_retries=args.max_retries,
            cannot=cannot,
            gpus=gpus,
        )
    except (KeyboardInterrupt, leaderboard.Interrupted) as exc:
        where = f"during {exc}" if str(exc) else "before any pair started"
        sys.stderr.write(
            f"evalpack leaderboard: interrupted {where}; finished pairs are kept, "
            "rerun the same command to resume\n"
        )
        return 130
    for (ckpt, task), reason in cannot.items():
        log.error("%s x %s: not started: %s", ckpt, task, reason)
    log.info(
        "leaderboard %s: %d pairs finished earlier, %d ran, %d failed%s, %d could not run",
        args.output,
        len(outcome["done"]),
        len(outcome["ran"]),
        len(outcome["failed"]),
        f" ({', '.join(sorted(outcome['failed']))})" if outcome["failed"] else "",
        len(cannot),
    )
    return 1 if outcome["failed"] or cannot else 0


def board_gpus(checkpoints: list[dict], args: argparse.Namespace) -> list[str]:
    """The GPUs the board's servers share (`--gpus`; locally, and only where a checkpoint has
    `serve:`); ValueError with a line per checkpoint that could never start."""
    if args.executor != "local" or not any("serve" in ckpt for ckpt in checkpoints):
        return []
    gpus = gpu_pool.parse_gpus(args.gpus)
    problems = gpu_pool.gpu_problems(checkpoints, gpus)
    if problems:
        raise ValueError("\n".join(problems))
    return gpus


def terminate_as_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def rescore_run(args: argparse.Namespace) -> int:
    source = Path(args.dir)
    output = Path(args.output) if args.output else source.with_name(source.name + "_rescored")
    tasks = [t for t in (args.tasks or "").split(",") if t]
    from . import rescore  # runs lm-eval here: its task machinery is imported for this command only

    failed = rescore.rescore(source, output, tasks)
    if failed:
        log.error(
            "rescoring failed for %d run(s) (listed above); the others are under %s",
            len(failed),
            output,
        )
        return 1
    log.info("rescored runs written under %s", output)
    return 0
