"""What an inference endpoint is, each fact read in one place: URLs, models, errors, engine.

Shared by the app's core and the server manager (neither imports the other):

- URL normalisation: a base URL never ends in ``/v1``; the OpenAI routes live under it.
- ``/v1/models`` parsing (:func:`parse_models`): ids, ``max_model_len``, ``owned_by``.
- HTTP status → failure (:func:`classify`), with the message found in any error body shape
  (:func:`error_message`) and the numbers of an engine's own "too long" refusal.
- Engine recognition (:func:`recognise`): ``owned_by`` first (vLLM says ``"vllm"``), then
  SGLang's ``/server_info`` or vLLM's ``GET /version``, else a plain OpenAI server; with what
  each engine offers (token counting, abort, raw-prompt route, cache granularity).
- Server state (:class:`Phase`) and one look at an endpoint (:func:`look`).
"""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from longdoc_net import auth_headers, opener_for
from longdoc_net.redirects import RedirectRefused

TIMEOUT_S = 3.0


# --- URLs ---------------------------------------------------------------------------------


def api_root(url: str) -> str:
    """The endpoint's base URL: no trailing slash and no ``/v1``."""
    url = url.strip().rstrip("/")
    return url.removesuffix("/v1").rstrip("/")


def v1_url(url: str) -> str:
    """The OpenAI-compatible base, ``<root>/v1``."""
    return f"{api_root(url)}/v1"


def models_url(url: str) -> str:
    """The model list of an endpoint."""
    return f"{v1_url(url)}/models"


# --- GET with short timeouts (status 0 = nothing answered) ------------------------------


@dataclass(frozen=True)
class Reply:
    """Status code and body of one request; status 0 means nothing answered."""

    status: int
    body: bytes = b""
    location: str = ""  # where a redirect (3xx, never followed) pointed

    def json(self) -> Any:
        """The body as JSON, or None."""
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            return None

    @property
    def text(self) -> str:
        """The body as text."""
        return self.body.decode("utf-8", "replace")


def get(url: str, api_key: str = "", timeout: float = TIMEOUT_S) -> Reply:
    """GET with a Bearer key and the proxy rule; never raises for HTTP or network errors."""
    request = urllib.request.Request(url, headers=auth_headers(api_key))
    try:
        with opener_for(url).open(request, timeout=timeout) as response:
            return Reply(response.status, response.read())
    except RedirectRefused as exc:
        return Reply(exc.status, b"", exc.location)
    except urllib.error.HTTPError as exc:
        with exc:
            return Reply(exc.code, exc.read() if exc.fp is not None else b"")
    except TimeoutError:
        # A long prefill can starve the HTTP loop: that is "busy", reported as 408.
        return Reply(408)
    # HTTPException: a server killed mid-answer leaves a short body (IncompleteRead).
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError):
        return Reply(0)


Getter = Callable[[str], Reply]


# --- /v1/models ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelCard:
    """One entry of ``/v1/models``; ``max_model_len`` None when the server does not say."""

    id: str
    max_model_len: int | None = None
    owned_by: str = ""
    root: str = ""


def parse_models(body: Any) -> list[ModelCard] | None:
    """The cards of a ``/v1/models`` body; None when it is not a model list at all."""
    cards = body.get("data") if isinstance(body, dict) else None
    if not isinstance(cards, list):
        return None
    found: list[ModelCard] = []
    for card in cards:
        if not isinstance(card, dict) or card.get("id") is None:
            continue
        length = card.get("max_model_len")
        if length is None:
            length = card.get("context_length")
        # Kept as the server said it, zero and below included: the client refuses such a
        # server with its numbers (issue 20) rather than taking it for one that is silent.
        number = (
            int(length)
            if isinstance(length, int | float) and not isinstance(length, bool)
            and abs(length) < 2**63
            else None
        )  # fmt: skip
        found.append(
            ModelCard(
                str(card["id"]),
                number,
                str(card.get("owned_by") or ""),
                str(card.get("root") or ""),
            )
        )
    return found


def pick_model(cards: list[ModelCard], wanted: str) -> ModelCard | None:
    """``wanted`` among the cards (the first card when nothing is wanted)."""
    if not wanted:
        return cards[0] if cards else None
    return next((c for c in cards if c.id == wanted), None)


def list_models(
    url: str, api_key: str, timeout: float = TIMEOUT_S
) -> tuple[Reply, list[ModelCard]]:
    """``GET /v1/models``: the reply and its cards (empty when it lists none or failed)."""
    reply = get(models_url(url), api_key, timeout)
    cards = parse_models(reply.json()) if reply.status == 200 else None
    return reply, cards or []


