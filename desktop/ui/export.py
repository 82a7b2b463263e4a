"""Moved to ``desktop.answering.export``: Qt-free, it lives outside ``desktop.ui``.

Re-exported here for the modules and scripts that import it by its old name.
"""

from __future__ import annotations

from desktop.answering.export import (
    answer_markdown,
    history_markdown,
)

__all__ = [
    "answer_markdown",
    "history_markdown",
]
