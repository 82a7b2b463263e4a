"""Registered schema migrations; applied in order when the store opens."""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

MIGRATIONS = Migrations("longdoc")


@MIGRATIONS()
def m001_documents_and_answers(db: Database) -> None:
    """Initial schema: documents, their pages, answers."""
    db.table("documents").create(
        {
            "sha256": str,
            "path": str,
            "kind": str,
            "title": str,
            "page_count": int,
            "tokens": int,
            "chars": int,
            "empty_pages": int,
            "size_bytes": int,
            "extractor": str,
            "metadata": str,
            "outline": str,
            "warnings": str,
            "created_at": float,
            "opened_at": float,
        },
        pk="sha256",
    )
    db.table("pages").create(
        {"sha256": str, "number": int, "label": str, "text": str},
        pk=("sha256", "number"),
        foreign_keys=[("sha256", "documents", "sha256")],
    )
    db.table("answers").create(
        {
            "id": int,
            "document_sha": str,
            "question": str,
            "question_norm": str,
            "model": str,
            "prompt_version": str,
            "thinking": int,
            "first_page": int,
            "last_page": int,
            "max_tokens": int,
            "answer": str,
            "reasoning": str,
            "finish_reason": str,
            "status": str,
            "error": str,
            "prompt_tokens": int,
            "completion_tokens": int,
            "cached_tokens": int,
            "ttft_s": float,
            "total_s": float,
            "created_at": float,
            "extra": str,
        },
        pk="id",
    )
    db.table("answers").create_index(
        ["document_sha", "question_norm", "model", "status"], index_name="answers_lookup"
    )


@MIGRATIONS()
def m_threads_of_turns(db: Database) -> None:
    """Conversation threads: ordered answers per document; answers keyed on their history."""
    db.table("threads").create(
        {
            "id": int,
            "document_sha": str,
            "first_page": int,
            "last_page": int,
            "created_at": float,
            "updated_at": float,
        },
        pk="id",
    )
    db.table("threads").create_index(["document_sha", "updated_at"], index_name="threads_recent")
    # One answer can stand in several threads: a cache hit joins the thread it is asked in.
    db.table("thread_turns").create(
        {"thread_id": int, "turn": int, "answer_id": int},
        pk=("thread_id", "turn"),
        foreign_keys=[("thread_id", "threads", "id"), ("answer_id", "answers", "id")],
    )
    db.table("thread_turns").create_index(["answer_id"], index_name="thread_turns_answer")
    # The digest of the earlier turns an answer was given after ("" = a first question),
    # so the same question in another conversation is never served from the cache.
    db.table("answers").add_column("history", str, not_null_default="")


@MIGRATIONS()
def m_page_token_counts(db: Database) -> None:
    """Per-page prompt token counts and the layout they were counted for (issue 9)."""
    db.table("pages").add_column("tokens", int)
    db.table("documents").add_column("layout_version", str)


@MIGRATIONS()
def m_endpoint_models(db: Database) -> None:
    """The model each endpoint served last: a cache hit then needs no server call."""
    db.table("endpoint_models").create(
        {"url": str, "model": str, "context_length": int, "updated_at": float}, pk="url"
    )
