"""The JSON shapes scripts rely on, written once for every test that checks them (the
README documents them): a unit test checks the order the code builds, an end-to-end test
what the real program prints."""

from __future__ import annotations

# ``longdoc ask --json`` for one document, in order (optional fields such as
# ``truncated`` are left out when absent).
ASK_JSON_KEYS = (
    "document",
    "question",
    "answer",
    "reasoning",
    "from_cache",
    "model",
    "finish_reason",
    "usage",
    "timings",
    "citations",
    "thread_id",
)

# ``longdoc server status --json``, in order.
SERVER_STATUS_KEYS = (
    "profile",
    "state",
    "stage",
    "endpoint",
    "model",
    "container",
    "restarts",
    "gpus",
    "metrics",
    "error",
    "outcome",
)
