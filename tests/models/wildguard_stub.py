"""A WildGuard on 127.0.0.1 for the safety tests: the generic HTTP stub (`http_stub.Stub`:
`/v1/completions`, recorded payloads, faults, concurrency checks) answering each judge request
with the WildGuard output `answer(request, response)` gives for the pair shown in its prompt.
"""

from __future__ import annotations

from evalpack.scoring.safety import WILDGUARD_INPUT_FORMAT
from tests.models.http_stub import Stub

HEAD, _, REST = WILDGUARD_INPUT_FORMAT.partition("{prompt}")
MIDDLE, _, TAIL = REST.partition("{response}")


def shown_pair(prompt: str) -> tuple[str, str] | None:
    """(request, response) as filled into WildGuard's prompt (the tests' responses never
    contain the template's own text); None for another prompt (a leaderboard's probe)."""
    if not (prompt.startswith(HEAD) and prompt.endswith(TAIL)):
        return None
    inner = prompt[len(HEAD) : len(prompt) - len(TAIL)]
    request, _, response = inner.rpartition(MIDDLE)
    return request, response


class WildGuardStub(Stub):
    def __init__(self, answer) -> None:
        super().__init__()
        self.reply = lambda payload: answer(*(shown_pair(payload["prompt"]) or ("", "")))

    @property
    def base_url(self) -> str:
        return self.url("/v1")

    def pairs(self) -> list[tuple[str, str]]:
        """The (request, response) of every judge request received (probes left out)."""
        shown = [shown_pair(p["prompt"]) for p in self.payloads("/v1/completions")]
        return [pair for pair in shown if pair is not None]
