"""What the fake server is: flavors, names and limits, and the records it keeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Flavor = Literal["new", "old", "openai", "vllm"]
FLAVORS: tuple[Flavor, ...] = ("new", "old", "openai", "vllm")

DEFAULT_MODEL = "Qwen/Qwen3.5-35B-A3B"
DEFAULT_CONTEXT_LENGTH = 262_144  # Qwen3.5's config.json value, used when --context-length is unset
TOKENIZER_MODEL_MAX_LENGTH = 262_144  # what /v1/tokenize reports, whatever the context length
DEFAULT_MAX_TOTAL_NUM_TOKENS = 1_000_000
VERSIONS: dict[Flavor, str] = {"new": "0.5.23", "old": "0.5.9", "openai": "0.0.0", "vllm": "0.26.0"}
# vLLM's defaults as observed (sglang-facts §9): the attention block of a small Qwen3.5-
# architecture model and the prefill budget per step (chunks are it cut to whole blocks).
VLLM_BLOCK_SIZE = 80
VLLM_MAX_NUM_BATCHED_TOKENS = 8192
ARCHITECTURE = "Qwen3_5MoeForConditionalGeneration"

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
IM_END_ID = 248046
THINK_CLOSE = "\n</think>\n\n"

FILLER_WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit")
CONNECTION_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)

# What a strict OpenAI-compatible server (``--strict``, like ``transformers serve``) accepts in
# a chat request: OpenAI's own fields. Anything else (``rid``, ``separate_reasoning``,
# ``chat_template_kwargs``) is answered with HTTP 422, as pydantic's ``extra="forbid"`` does.
OPENAI_CHAT_FIELDS = frozenset(
    [
        "model",
        "messages",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "n",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "user",
        "seed",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "reasoning_effort",
        "metadata",
        "store",
        "service_tier",
        "modalities",
        "audio",
        "prediction",
    ]
)


# --------------------------------------------------------------------------------------------
# Tokenizer: Qwen3.5's vocabulary through tiktoken, built once.


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: method, path (with query), headers and parsed JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Metrics:
    """Counters and gauges behind ``/metrics``."""

    prompt_tokens: int = 0
    generation_tokens: int = 0
    cached_tokens: int = 0
    num_requests: int = 0
    num_aborted: int = 0
    running: int = 0
    peak_running: int = 0
    """Most chat requests ever generating at once (batch concurrency tests)."""
    running_tokens: int = 0
    gen_throughput: float = 0.0
    slow_prefills: int = 0
    """Requests in a paced prefill now (``prefill_tokens_per_s``): tests wait on it."""


class ClientGone(Exception):
    """The client closed the connection."""


# --------------------------------------------------------------------------------------------
# The server.
# --------------------------------------------------------------------------------------------
