"""What the fake OpenAI server (tests/support/fake_openai.py) records and replies: recorded requests,
scripted faults, the default replies and the deterministic embeddings. Import these from
``tests.support.fake_openai``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

ReplyFunction = Callable[[dict[str, Any]], str]


RequestMatcher = Callable[["RecordedRequest"], bool]


DEFAULT_MODELS = ("fake-chat", "fake-vision", "fake-embedding")


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # Authorization included, so tests can check the key was sent
    body: Any  # parsed JSON, or None
    time: float = field(default_factory=time.monotonic)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def is_chat(self) -> bool:
        return self.path.endswith("/chat/completions")

    @property
    def is_vision(self) -> bool:
        return bool(images_in(self))

    def text(self) -> str:
        """Every text part of every message, joined: what the model was told."""
        return "\n".join(_message_texts(self.messages))

    def header(self, name: str) -> Optional[str]:
        lowered = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == lowered), None)


@dataclass
class Fault:
    """A scripted misbehaviour for the next matching request(s)."""

    status: int = 0  # 0: no error status (a hang only)
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    hang_seconds: float = 0.0
    after_chunks: Optional[int] = None  # streaming: send this many chunks, then hang
    chunk_delay: float = 0.0  # seconds between streamed chunks, or between pieces of a plain body
    cut_after_chunks: Optional[int] = None  # streaming: this many text chunks, then close (no finish, no [DONE])
    times: int = 1
    path: Optional[str] = None  # only requests whose path contains this
    match: Optional[RequestMatcher] = None

    def applies_to(self, request: RecordedRequest) -> bool:
        if self.path and self.path not in request.path:
            return False
        return self.match(request) if self.match else True


def images_in(request: RecordedRequest) -> list[tuple[str, bytes]]:
    """The (mime, bytes) of every data-URL image in a chat request."""
    images = []
    for message in request.messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if isinstance(part, dict) and part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                decoded = decode_data_url(url)
                if decoded:
                    images.append(decoded)
    return images


def decode_data_url(url: str) -> Optional[tuple[str, bytes]]:
    match = re.match(r"data:([^;,]+);base64,(.*)", url, re.S)
    if not match:
        return None
    try:
        return match.group(1), base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return None


def _message_texts(messages: list[dict[str, Any]]) -> list[str]:
    texts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return texts


def default_reply(body: dict[str, Any]) -> str:
    """A useful echo: cites numbered sources, describes images, keeps LaTeX."""
    messages = body.get("messages", [])
    request = RecordedRequest("POST", "/v1/chat/completions", {}, body)
    images = images_in(request)
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    user_text = "\n".join(_message_texts([last_user]))
    if images:
        mime, data = images[0]
        return (
            f"The figure ({mime}, {len(data)} bytes) shows a curve that rises with $x^2$; the caption gives $$E=mc^2$$."
        )
    if "[1]" in user_text:
        cited = "[1][2]" if "[2]" in user_text else "[1]"
        return (
            f"According to the sources, the answer is stated in {cited}. "
            f"The key formula is $$E=mc^2$$ where $x^2$ is the square of $x$ [1]."
        )
    return "Echo: " + " ".join(user_text.split())[:200]


def translating_reply(translations: dict[str, str]) -> ReplyFunction:
    """Replies to DocLens's question-translation requests with a fixed translation (the question itself
    when it has none), and like ``default_reply`` to everything else."""

    def reply(body: dict[str, Any]) -> str:
        messages = body.get("messages", [])
        system = messages[0].get("content", "") if messages else ""
        if isinstance(system, str) and system.startswith("Translate the user's question"):
            question = "\n".join(_message_texts([messages[-1]])).strip()
            return translations.get(question, question)
        return default_reply(body)

    return reply


def embedding_for(text: str, dim: int) -> list[float]:
    """A deterministic unit vector from a hash of the text."""
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    values = values[:dim]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]
