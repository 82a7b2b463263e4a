"""HTTP checks against the server (health, models, metrics) with urllib and short timeouts."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Literal

from longdoc_net import auth_headers, opener_for
from longdoc_net import is_loopback as is_loopback  # re-exported: the manager's callers use it

TIMEOUT_S = 3.0

Health = Literal["ok", "busy", "unauthorized", "unreachable"]

# Prometheus exposition: name{labels} value  (labels optional; timestamps ignored).
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")

# What `status --json` reports under "metrics", from SGLang's gauge names (and vLLM's).
_GAUGES: dict[str, tuple[str, str]] = {
    "sglang:num_running_reqs": ("running_requests", "sum"),
    "sglang:num_queue_reqs": ("queued_requests", "sum"),
    "sglang:token_usage": ("token_usage", "max"),
    "sglang:cache_hit_rate": ("cache_hit_rate", "max"),
    "sglang:gen_throughput": ("gen_throughput", "sum"),
    "sglang:max_total_num_tokens": ("max_total_num_tokens", "max"),
    "sglang:context_len": ("context_len", "max"),
    "vllm:num_requests_running": ("running_requests", "sum"),
    "vllm:num_requests_waiting": ("queued_requests", "sum"),
    "vllm:gpu_cache_usage_perc": ("token_usage", "max"),
    "vllm:kv_cache_usage_perc": ("token_usage", "max"),
}


def parse_metrics(text: str) -> dict[str, float]:
    """The few gauges the GUI shows, summed over ranks (counts) or maxed (ratios)."""
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
    return result


@dataclass(frozen=True)
class Reply:
    """Status code and body of one request; status 0 means nothing answered."""

    status: int
    body: bytes = b""

    def json(self) -> Any:
        """The body as JSON, or None."""
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            return None


def get(url: str, api_key: str = "", timeout: float = TIMEOUT_S) -> Reply:
    """GET with a Bearer key; never raises for HTTP or network errors."""
    request = urllib.request.Request(url, headers=auth_headers(api_key))
    try:
        with opener_for(url).open(request, timeout=timeout) as response:
            return Reply(response.status, response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return Reply(exc.code, exc.read() if exc.fp is not None else b"")
    except TimeoutError:
        # A long prefill can starve the HTTP loop: that is "busy", reported as 408.
        return Reply(408)
    except (urllib.error.URLError, OSError):
        return Reply(0)


def health(base_url: str, timeout: float = TIMEOUT_S) -> Health:
    """``/health``: 200 ok; 503 or a timeout is busy (sglang#22511), not dead."""
    reply = get(f"{base_url}/health", timeout=timeout)
    if reply.status == 200:
        return "ok"
    if reply.status == 0:
        return "unreachable"
    if reply.status in (401, 403):
        return "unauthorized"
    return "busy"


def lists_model(base_url: str, api_key: str, model: str, timeout: float = TIMEOUT_S) -> bool:
    """True when ``/v1/models`` answers and lists ``model`` (any model when it is empty)."""
    reply = get(f"{base_url}/v1/models", api_key, timeout)
    data = reply.json() if reply.status == 200 else None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return False
    ids = [str(card.get("id")) for card in data["data"] if isinstance(card, dict)]
    return bool(ids) and (not model or model in ids)


def metrics(base_url: str, timeout: float = TIMEOUT_S) -> dict[str, float]:
    """Parsed ``/metrics``; empty when disabled or unreachable."""
    reply = get(f"{base_url}/metrics", timeout=timeout)
    if reply.status != 200:
        return {}
    return parse_metrics(reply.body.decode("utf-8", "replace"))
