"""Text helpers shared by the task hooks and the model backends."""

from __future__ import annotations


def cut_at_stops(text: str, stops: list[str] | None) -> str:
    """`text` up to the earliest occurrence of any stop string."""
    cut = len(text)
    for stop in stops or []:
        if stop:
            pos = text.find(stop)
            if pos != -1:
                cut = min(cut, pos)
    return text[:cut]
