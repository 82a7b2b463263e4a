"""desktop.library.LibraryChanges: what other processes changed, seen by data_version."""

from __future__ import annotations

from pathlib import Path

from desktop.library import LibraryChanges
from desktop.store.db import Store
from tests.conftest import make_document


def test_changes_from_another_connection_are_seen_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "longdoc.db"
    app, cli = Store(path), Store(path)  # the open app, and a `longdoc ingest` beside it
    try:
        changes = LibraryChanges(app)
        assert changes.list_now() == []
        assert changes.check() is None  # nothing changed: one pragma, no listing
        doc = make_document([("1", "The fee is 300 EUR.")], title="Fees")
        cli.save_document(doc)
        listed = changes.check()
        assert listed is not None and [d.title for d in listed] == ["Fees"]
        assert changes.check() is None  # seen once
        cli.remember_model("http://127.0.0.1:30000", "qwen", 262_144)  # no document changed
        assert changes.check() is None
        app.save_document(make_document([("1", "Own.")], title="Own"))
        assert changes.check() is None  # this connection's own writes: the caller knows
        assert [d.title for d in changes.check(force=True) or []] == ["Own", "Fees"]
        cli.remove_document(doc.sha256)
        assert [d.title for d in changes.check() or []] == ["Own"]
    finally:
        app.close()
        cli.close()
