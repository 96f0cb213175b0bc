"""The `replay` model: answers generation requests from recorded completions, and log-likelihood
requests (multiple-choice tasks) from recorded values, offline.

Completions come from one of:

* `completions=<file.jsonl>` (or a list of files, given as JSON): rows with `completion` and
  either `key` (the doc key the pack's loader gives every doc,
  `<owner>__<name>/<config>/<split>#<row>`, as in the OLMES reference files) or `task` +
  `doc_id`. An optional `repeat` (0-based) picks which sample of a doc the row
  answers; without it, rows of the same doc are its samples in file order.
* `from_doc=<field>` (e.g. `from_doc=solution`, the reference solution) or a `str.format`
  template over the doc's fields (`So the answer is {target}.`; on lm-eval's command line a
  value with braces must be given as JSON: `--model_args '{"from_doc": "..."}'`); every
  repeat gets the same text. A mapping of task-name prefixes to such fields or templates serves
  a suite (`{"minerva_math": "solution", "bbh": "So the answer is {target}."}`): the longest
  prefix of the request's task name applies.

Log-likelihood rows (same files) have `key` or `task` + `doc_id`, `continuation` (the string
scored, as the request holds it) and `loglikelihood` (a number), optionally `is_greedy`
(default false): one row per doc and continuation. `loglikelihood_rows` turns a saved lm-eval
sample log back into such rows (`evalpack rescore`). A log-likelihood request without a row is
always an error naming the doc and continuation; `from_doc` answers generation only.

A request with no completion is an error naming the doc and repeat, unless `missing=empty`.
Like a real backend, the answer is cut at the request's stop strings (`until`).

Chat templating renders the message list as JSON (`render_messages`), so the exact messages
a task builds can be compared with OLMES's through lm-eval's own prompt path.
`request_log=<file>` appends one JSON line per answered request (task, doc_id, and repeat or
continuation), so a caller can count what was asked.
"""

from __future__ import annotations

import json
from collections import defaultdict

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from ..core.data import read_jsonl
from ..core.suggest import did_you_mean
from ..core.text import cut_at_stops
from .requests import render_messages, repeat_numbers


def row_doc(row: dict, source: str, lineno: int) -> str:
    """The doc a row answers: its doc key, or `task#doc_id`."""
    if "key" in row:
        return row["key"]
    if "task" in row and "doc_id" in row:
        return f"{row['task']}#{row['doc_id']}"
    raise ValueError(f"{source}, line {lineno}: needs 'key' or both 'task' and 'doc_id'")


def index_completions(rows: list[dict], source: str) -> dict[tuple[str, int], str]:
    """Map (doc id, repeat) to completion; the doc id is a doc key or `task#doc_id`.
    Log-likelihood rows (with `loglikelihood`) are not completions and are skipped."""
    index: dict[tuple[str, int], str] = {}
    next_repeat: dict[str, int] = defaultdict(int)
    for lineno, row in enumerate(rows, start=1):
        if "loglikelihood" in row:
            continue
        if "completion" not in row or not isinstance(row["completion"], str):
            raise ValueError(f"{source}, line {lineno}: missing string field 'completion'")
        doc = row_doc(row, source, lineno)
        repeat = int(row.get("repeat", next_repeat[doc]))
        next_repeat[doc] = repeat + 1
        index[(doc, repeat)] = row["completion"]
    return index


def index_loglikelihoods(rows: list[dict], source: str) -> dict[tuple[str, str], tuple]:
    """Map (doc id, continuation) to (log-likelihood, is_greedy) from the rows that have
    `loglikelihood`."""
    index: dict[tuple[str, str], tuple[float, bool]] = {}
    for lineno, row in enumerate(rows, start=1):
        if "loglikelihood" not in row:
            continue
        problem = score_row_problem(row)
        if problem:
            raise ValueError(f"{source}, line {lineno}: {problem}")
        key = (row_doc(row, source, lineno), row["continuation"])
        index[key] = (float(row["loglikelihood"]), bool(row.get("is_greedy", False)))
    return index


