"""Waiting on a state in tests: poll a condition, never assert a duration."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T], timeout: float = 30.0, what: str = "", interval: float = 0.02
) -> T:
    """Poll until ``predicate()`` is truthy and return its value; fail after ``timeout``
    seconds (a hang detector, not a timing goal)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(interval)
