"""A proposer behind any OpenAI-compatible chat-completions endpoint (a hosted API, or a local vLLM,
llama.cpp or Ollama server): POST {base}/chat/completions with the conversation, the reply's solution
parsed from its message. Standard library HTTP (urllib); transient failures (timeouts, 429, 5xx) are
tried again a few times, anything else stops the loop with one line (ProposerError)."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any, Sequence

from solbench.data.definition import Definition
from solbench.optimize.conversation import chat_messages
from solbench.optimize.messages import ProblemBrief, Proposal, Turn
from solbench.optimize.proposers import ProposerError
from solbench.optimize.replies import solution_from_reply

TRIES = 3
BACKOFF_S = 1.0  # doubled after each failed try
TRANSIENT = {408, 409, 425, 429, 500, 502, 503, 504}
BASE_URL_ENV = ("SOLBENCH_PROPOSER_URL", "OPENAI_BASE_URL")
MODEL_ENV = ("SOLBENCH_MODEL", "OPENAI_MODEL")
DEFAULT_KEY_ENV = "OPENAI_API_KEY"


def first_env(names: Sequence[str]) -> str | None:
    return next((os.environ[name] for name in names if os.environ.get(name)), None)


class ChatProposer:
    """Proposals from a chat-completions endpoint. `model` None: the first model the server lists."""

    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None, timeout_s: float = 600.0,
                 temperature: float | None = None):
        if not base_url.startswith(("http://", "https://")):
            raise ProposerError(f"--proposer: expected builtin or an http(s):// URL of a chat-completions endpoint, got {base_url!r}")
        self.base_url = base_url.rstrip("/").removesuffix("/chat/completions")
        self.model, self.api_key, self.timeout_s, self.temperature = model, api_key, timeout_s, temperature

    @property
    def label(self) -> str:
        return f"{self.base_url} ({self.model or 'first listed model'})"

    def propose(self, brief: ProblemBrief, definition: Definition, history: Sequence[Turn], name: str) -> Proposal:
        body: dict[str, Any] = {"model": self._model(), "messages": chat_messages(brief, history)}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        answer = self._request("POST", "/chat/completions", body)
        reply = _message_text(answer, self.base_url)
        if not reply.strip():
            return Proposal(reply=reply, reason="the reply was empty")
        solution, reason = solution_from_reply(reply, definition, name)
        return Proposal(solution=solution, reply=reply, reason=reason, candidate="chat")

    def _model(self) -> str:
        if self.model is None:
            listed = self._request("GET", "/models", None)
            models = listed.get("data") if isinstance(listed, dict) else None
            if not models or not isinstance(models[0], dict) or not models[0].get("id"):
                raise ProposerError(f"{self.base_url}/models lists no model: name one with --model or ${MODEL_ENV[0]}")
            self.model = str(models[0]["id"])
        return self.model

    def _request(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        url = self.base_url + path
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode() if body is not None else None
        wait, last = BACKOFF_S, ""
        for attempt in range(TRIES):
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    raw = response.read()
                break
            except urllib.error.HTTPError as exc:
                detail = _error_detail(exc.read().decode("utf-8", "replace"))
                last = f"{url} answered HTTP {exc.code}" + (f": {detail}" if detail else "")
                if exc.code not in TRANSIENT:
                    raise ProposerError(last) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                last = f"cannot reach {url}: {reason}"
                if isinstance(reason, ConnectionRefusedError):
                    raise ProposerError(last) from None
            if attempt + 1 < TRIES:
                time.sleep(wait)
                wait *= 2
        else:
            raise ProposerError(f"{last} (tried {TRIES} times)")
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            raise ProposerError(f"{url} answered with something that is not JSON: {_first_line(raw.decode('utf-8', 'replace'))}") from None


def _message_text(answer: Any, where: str) -> str:
    try:
        content = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ProposerError(f"{where}/chat/completions answered without choices[0].message.content: not a chat-completions reply") from None
    if isinstance(content, list):  # content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:300]


def _error_detail(body: str) -> str:
    """An error reply's message ({"error": {"message": ...}} as OpenAI-compatible servers send it), else its first line."""
    try:
        data = json.loads(body)
        message = data["error"]["message"] if isinstance(data.get("error"), dict) else data.get("error") or data.get("detail")
        if isinstance(message, str) and message.strip():
            return _first_line(message)
    except (json.JSONDecodeError, AttributeError, TypeError, KeyError):
        pass
    return _first_line(body)
