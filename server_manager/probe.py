"""HTTP checks against the server (health, models, metrics) with urllib and short timeouts.

The facts themselves (URLs, the model list, metric names, what a status means) are read in
``longdoc_net.endpoint``; this names what the manager and the supervisor ask.
"""

from __future__ import annotations

from longdoc_net import is_loopback as is_loopback  # re-exported: the manager's callers use it
from longdoc_net.endpoint import (
    TIMEOUT_S,
    Health,
    Reply,
    get,
    health,
    list_models,
    metrics,
    parse_metrics,
    pick_model,
)

__all__ = [
    "TIMEOUT_S",
    "Health",
    "Reply",
    "get",
    "health",
    "is_loopback",
    "lists_model",
    "metrics",
    "parse_metrics",
]


def lists_model(base_url: str, api_key: str, model: str, timeout: float = TIMEOUT_S) -> bool:
    """True when the model list answers and names ``model`` (any model when it is empty)."""
    _, cards = list_models(base_url, api_key, timeout)
    return pick_model(cards, model) is not None


def answers(base_url: str, api_key: str, timeout: float = TIMEOUT_S) -> bool:
    """Liveness: any answer to the model list, even a timeout (408), means it is alive."""
    reply, _ = list_models(base_url, api_key, timeout)
    return reply.status != 0