def score_row_problem(row: dict) -> str | None:
    value = row["loglikelihood"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "'loglikelihood' must be a number"
    if not isinstance(row.get("continuation"), str):
        return "missing string field 'continuation'"
    return None


def loglikelihood_rows(sample: dict, task: str) -> list[dict]:
    """Replay rows for one entry of a saved lm-eval sample log of a log-likelihood task (its
    `arguments` hold (context, continuation) pairs, its `resps` one [log-likelihood, is_greedy]
    pair per request, logged as strings); [] for an entry of a generation task."""
    args, resps = sample.get("arguments"), sample.get("resps") or []
    if not isinstance(args, dict) or not all(is_score(resp) for resp in resps) or not resps:
        return []
    pairs = [args[name] for name in sorted(args, key=lambda n: int(n.rsplit("_", 1)[1]))]
    return [
        {
            "task": task,
            "doc_id": sample["doc_id"],
            "continuation": pair["arg_1"],
            "loglikelihood": float(resp[0][0]),
            "is_greedy": resp[0][1] in (True, "True"),
        }
        for pair, resp in zip(pairs, resps, strict=True)
    ]


def is_score(resp) -> bool:
    """A logged log-likelihood response: `[[log-likelihood, is_greedy]]`."""
    return (
        isinstance(resp, list)
        and len(resp) == 1
        and isinstance(resp[0], list)
        and len(resp[0]) == 2
    )


def doc_source(from_doc: str | dict, task: str) -> str:
    """The field or template `from_doc` names for `task` (a mapping: its longest key that
    prefixes the task name)."""
    if isinstance(from_doc, str):
        return from_doc
    matching = [prefix for prefix in from_doc if task.startswith(prefix)]
    if not matching:
        raise KeyError(
            f"replay: from_doc names no field or template for task {task} "
            f"(prefixes: {', '.join(from_doc)})"
        )
    return from_doc[max(matching, key=len)]


BACKEND_OPTIONS = ("batch_size", "max_batch_size", "device")  # lm-eval passes these to every model
ARGUMENTS = ("completions", "from_doc", "missing", "request_log")


def unknown_arguments(options: dict) -> None:
    """A model argument replay does not take is an error naming it (and what it may mean)."""

    unknown = [name for name in options if name not in BACKEND_OPTIONS]
    if unknown:
        named = ", ".join(f"{n}={did_you_mean(n, ARGUMENTS, show='{}='.format)}" for n in unknown)
        raise ValueError(
            f"bad --model_args for replay: {named}; it takes "
            f"{', '.join(a + '=' for a in ARGUMENTS)}"
        )


def doc_answer(doc: dict, source: str, request) -> str:
    """`from_doc`'s answer: the doc's field `source`, or `source` formatted with the doc; a field
    the doc lacks is an error listing the fields it has."""
    try:
        return doc[source] if "{" not in source else source.format(**doc)
    except KeyError as exc:
        raise ValueError(
            f"replay from_doc={source}: task {request.task_name} doc "
            f"{request.doc_id} has no field {exc.args[0]!r}; its fields: "
            f"{', '.join(sorted(doc))}"
        ) from None


@register_model("replay")
class ReplayLM(LM):
    def __init__(
        self,
        completions: str | list[str] | None = None,
        from_doc: str | dict | None = None,
        missing: str = "error",
        request_log: str | None = None,
        **_backend_options,
    ) -> None:
        super().__init__()
        unknown_arguments(_backend_options)
        if (completions is None) == (from_doc is None):
            raise ValueError("replay needs exactly one of completions=<file.jsonl> or from_doc=")
        if missing not in ("error", "empty"):
            raise ValueError(f"replay: missing must be 'error' or 'empty', not {missing!r}")
        self.from_doc = from_doc
        self.missing = missing
        self.request_log = request_log
        files = [completions] if isinstance(completions, str) else completions or []
        self.source = ",".join(files) or f"from_doc={from_doc}"
        self.index, self.scores = {}, {}
        for file in files:  # several files answer different docs (e.g. one per benchmark)
            rows = read_jsonl(file)
            self.index.update(index_completions(rows, file))
            self.scores.update(index_loglikelihoods(rows, file))

    @classmethod
    def model_args_problems(cls, args: dict) -> list[str]:
        """What is wrong with `args` before anything runs (`evalpack leaderboard` checks it)."""
        if ("completions" in args) == ("from_doc" in args):
            return ["replay needs exactly one of completions=<file.jsonl> or from_doc=<field>"]
        return []

    @property
    def tokenizer_name(self) -> str:
        return f"replay:{self.source}"

    def chat_template(self, chat_template: bool | str = False) -> str:
        return "replay-json-messages"

    def apply_chat_template(self, chat_history, add_generation_prompt: bool = True) -> str:
        return render_messages(chat_history)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        answers, log = [], []
        for request, repeat in zip(requests, repeat_numbers(requests)):
            _, gen_kwargs = request.args
            answer = self._answer(request, repeat)
            answers.append(cut_at_stops(answer, gen_kwargs.get("until")))
            log.append({"task": request.task_name, "doc_id": request.doc_id, "repeat": repeat})
        self._log(log)
        return answers

    def _log(self, entries: list[dict]) -> None:
        if self.request_log:
            with open(self.request_log, "a", encoding="utf-8") as fh:
                fh.writelines(json.dumps(entry) + "\n" for entry in entries)

    def _doc_ids(self, request) -> tuple[str | None, str]:
        return request.doc.get("doc_key"), f"{request.task_name}#{request.doc_id}"

    def _answer(self, request, repeat: int) -> str:
        doc = request.doc
        if self.from_doc is not None:
            return doc_answer(doc, doc_source(self.from_doc, request.task_name), request)
        for doc_id in self._doc_ids(request):
            if (doc_id, repeat) in self.index:
                return self.index[(doc_id, repeat)]
        if self.missing == "empty":
            return ""
        raise KeyError(
            f"replay ({self.source}): no completion for task {request.task_name} doc "
            f"{request.doc_id} (key {doc.get('doc_key')}) repeat {repeat}"
        )

    def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        if self.from_doc is not None:
            raise ValueError(
                "replay: from_doc answers generation requests; log-likelihood "
                "requests need recorded values (completions=<file> with rows "
                "holding 'continuation' and 'loglikelihood')"
            )
        answers = [self._recorded(request) for request in requests]
        self._log(
            [{"task": r.task_name, "doc_id": r.doc_id, "continuation": r.args[1]} for r in requests]
        )
        return answers

    def _recorded(self, request) -> tuple[float, bool]:
        continuation = request.args[1]
        for doc_id in self._doc_ids(request):
            if (doc_id, continuation) in self.scores:
                return self.scores[(doc_id, continuation)]
        raise KeyError(
            f"replay ({self.source}): no recorded log-likelihood for task {request.task_name} "
            f"doc {request.doc_id} (key {request.doc.get('doc_key')}) "
            f"continuation {continuation!r}"
        )

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("replay answers generation and log-likelihood requests only")
