"""What the optimiser's tests share (imported as `optimize_testkit`: the name `conftest` may be another
folder's in a run of the whole suite): a tiny problem (one workload of 48 floats, tight tolerance: a
solution specialised to it fails on the hidden workloads the evaluator draws, N = 32), evaluation options small enough for a 2-core CPU, and a real chat-completions server on loopback that replies
with scripted messages in turn and records every request."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from solbench.bench.options import EvalOptions
from solbench.data.inline import inline_problem
from solbench.data.problem import Problem

REFERENCE = "def run(x, alpha):\n    return x * alpha\n"
OPTIONS = EvalOptions(device="cpu", trials=1, warmup=1, min_iterations=3, budget_s=0.2, timeout_s=60, verify_timed=1, hardware="H200",
                      hidden=2, seed=7)


def make_problem() -> Problem:
    return inline_problem("opt_scale", REFERENCE, {"x": (["N"], "float32"), "alpha": (None, "float32")}, {"y": (["N"], "float32")},
                          scalars={"alpha": 2.5}, axes={"N": {"type": "var"}}, workload_axes=[{"N": 48}],
                          tolerance={"max_atol": 1e-5, "max_rtol": 1e-5, "required_matched_ratio": 1.0})


class ChatServer:
    """An OpenAI-compatible chat-completions endpoint (http.server in a thread): POST
    /v1/chat/completions answers the next scripted reply; GET /v1/models lists one model."""

    def __init__(self, replies: list[str]):
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self._answer(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
                else:
                    self._answer(404, {"error": {"message": "no such route"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != "/v1/chat/completions":
                    self._answer(404, {"error": {"message": "no such route"}})
                    return
                server.requests.append(body)
                if not server.replies:
                    self._answer(400, {"error": {"message": "the script has no more replies"}})
                    return
                content = server.replies.pop(0)
                self._answer(200, {"id": f"chat-{len(server.requests)}", "object": "chat.completion", "model": body.get("model"),
                                   "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def contents(self) -> list[str]:
        """Every message text of every request, in order."""
        return [message["content"] for body in self.requests for message in body["messages"]]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def exploit_source(name: str) -> str:
    """The entry source of a sample of the reward-hacking corpus (tests/exploits)."""
    data = json.loads((Path(__file__).resolve().parents[1] / "exploits" / name).read_text(encoding="utf-8"))
    return data["sources"][0]["content"]
