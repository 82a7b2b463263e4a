"""Moved to ``desktop.session``: Qt-free, it lives outside ``desktop.ui``.

Re-exported here for the modules and scripts that import it by its old name.
"""

from __future__ import annotations

from desktop.session import (
    BudgetView,
    Session,
    document_unanswerable,
    image_only,
    unanswerable_reason,
)

__all__ = [
    "BudgetView",
    "Session",
    "document_unanswerable",
    "image_only",
    "unanswerable_reason",
]
