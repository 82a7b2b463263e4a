"""The context budget: reserve, shrink to the floor with a warning, refuse beyond it."""

from __future__ import annotations

from desktop.answering.budget import plan_budget
from desktop.errors import DocumentTooLarge, suggest_page_end


def test_fits_with_full_reserve() -> None:
    budget = plan_budget(240_300, 262_144, 16_384)
    assert budget.fits
    assert budget.max_tokens == 16_384
    assert budget.warnings == []


def test_reserve_shrinks_with_warning() -> None:
    budget = plan_budget(255_000, 262_144, 16_384)
    assert budget.fits
    assert budget.max_tokens == 262_144 - 1 - 255_000
    assert "reduced from 16,384" in budget.warnings[0]


def test_refused_when_even_the_floor_does_not_fit() -> None:
    budget = plan_budget(261_000, 262_144, 16_384)
    assert not budget.fits
    assert budget.overflow == 261_000 - (262_144 - 1 - 2_048)


def test_server_input_limit_is_respected() -> None:
    assert not plan_budget(100_000, 262_144, 16_384, max_input=99_000).fits
    assert plan_budget(98_000, 262_144, 16_384, max_input=99_000).fits


def test_too_large_message_has_both_numbers_and_a_range() -> None:
    err = DocumentTooLarge(
        "/x/big.pdf", needed=400_000, available=260_095, context=262_144, pages=300
    )
    text = str(err)
    assert text.startswith("/x/big.pdf: needs 400,000 prompt tokens")
    assert "262,144" in text
    assert "--pages 1-" in text
    assert 1 <= suggest_page_end(300, 400_000, 260_095) < 300 * 260_095 / 400_000
