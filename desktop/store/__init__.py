"""SQLite persistence for documents and answers (no Qt)."""

from desktop.store.db import AnswerKey, DocumentSummary, Store, StoredAnswer

__all__ = ["AnswerKey", "DocumentSummary", "Store", "StoredAnswer"]
