"""The model's explanation of a comparison: both versions whole, as a set, in one request.

The old version is document A and the new one B, so the explanation cites both in the set
grammar (``[A p. 4]``, ``[B p. 5]``) and every quote is checked against the version it
cites. The change list goes in the question (the user turn), so the versions stay the
set's cacheable prefix: a later question about the same two documents reuses them.
"""

from __future__ import annotations

from desktop.answering.sets import DocumentSet, build_set
from desktop.compare.align import Comparison
from desktop.compare.report import change_list
from desktop.documents.model import Document

EXPLAIN_INSTRUCTIONS = """\
Document A is the old version and document B the new version of the same document. \
Comparing them word by word found the changes listed below (each with where it stands in \
A and in B). Explain each material change: what it changes for the parties or the reader. \
Quote both versions exactly, each quote followed by its citation, e.g. "old words" [A p. 4] \
and "new words" [B p. 5]. Group changes that belong together and say briefly which \
changes are not material (wording, numbering, formatting)."""

NO_CHANGES = "The comparison found no changes: say whether the two versions differ at all."


def explain_question(comparison: Comparison) -> str:
    """The question that asks for the explanation, with the change list."""
    if not comparison.changes:
        return f"{EXPLAIN_INSTRUCTIONS}\n\n{NO_CHANGES}"
    return f"{EXPLAIN_INSTRUCTIONS}\n\nChanges:\n{change_list(comparison)}"


def versions(old: Document, new: Document) -> DocumentSet:
    """The set the explanation is asked about: A = old, B = new, both whole."""
    return build_set([old, new])
