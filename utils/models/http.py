"""JSON over HTTP for the pack's model clients (served backends, the AlpacaEval judge): one POST
with its errors told apart, a field of an answer or a `BadResponse` naming what is missing, and
the context length a server reports."""

from __future__ import annotations

import json

import requests


class BadResponse(ValueError):
    """The server answered, but not with a usable completion."""


def post_json(url: str, payload: dict, headers: dict, timeout: float):
    """POST `payload` and return the JSON answer; an HTTP error status is `HTTPError` (with the
    response, so callers can tell retryable ones), an answer that is not JSON `BadResponse`."""
    response = requests.post(url, json=payload, headers=headers, timeout=timeout)
    if not response.ok:
        raise requests.HTTPError(
            f"HTTP {response.status_code}: {response.text[:300]}", response=response
        )
    try:
        return response.json()
    except ValueError as exc:
        raise BadResponse(f"malformed JSON: {response.text[:200]!r}") from exc


def reported_context(url: str, model: str | None, headers: dict) -> int | None:
    """`max_model_len` of `model` as `<root>/v1/models` lists it, or None."""
    if "/v1/" not in url:
        return None
    try:
        response = requests.get(url.split("/v1/")[0] + "/v1/models", headers=headers, timeout=5)
        entries = response.json().get("data", []) if response.ok else []
    except (requests.RequestException, ValueError, AttributeError):
        return None
    for entry in entries:
        if (
            isinstance(entry, dict)
            and entry.get("max_model_len")
            and (len(entries) == 1 or entry.get("id") == model)
        ):
            return int(entry["max_model_len"])
    return None


def field(body, *path):
    """`body[path[0]][path[1]]...`, or BadResponse naming what is missing."""
    value = body
    for key in path:
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            raise BadResponse(f"response has no {_path_name(path)}: {json.dumps(body)[:200]}")
    if not isinstance(value, str):
        raise BadResponse(f"{_path_name(path)} is {value!r}, not text")
    return value


def _path_name(path) -> str:
    return "".join(f"[{key!r}]" for key in path)
