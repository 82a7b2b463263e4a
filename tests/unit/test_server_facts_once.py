"""Server facts written once (issue 16): URL normalisation, the model list's route and what
an HTTP status means live in ``longdoc_net.endpoint``; engine kinds are dispatched through
``server_manager.engines.ENGINES``, not compared in code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("desktop", "server_manager", "longdoc_net")
NET = Path("longdoc_net") / "endpoint.py"


def sources() -> dict[Path, str]:
    return {
        path.relative_to(ROOT): path.read_text(encoding="utf-8")
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def test_v1_is_stripped_in_one_place() -> None:
    stripping = re.compile(r"""removesuffix\(\s*["']/v1/?["']|\[:-3\]""")
    assert [path for path, text in sources().items() if stripping.search(text)] == [NET]


def test_the_model_list_route_is_named_in_at_most_two_modules() -> None:
    naming = [path for path, text in sources().items() if "/v1/models" in text]
    assert NET in naming and len(naming) <= 2, naming


def test_http_statuses_are_given_their_meaning_once() -> None:
    meaning = re.compile(r"status(?:_code)?\s*(?:in\s*\(|==\s*)(?:40[1-9]|50\d)")
    found = [path for path, text in sources().items() if meaning.search(text)]
    assert found == [NET], found


def test_engine_kinds_are_compared_at_most_six_times() -> None:
    switch = re.compile(r"""\bkind\s*(?:==|!=|in\s*\()""")
    count = sum(
        len(switch.findall(text))
        for path, text in sources().items()
        if path.parts[0] == "server_manager"
    )
    assert count <= 6, count