# --- errors -------------------------------------------------------------------------------


class Failure(StrEnum):
    """What an HTTP error status means for a client."""

    UNREACHABLE = "unreachable"
    UNAUTHORIZED = "unauthorized"
    LOADING = "loading"
    NOT_FOUND = "not_found"
    REDIRECT = "redirect"
    TOO_LONG = "too_long"
    SERVER = "server"


def error_message(body: Any) -> str:
    """The message inside any of the error body shapes servers send."""
    if isinstance(body, dict):
        for key in ("error", "detail", "message"):
            inner = body.get(key)
            if isinstance(inner, dict):
                return error_message(inner)
            if isinstance(inner, str) and inner:
                return inner
            if isinstance(inner, list) and inner:  # FastAPI validation errors
                return "; ".join(
                    str(i.get("msg", i)) if isinstance(i, dict) else str(i) for i in inner
                )
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            return error_message(json.loads(body))
        except ValueError:
            return body.strip()
    return ""


def is_context_error(message: str) -> bool:
    """True for SGLang's and vLLM's "the prompt does not fit" messages."""
    text = message.lower()
    return (
        "context length" in text
        or "maximum context" in text
        or "exceeds the maximum allowed length" in text
    )


def classify(status: int, message: str = "") -> Failure:
    """The failure an HTTP status (and its message) stands for."""
    if status == 0:
        return Failure.UNREACHABLE
    if status in (401, 403):
        return Failure.UNAUTHORIZED
    if status == 503:
        return Failure.LOADING
    if 300 <= status < 400:
        return Failure.REDIRECT
    if status in (404, 405):
        return Failure.NOT_FOUND
    if is_context_error(message):
        return Failure.TOO_LONG
    return Failure.SERVER


_CONTEXT_NUMBERS = (
    # SGLang: "The input (N tokens) is longer than the model's context length (C tokens)."
    re.compile(r"context length \((?P<context>\d+) tokens\)"),
    # SGLang: "... maximum context length of C tokens ..."; vLLM: "maximum context length
    # is C tokens. However, ... your prompt contains at least N input tokens ..."
    re.compile(r"maximum context length (?:of |is )(?P<context>\d+) tokens"),
    # SGLang's scheduler: "... exceeds the maximum allowed length (M tokens)."
    re.compile(r"maximum allowed length \((?P<context>\d+) tokens\)"),
)


def refused_context(message: str) -> int | None:
    """The context (or input) limit an engine's "too long" refusal names, if it does.

    The prompt count in vLLM's words ("at least N") is a lower bound, not the count, so
    only the limit is read; the prompt's size is the client's own exact count.
    """
    for pattern in _CONTEXT_NUMBERS:
        found = pattern.search(message)
        if found is not None:
            return int(found.group("context"))
    return None


# --- engines ------------------------------------------------------------------------------


class Engine(StrEnum):
    """Which engine serves an endpoint (what it offers beyond OpenAI's API)."""

    SGLANG = "sglang"
    VLLM = "vllm"
    OPENAI = "openai"  # a plain OpenAI-compatible server: nothing beyond the API


# vLLM's attention block for Qwen3.5 is large (528 tokens for the 4B model, 2048 at TP2 for
# 35B-A3B, 80 for a small test model); its /metrics names it. When it does not say, this.
DEFAULT_VLLM_BLOCK = 2048
# SGLang's chunked-prefill size on a ≥160 GB GPU (MI300, sglang-facts §3).
DEFAULT_SGLANG_CHUNK = 16384


@dataclass(frozen=True)
class EngineFacts:
    """An engine recognised once per endpoint, and what it offers.

    ``granularity`` is where a hybrid (Mamba) model's cache can resume, at best: vLLM's
    block size, SGLang's chunk size; a warm-up that already finds the prefix cached finds
    it to within that many tokens.
    """

    engine: Engine
    version: str = ""
    granularity: int = 1
    max_req_input_len: int | None = None
    prefix_caching: bool = True
    # Known by its own routes: where the server counts chat messages, and the raw-prompt
    # routes a warm-up may use ("generate" = SGLang's /generate, "completions" =
    # /v1/completions), best first.
    tokenize_path: str | None = None
    raw_prompt_routes: tuple[str, ...] = ()
    info: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def keeps_hybrid_states(self) -> bool:
        """The engine keeps Qwen3.5's linear-attention states at checkpoints only, so the
        exact prefix must be warmed once for later questions to reuse all of it."""
        return self.engine in (Engine.SGLANG, Engine.VLLM) and self.prefix_caching

    @property
    def aborts_by_rid(self) -> bool:
        """SGLang takes a request id and ``/abort_request``; vLLM aborts on disconnect."""
        return self.engine == Engine.SGLANG


