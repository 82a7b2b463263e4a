"""The Qt-free document layer: PDF, text and Markdown files into pages with token counts."""

from desktop.documents.ingest import extract, sha256_file
from desktop.documents.model import Document, OutlineEntry, Page


def __getattr__(name: str) -> frozenset[str]:
    """``SUPPORTED_SUFFIXES`` on first use (reopening a stored document never needs it)."""
    if name == "SUPPORTED_SUFFIXES":
        from desktop.documents import ingest

        return ingest.SUPPORTED_SUFFIXES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["SUPPORTED_SUFFIXES", "Document", "OutlineEntry", "Page", "extract", "sha256_file"]
