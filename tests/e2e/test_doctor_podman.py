"""``longdoc doctor`` against real podman: the image check sees what is really loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import ProfileMaker
from tests.support.cli import longdoc

pytestmark = pytest.mark.container


def _checks(home: Path) -> dict[str, dict[str, str]]:
    done = longdoc("doctor", "--json", "--profile", "test", home=home)
    return {c["name"]: c for c in json.loads(done.stdout)["checks"]}


def test_missing_image_is_a_problem_with_the_load_command(
    home: Path, container_profile: ProfileMaker
) -> None:
    container_profile(image="localhost/longdoc-never-loaded:0")
    result = _checks(home)
    assert result["Container runtime"]["status"] == "ok"
    assert result["Server image"]["status"] == "problem"
    assert "podman load -i" in result["Server image"]["fix"]


def test_present_image_is_ok(home: Path, container_profile: ProfileMaker) -> None:
    container_profile()
    result = _checks(home)
    assert result["Server image"]["status"] == "ok"
    assert result["Model folder"]["status"] == "ok"  # config, a weight file, the tokenizer