def sglang_facts(info: dict[str, Any]) -> EngineFacts:
    """SGLang's offer, from its ``/server_info``."""
    chunk = info.get("chunked_prefill_size")
    max_input = info.get("max_req_input_len")
    return EngineFacts(
        Engine.SGLANG,
        version=str(info.get("version") or ""),
        granularity=chunk if isinstance(chunk, int) and chunk > 0 else DEFAULT_SGLANG_CHUNK,
        max_req_input_len=max_input if isinstance(max_input, int) else None,
        prefix_caching=not info.get("disable_radix_cache"),
        tokenize_path="/v1/tokenize",
        raw_prompt_routes=("generate", "completions"),
        info=info,
    )


_CACHE_CONFIG = re.compile(r"^vllm:cache_config_info\{(?P<labels>[^}]*)\}", re.MULTILINE)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def vllm_facts(version: str, metrics_text: str) -> EngineFacts:
    """vLLM's offer; block size and prefix caching from ``vllm:cache_config_info``."""
    block, caching = DEFAULT_VLLM_BLOCK, True
    found = _CACHE_CONFIG.search(metrics_text)
    if found is not None:
        labels = dict(_LABEL.findall(found.group("labels")))
        size = labels.get("block_size", "")
        if size.isdigit() and int(size) > 0:
            block = int(size)
        caching = labels.get("enable_prefix_caching", "True").lower() != "false"
    return EngineFacts(
        Engine.VLLM,
        version=version,
        granularity=block,
        prefix_caching=caching,
        tokenize_path="/tokenize",
        raw_prompt_routes=("completions",),
    )


def is_sglang_info(info: Any) -> bool:
    """``/server_info`` with SGLang's scheduler fields."""
    return isinstance(info, dict) and (
        "max_req_input_len" in info or "max_total_num_tokens" in info
    )


def recognise(
    url: str, api_key: str, cards: list[ModelCard], fetch: Getter | None = None
) -> EngineFacts:
    """The engine behind ``url``, asking only what that engine has.

    ``cards`` is the endpoint's ``/v1/models`` (already fetched by the caller); ``fetch``
    GETs a URL (tests and callers with their own HTTP client pass one).
    """
    root = api_root(url)
    fetch = fetch or (lambda target: get(target, api_key))
    owners = {card.owned_by for card in cards}
    if "vllm" in owners:
        version = fetch(f"{root}/version").json()
        return vllm_facts(
            str(version.get("version", "")) if isinstance(version, dict) else "",
            fetch(f"{root}/metrics").text,
        )
    info = fetch(f"{root}/server_info")
    data = info.json() if info.status == 200 else None
    if isinstance(data, dict) and is_sglang_info(data):
        return sglang_facts(data)
    if "sglang" not in owners:
        version = fetch(f"{root}/version")
        found = version.json() if version.status == 200 else None
        if isinstance(found, dict) and isinstance(found.get("version"), str):
            return vllm_facts(found["version"], fetch(f"{root}/metrics").text)
    # SGLang behind a router (/server_info 404) still takes SGLang's fields and routes.
    if "sglang" in owners:
        return EngineFacts(
            Engine.SGLANG,
            granularity=DEFAULT_SGLANG_CHUNK,
            tokenize_path="/v1/tokenize",
            raw_prompt_routes=("generate", "completions"),
        )
    return EngineFacts(Engine.OPENAI, raw_prompt_routes=("completions",))


def known_facts(engine: str) -> EngineFacts | None:
    """What a managed profile's engine offers before asking it anything (None: unknown)."""
    if engine == Engine.SGLANG:
        return EngineFacts(
            Engine.SGLANG,
            granularity=DEFAULT_SGLANG_CHUNK,
            tokenize_path="/v1/tokenize",
            raw_prompt_routes=("generate", "completions"),
        )
    if engine == Engine.VLLM:
        return vllm_facts("", "")
    return None


# --- metrics ------------------------------------------------------------------------------

# Prometheus exposition: name{labels} value  (labels optional; timestamps ignored).
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")

