"""The plan of a leaderboard, made before anything starts: every (checkpoint, task) pair as
will run, finished earlier, or cannot run and why.

A pair cannot run when its task's data is missing from the `EVALPACK_DATA_DIR` mirror (the file
looked for is named) or, without a mirror, the hub cannot be reached, when the libraries its YAML
names are not installed (`requirements`: BigCodeBench's), when a checkpoint the board serves
(`serve`) names a local path that does not exist, when the task needs log-likelihoods or an
assistant prefix continued and
the checkpoint's backend or server cannot do it (servers are asked once, `probes`), or when the
task needs a judge that is not configured, does not answer or gives no log-probabilities. Such
pairs are not started; `--strict` makes any of them an error before anything starts. The plan
is printed as a table and saved as `<board>/plan.json`, which `report` reads to show the suite's
members that did not run.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from ..core import catalog, data
from ..models.endpoints import url_problem
from ..models.registry import register
from . import identity, requirements
from .rundirs import pair_is_done
from .serve import model_path_problem

PLAN_FILE = "plan.json"
LOGLIKELIHOOD_TYPES = ("loglikelihood", "multiple_choice", "loglikelihood_rolling")


@dataclass
class Needs:
    """What running a task takes, from its YAML (groups: their members')."""

    loglikelihood: bool = False
    prefix: bool = False
    judge: str | None = None  # the kind of judge (`judge_kind`), None: no judge
    files: list[Path] = field(default_factory=list)  # mirror files, when a mirror is set
    hub: list[str] = field(default_factory=list)  # datasets from the hub (their mirror paths)
    libraries: list[str] = field(default_factory=list)  # what `metadata.needs` lacks, one line each


def judge_kind(declared) -> str | None:
    """A YAML's `metadata.judge`: `true` (AlpacaEval's judge) or the judge's name."""
    return "alpaca_eval" if declared is True else (declared or None)


def task_needs(entry: dict, metadata: dict) -> Needs:
    needs = Needs(judge=judge_kind(catalog.facts(entry["task"]).get("judge")))
    # `data_file` in the run's metadata: the user's own file instead of the dataset
    mirror = None if metadata.get("data_file") else os.environ.get(data.DATA_DIR_ENV)
    libraries: list[str] = []  # what the YAML's `metadata.needs` names (`requirements`)
    for leaf in catalog.leaves(entry["task"]):
        config = catalog.task_config(leaf)
        needs.loglikelihood |= config.get("output_type") in LOGLIKELIHOOD_TYPES
        needs.prefix |= bool(config.get("gen_prefix")) and bool(entry.get("chat"))
        needs.judge = needs.judge or judge_kind(config.get("metadata", {}).get("judge"))
        named = config.get("metadata", {}).get("needs")
        if named and named not in libraries:
            libraries.append(named)
        kwargs = config.get("dataset_kwargs") or {}
        if "path" in kwargs and not metadata.get("data_file"):  # the pack's loaders' forms
            splits = kwargs.get("splits") or [
                kwargs.get("split") or config.get("test_split", "test")
            ]
            names = kwargs.get("names") or [kwargs.get("name")]
            files = [
                data.mirror_file(mirror or "", kwargs["path"], name, split)
                for name in names
                for split in splits
            ]
            if mirror:
                needs.files += files
            else:
                needs.hub += [str(file) for file in files]
    needs.libraries = [p for p in map(requirements.library_problem, libraries) if p]
    return needs


def run_metadata(extra: list[str]) -> dict:
    """The run's `--metadata` JSON among the extra lm-eval flags (the judge settings)."""
    for flag, value in itertools.pairwise(extra):
        if flag == "--metadata":
            try:
                return json.loads(value)
            except ValueError:
                return identity.as_mapping(value)
    return {}


class Backend:
    """One checkpoint's abilities, each asked of its server at most once. A server on
    127.0.0.1 is not asked when the pairs run elsewhere (`local_only=False`, Ray): each node
    would reach its own."""

    def __init__(self, ckpt: dict, local_only: bool = True) -> None:
        from lm_eval.api.registry import get_model

        register()
        self.name, self.args = ckpt["model"], identity.model_args(ckpt)
        try:
            self.cls = get_model(ckpt["model"])
        except Exception:  # noqa: BLE001  (a backend that cannot be imported here: ask nothing)
            self.cls = None
        self.answers: dict[str, str | None] = {}
        host = urlparse(str(self.args.get("base_url", ""))).hostname or ""
        self.askable = local_only or host not in ("127.0.0.1", "localhost", "::1")
        self.askable &= "serve" not in ckpt  # its server is not started yet
        self.missing = model_path_problem(ckpt) if "serve" in ckpt else None

    def problem(self, need: str) -> str | None:
        if need == "reachable" and url_problem(self.name, self.args.get("base_url")):
            return url_problem(self.name, self.args.get("base_url"))
        if self.cls is None or not self.askable:
            return None
        if need not in self.answers:
            # imported when a server is first asked: with the probes come an HTTP client and
            # lm-eval's model classes (0.2 s at every board's start otherwise)
            from . import probes

            if need == "reachable":
                self.answers[need] = probes.reachable_problem(self.args)
            elif need == "loglikelihood":
                self.answers[need] = probes.loglikelihood_problem(self.cls, self.args)
            else:
                self.answers[need] = probes.prefix_problem(self.cls, self.args)
        return self.answers[need]


def pair_problem(needs: Needs, backend: Backend, judges: dict[str, str | None]) -> str | None:
    """Why one pair cannot run, or None (the first reason found)."""
    if backend.missing:
        return backend.missing
    missing = [str(f) for f in needs.files if not f.is_file()]
    elsewhere = requirements.mirror_problem(missing) or requirements.hub_problem(needs.hub)
    if elsewhere:
        return elsewhere
    if needs.libraries:
        return needs.libraries[0]
    checks = [("reachable", True), ("loglikelihood", needs.loglikelihood), ("prefix", needs.prefix)]
    for need, wanted in checks:
        if wanted and backend.problem(need):
            return backend.problem(need)
    return judges.get(needs.judge) if needs.judge else None


def make_plan(
    checkpoints: list[dict], entries: list[dict], output: Path, extra: list[str], local: bool = True
) -> dict:
    """{"tasks", "checkpoints", "pairs": {checkpoint: {task: "run"|"done"|reason}}};
    `local`: the pairs run on this machine (else loopback servers are not asked)."""
    metadata = run_metadata(extra)
    needs = {e["task"]: task_needs(e, metadata) for e in entries}
    kinds = {n.judge for n in needs.values() if n.judge}
    judges = {}
    if kinds:
        from . import probes

        judges = {kind: probes.judge_problem(metadata, kind) for kind in kinds}
    pairs: dict[str, dict[str, str]] = {}
    for ckpt in checkpoints:
        backend, row = Backend(ckpt, local), {}
        for entry in entries:
            if pair_is_done(output / ckpt["name"] / entry["task"]):
                row[entry["task"]] = "done"
            else:
                row[entry["task"]] = pair_problem(needs[entry["task"]], backend, judges) or "run"
        pairs[ckpt["name"]] = row
    return {
        "tasks": [e["task"] for e in entries],
        "checkpoints": [c["name"] for c in checkpoints],
        "pairs": pairs,
    }


def cannot_run(plan: dict) -> dict[tuple[str, str], str]:
    """{(checkpoint, task): reason} for the pairs that cannot run."""
    return {
        (ckpt, task): status
        for ckpt, row in plan["pairs"].items()
        for task, status in row.items()
        if status not in ("run", "done")
    }


def render(plan: dict) -> str:
    """The task x checkpoint table (run / done / CANNOT), then one line per pair that cannot
    run with its reason."""
    header = ["task", *plan["checkpoints"]]
    rows = [
        [task, *(plan["pairs"][ckpt][task] for ckpt in plan["checkpoints"])]
        for task in plan["tasks"]
    ]
    rows = [[r[0], *(s if s in ("run", "done") else "CANNOT" for s in r[1:])] for r in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
        for r in [header, *rows]
    ]
    blocked = cannot_run(plan)
    counts = [
        sum(s == k for row in plan["pairs"].values() for s in row.values()) for k in ("run", "done")
    ]
    head = (
        f"plan: {len(plan['tasks'])} tasks x {len(plan['checkpoints'])} checkpoints: "
        f"{counts[0]} pairs will run, {counts[1]} finished earlier, {len(blocked)} "
        "cannot run"
    )
    tail = [f"cannot run: {ckpt} x {task}: {reason}" for (ckpt, task), reason in blocked.items()]
    tail += [f"not in the pack: {task}: {why}" for task, why in plan.get("unbuilt", {}).items()]
    return "\n".join([head, *lines, *tail]) + "\n"


def save(plan: dict, output: Path, suite: str) -> None:
    output.mkdir(parents=True, exist_ok=True)
    (output / PLAN_FILE).write_text(
        json.dumps({"suite": suite, **plan}, indent=1), encoding="utf-8"
    )
