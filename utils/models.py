"""The `replay` model: answers generation requests from recorded completions, offline.

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

A request with no completion is an error naming the doc and repeat, unless `missing=empty`.
Like a real backend, the answer is cut at the request's stop strings (`until`).

Chat templating renders the message list as JSON (`render_messages`), so the exact messages
a task builds can be compared with OLMES's through lm-eval's own prompt path.
`request_log=<file>` appends one JSON line per answered request (task, doc_id, repeat), so a
caller can count what was generated.
"""

from __future__ import annotations

import json
from collections import defaultdict

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from evalpack.data import read_jsonl


def render_messages(messages: list[dict]) -> str:
    return json.dumps(messages, ensure_ascii=False)


def cut_at_stops(text: str, stops: list[str] | None) -> str:
    """`text` up to the earliest occurrence of any stop string."""
    cut = len(text)
    for stop in stops or []:
        if stop:
            pos = text.find(stop)
            if pos != -1:
                cut = min(cut, pos)
    return text[:cut]


def index_completions(rows: list[dict], source: str) -> dict[tuple[str, int], str]:
    """Map (doc id, repeat) to completion; the doc id is a doc key or `task#doc_id`."""
    index: dict[tuple[str, int], str] = {}
    next_repeat: dict[str, int] = defaultdict(int)
    for lineno, row in enumerate(rows, start=1):
        if "completion" not in row or not isinstance(row["completion"], str):
            raise ValueError(f"{source}, line {lineno}: missing string field 'completion'")
        if "key" in row:
            doc = row["key"]
        elif "task" in row and "doc_id" in row:
            doc = f"{row['task']}#{row['doc_id']}"
        else:
            raise ValueError(f"{source}, line {lineno}: needs 'key' or both 'task' and 'doc_id'")
        repeat = int(row.get("repeat", next_repeat[doc]))
        next_repeat[doc] = repeat + 1
        index[(doc, repeat)] = row["completion"]
    return index


def doc_source(from_doc: str | dict, task: str) -> str:
    """The field or template `from_doc` names for `task` (a mapping: its longest key that
    prefixes the task name)."""
    if isinstance(from_doc, str):
        return from_doc
    matching = [prefix for prefix in from_doc if task.startswith(prefix)]
    if not matching:
        raise KeyError(f"replay: from_doc names no field or template for task {task} "
                       f"(prefixes: {', '.join(from_doc)})")
    return from_doc[max(matching, key=len)]


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
        if (completions is None) == (from_doc is None):
            raise ValueError("replay needs exactly one of completions=<file.jsonl> or from_doc=")
        if missing not in ("error", "empty"):
            raise ValueError(f"replay: missing must be 'error' or 'empty', not {missing!r}")
        self.from_doc = from_doc
        self.missing = missing
        self.request_log = request_log
        files = [completions] if isinstance(completions, str) else completions or []
        self.source = ",".join(files) or f"from_doc={from_doc}"
        self.index = {}
        for file in files:  # several files answer different docs (e.g. one per benchmark)
            self.index.update(index_completions(read_jsonl(file), file))

    @property
    def tokenizer_name(self) -> str:
        return f"replay:{self.source}"

    def chat_template(self, chat_template: bool | str = False) -> str:
        return "replay-json-messages"

    def apply_chat_template(self, chat_history, add_generation_prompt: bool = True) -> str:
        return render_messages(chat_history)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        seen: dict[int, int] = defaultdict(int)  # lm-eval repeats a request by listing it again
        answers, log = [], []
        for request in requests:
            repeat = seen[id(request)]
            seen[id(request)] += 1
            _, gen_kwargs = request.args
            answer = self._answer(request, repeat)
            answers.append(cut_at_stops(answer, gen_kwargs.get("until")))
            log.append({"task": request.task_name, "doc_id": request.doc_id, "repeat": repeat})
        if self.request_log:
            with open(self.request_log, "a", encoding="utf-8") as fh:
                fh.writelines(json.dumps(entry) + "\n" for entry in log)
        return answers

    def _answer(self, request, repeat: int) -> str:
        doc = request.doc
        if self.from_doc is not None:
            source = doc_source(self.from_doc, request.task_name)
            return doc[source] if "{" not in source else source.format(**doc)
        for doc_id in (doc.get("doc_key"), f"{request.task_name}#{request.doc_id}"):
            if (doc_id, repeat) in self.index:
                return self.index[(doc_id, repeat)]
        if self.missing == "empty":
            return ""
        raise KeyError(
            f"replay ({self.source}): no completion for task {request.task_name} doc "
            f"{request.doc_id} (key {doc.get('doc_key')}) repeat {repeat}"
        )

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("replay answers generation requests only")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("replay answers generation requests only")