# What `status --json` and the server panel report under "metrics": SGLang's and vLLM's
# names for the same things, summed over ranks (counts) or maxed (ratios).
_GAUGES: dict[str, tuple[str, str]] = {
    "sglang:num_running_reqs": ("running_requests", "sum"),
    "sglang:num_queue_reqs": ("queued_requests", "sum"),
    "sglang:token_usage": ("token_usage", "max"),
    "sglang:cache_hit_rate": ("cache_hit_rate", "max"),
    "sglang:gen_throughput": ("gen_throughput", "sum"),
    "sglang:max_total_num_tokens": ("max_total_num_tokens", "max"),
    "sglang:context_len": ("context_len", "max"),
    "sglang:prompt_tokens_total": ("prompt_tokens_total", "sum"),
    "sglang:cached_tokens_total": ("cached_tokens_total", "sum"),
    "vllm:num_requests_running": ("running_requests", "sum"),
    "vllm:num_requests_waiting": ("queued_requests", "sum"),
    "vllm:gpu_cache_usage_perc": ("token_usage", "max"),
    "vllm:kv_cache_usage_perc": ("token_usage", "max"),
    "vllm:prefix_cache_queries_total": ("prompt_tokens_total", "sum"),
    "vllm:prefix_cache_hits_total": ("cached_tokens_total", "sum"),
}


def parse_metrics(text: str) -> dict[str, float]:
    """The few figures Longdoc shows; ``cache_hit_rate`` from the hit counters when the
    engine has no gauge for it (vLLM)."""
    result: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None or m.group(1) not in _GAUGES:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        if value != value:  # NaN: a gauge not set yet
            continue
        key, how = _GAUGES[m.group(1)]
        if key not in result:
            result[key] = value
        elif how == "sum":
            result[key] += value
        else:
            result[key] = max(result[key], value)
    # The counters only make the hit rate where the engine has no gauge for it (vLLM).
    queries = result.pop("prompt_tokens_total", 0.0)
    hits = result.pop("cached_tokens_total", 0.0)
    if "cache_hit_rate" not in result and queries > 0:
        result["cache_hit_rate"] = hits / queries
    return result


def metrics(url: str, timeout: float = TIMEOUT_S) -> dict[str, float]:
    """Parsed ``/metrics``; empty when disabled or unreachable."""
    reply = get(f"{api_root(url)}/metrics", timeout=timeout)
    return parse_metrics(reply.text) if reply.status == 200 else {}


# --- state --------------------------------------------------------------------------------


class Phase(StrEnum):
    """A server's state, one word: what ``server status`` and the panel say."""

    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    BUSY = "busy"
    STOPPING = "stopping"
    FAILED = "failed"
    RUNTIME_DOWN = "runtime_down"  # the container runtime's daemon is down or restarting


Health = str  # "ok" | "busy" | "unauthorized" | "unreachable"


def health(url: str, timeout: float = TIMEOUT_S) -> Health:
    """``/health``: 200 ok; 503 or a timeout is busy (sglang#22511), not dead."""
    reply = get(f"{api_root(url)}/health", timeout=timeout)
    failure = classify(reply.status) if reply.status != 200 else None
    if failure is None:
        return "ok"
    if failure in (Failure.UNREACHABLE, Failure.UNAUTHORIZED):
        return failure.value
    return "busy"


@dataclass
class Look:
    """One look at an endpoint Longdoc does not manage."""

    url: str
    phase: Phase = Phase.STOPPED
    stage: str | None = None
    model: str | None = None
    context_length: int | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None


def look(url: str, api_key: str, model: str = "") -> Look:
    """How an endpoint is doing (blocking: HTTP with short timeouts): stopped when nothing
    answers, failed when it refuses the key or lacks the model, else ready, busy or
    starting (503 while loading the model; a long prefill can also starve ``/health``)."""
    root = api_root(url)
    found = Look(root, model=model or None)
    state = health(root)
    if state == "unreachable":
        found.error = f"Nothing answers at {root}."
        return found
    if state == "unauthorized":
        found.phase, found.error = Phase.FAILED, f"The server at {root} refused the API key."
        return found
    found.metrics = metrics(root)
    working = found.metrics.get("running_requests", 0) + found.metrics.get("queued_requests", 0)
    if state == "busy":
        found.phase, found.stage = (Phase.BUSY, "ready") if working else (Phase.STARTING, "loading")
        return found
    reply, cards = list_models(root, api_key)
    card = pick_model(cards, model)
    if card is None:
        wanted = f"model {model!r}" if model else "any model"
        refused = classify(reply.status) == Failure.UNAUTHORIZED
        found.phase = Phase.FAILED
        found.error = (
            f"The server at {root} refused the API key."
            if refused
            else f"The server at {root} does not list {wanted}."
        )
        return found
    found.model, found.context_length = card.id, card.max_model_len
    if card.max_model_len and "context_len" not in found.metrics:
        found.metrics["context_len"] = float(card.max_model_len)
    found.phase, found.stage = (Phase.BUSY if working else Phase.READY), "ready"
    return found
