"""What identifies a checkpoint's results (`evalpack.commands.identity`): a served checkpoint
whose URL was corrected, or whose server moved, resumes; one whose model or sampling changed
is refused. A base_url that is not the backend's endpoint is caught before any request, and a
404 says what the backend expects."""

import json
from http.server import BaseHTTPRequestHandler

import pytest

from evalpack.leaderboard import identity, plan
from evalpack.models.backends import ServedChat
from evalpack.models.served import ServedRequestError
from tests.boards import MATH_DATA, evalpack
from tests.models.conftest import CHAT, SAMPLED, chat_context, fast, repeated
from tests.models.http_stub import LocalServer, Stub, send_json

TASK = "minerva_math_tulu_algebra"


def board_files(tmp_path, model_args: dict, gen_kwargs: dict | None = None) -> list[str]:
    """`evalpack leaderboard run` of one evalpack-chat checkpoint on TASK, 2 docs."""
    ckpt = {"name": "sft", "model": "evalpack-chat", "model_args": model_args}
    if gen_kwargs:
        ckpt["gen_kwargs"] = gen_kwargs
    (tmp_path / "models.yaml").write_text(json.dumps({"checkpoints": [ckpt]}))
    (tmp_path / "suites.yaml").write_text(json.dumps({"one": {"tasks": [{"task": TASK}]}}))
    return [
        "leaderboard",
        "run",
        "--models",
        str(tmp_path / "models.yaml"),
        "--suites",
        str(tmp_path / "suites.yaml"),
        "--suite",
        "one",
        "--output",
        str(tmp_path / "board"),
        "--limit",
        "2",
    ]


@pytest.fixture
def servers():
    """Two stub servers: the same model served on two ports, one after the other."""
    stubs = [Stub().start(), Stub().start()]
    yield stubs
    for stub in stubs:
        stub.stop()


def test_a_moved_server_resumes_and_a_changed_model_is_refused(tmp_path, servers):
    first, second = servers
    args = {"base_url": first.url("/v1/chat/completions"), "model": "m", "num_concurrent": 2}
    ran = evalpack(*board_files(tmp_path, args), EVALPACK_DATA_DIR=str(MATH_DATA))
    assert ran.returncode == 0, ran.stderr
    assert len(first.payloads()) == 2
    # the server restarted elsewhere, with other concurrency and timeout: the same results
    moved = {**args, "base_url": second.url("/v1/chat/completions"), "num_concurrent": 4}
    resumed = evalpack(
        *board_files(tmp_path, {**moved, "timeout": 60}), EVALPACK_DATA_DIR=str(MATH_DATA)
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "0 pairs will run, 1 finished earlier" in resumed.stdout
    assert second.payloads() == []
    recorded = json.loads((tmp_path / "board" / "sft" / "checkpoint.json").read_text())
    assert recorded["model_args"]["base_url"] == second.url("/v1/chat/completions")
    # another model, or other sampling, under the same name: refused, nothing sent
    for changed, gen_kwargs, named in [
        ({**moved, "model": "m2"}, None, "model_args.model: 'm' -> 'm2'"),
        ({**moved, "seed": 7}, None, "model_args.seed: None -> 7"),
        (moved, {"temperature": 0.6}, "gen_kwargs: None -> {'temperature': 0.6}"),
    ]:
        refused = evalpack(
            *board_files(tmp_path, changed, gen_kwargs), EVALPACK_DATA_DIR=str(MATH_DATA)
        )
        assert refused.returncode == 1
        assert f"holds the results of another model or settings ({named})" in refused.stderr
    assert second.payloads() == []


def test_the_split_between_identity_and_transport():
    ckpt = {"name": "a", "model": "hf", "model_args": "pretrained=x,device=cuda:0,batch_size=8"}
    assert identity.identity(ckpt) == {
        "model": "hf",
        "model_args": {"pretrained": "x"},
        "gen_kwargs": None,
        "process_output": None,
    }
    moved = {**ckpt, "model_args": {"pretrained": "x", "device": "cuda:1"}}
    assert identity.changes(ckpt, moved) == []
    assert identity.transport_changes(ckpt, moved) == [
        "batch_size: 8 -> None",
        "device: 'cuda:0' -> 'cuda:1'",
    ]


def test_a_base_url_without_the_endpoint_path_cannot_run(servers, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(MATH_DATA))
    stub = servers[0]
    base = stub.url("/v1")
    ckpt = {"name": "sft", "model": "evalpack-chat", "model_args": {"base_url": base}}
    board = plan.make_plan([ckpt], [{"task": TASK, "chat": True}], tmp_path, [])
    assert board["pairs"]["sft"][TASK] == (
        f"base_url {base} is not an endpoint: evalpack-chat posts to base_url as given, the "
        f"full endpoint ending in /chat/completions: base_url={base}/chat/completions?"
    )
    assert stub.payloads() == []


class NotFound(BaseHTTPRequestHandler):
    """A server with no such endpoint (vLLM asked at `/v1`)."""

    def do_POST(self) -> None:
        send_json(self, 404, b'{"detail": "Not Found"}')

    def log_message(self, *args) -> None:
        pass


def test_a_404_says_what_the_backend_expects():
    server = LocalServer(NotFound).start()
    try:
        lm = ServedChat(base_url=server.url("/api/chat/completions"), model="m", **fast())
        with pytest.raises(ServedRequestError) as raised:
            lm.generate_until(repeated(chat_context(lm, CHAT), SAMPLED))
    finally:
        server.stop()
    assert (
        "[HTTP 404: evalpack-chat posts to base_url as given, the full endpoint ending in "
        f"/chat/completions: base_url={server.url('/v1/chat/completions')}?"
        " Correct base_url and rerun: a changed base_url resumes]"
    ) in str(raised.value)
