"""The endpoint a served backend posts to: these backends take `base_url` as the full endpoint
(lm-eval's convention), so `http://host:8000/v1` alone answers 404. A URL whose path does not end
in what the backend posts to is caught before any request, in one line with the corrected URL;
a 404 on a request gets the same line."""

from __future__ import annotations

from urllib.parse import urlparse

# backend -> the path its base_url must end in
ENDPOINTS = {
    "evalpack-chat": "/chat/completions",
    "local-chat-completions": "/chat/completions",
    "evalpack-completions": "/completions",
    "local-completions": "/completions",
    "evalpack-sglang": "/generate",
}


def suggested(base_url: str, path: str) -> str:
    """`base_url` with `path` added where a server root or `/v1` was given; where it already
    ends in `path` (and was answered 404), the path vLLM and SGLang serve it at."""
    base = base_url.rstrip("/")
    if urlparse(base).path.endswith(path):
        parts = urlparse(base)
        base = f"{parts.scheme}://{parts.netloc}"
    if path == "/generate":
        return base.removesuffix("/v1") + path
    return base.removesuffix("/v1") + "/v1" + path


def expectation(backend: str, base_url: str) -> str:
    """What `backend` expects of its base_url, with the URL it probably meant."""
    path = ENDPOINTS[backend]
    return (
        f"{backend} posts to base_url as given, the full endpoint ending in {path}: "
        f"base_url={suggested(base_url, path)}?"
    )


def url_problem(backend: str, base_url: str | None) -> str | None:
    """Why `base_url` cannot be `backend`'s endpoint, or None (also for backends that take any
    URL, such as `answer-server`)."""
    if backend not in ENDPOINTS or not base_url:
        return None
    if urlparse(str(base_url)).path.rstrip("/").endswith(ENDPOINTS[backend]):
        return None
    return f"base_url {base_url} is not an endpoint: {expectation(backend, str(base_url))}"


def not_found_hint(backend: str, base_url: str, exc: Exception) -> str:
    """For a request answered 404 by a backend with a known endpoint: what it expects."""
    response = getattr(exc, "response", None)
    if response is None or response.status_code != 404 or backend not in ENDPOINTS:
        return ""
    return (
        f" [HTTP 404: {expectation(backend, base_url)} Correct base_url and rerun: a changed "
        "base_url resumes]"
    )
