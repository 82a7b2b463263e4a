"""A data directory whose path holds ``%41``, ``#`` or ``?`` (issue 20 item 9).

The database checks open SQLite through a ``file:`` URI; built from the raw path, ``%41``
named another file and ``#``/``?`` cut the path short, so a sound database was called
damaged (and set aside) and a damaged one sound.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.doctor import check_database
from desktop.store.db import Store, damage

ODD_NAMES = ["data%41dir", "data#dir", "data?dir", "a%2Fb#c?d%"]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_a_sound_database_in_an_odd_folder_is_sound(tmp_path: Path, name: str) -> None:
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "longdoc.db"
    Store(path).close()
    assert damage(path) is None
    assert check_database(path).status == "ok"
    # SQLite made no stray file beside the folder (what "data#dir" used to open).
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_a_damaged_database_in_an_odd_folder_is_damaged(tmp_path: Path, name: str) -> None:
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "longdoc.db"
    path.write_bytes(b"this is not a database" * 500)
    assert damage(path) is not None
    assert check_database(path).status == "problem"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
