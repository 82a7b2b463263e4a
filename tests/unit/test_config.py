"""Settings: file, environment and flag precedence; validation; owner-only writes."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from desktop.config import (
    Settings,
    config_path,
    data_dir,
    load_settings,
    save_settings,
    with_overrides,
)
from desktop.errors import ConfigError


def test_data_dir_follows_longdoc_home(home: Path) -> None:
    assert data_dir() == home
    assert config_path() == home / "longdoc.toml"


def test_defaults_without_file(home: Path) -> None:
    settings = load_settings()
    assert settings == Settings()
    assert settings.answer_reserve == 16_384


def test_round_trip_and_permissions(home: Path) -> None:
    original = Settings(
        endpoint="http://127.0.0.1:30000", api_key='k"ey\\', thinking=False, answer_reserve=8192
    )
    path = save_settings(original)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_settings() == original


def test_environment_overrides_file_and_flags_override_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_settings(Settings(endpoint="http://file:1", model="file-model"))
    monkeypatch.setenv("LONGDOC_ENDPOINT", "http://env:2")
    settings = load_settings()
    assert settings.endpoint == "http://env:2"
    assert settings.model == "file-model"
    assert with_overrides(settings, endpoint="http://flag:3", model=None).endpoint == (
        "http://flag:3"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("answer_reserve = 100\n", "answer_reserve must be at least 2,048"),
        ('endpoint = "localhost:30000"\n', "must start with http://"),
        ("thinking = 3\n", "thinking must be a bool"),
        ("colour = 1\n", "unknown setting 'colour'"),
        ("endpoint = \n", "not valid TOML"),
    ],
)
def test_invalid_file_names_the_problem(home: Path, text: str, message: str) -> None:
    config_path().write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_settings()
