"""Settings and the data directory: one typed schema, a TOML file, environment overrides.

Precedence, lowest first: defaults < ``longdoc.toml`` < ``LONGDOC_*`` environment < flags.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import platformdirs

from desktop.errors import ConfigError, StorageError

CONFIG_NAME = "longdoc.toml"
DB_NAME = "longdoc.db"
SETTINGS_VERSION = 1

DEFAULT_ANSWER_RESERVE = 16_384
MIN_ANSWER_RESERVE = 2_048


def data_dir() -> Path:
    """The one directory holding all state: ``$LONGDOC_HOME`` or the platform's data dir."""
    home = os.environ.get("LONGDOC_HOME")
    path = Path(home).expanduser() if home else Path(platformdirs.user_data_dir("longdoc", False))
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(
            f"{path}: cannot create the data directory ({exc.strerror}); "
            "set LONGDOC_HOME to a writable folder"
        ) from exc
    return path


def db_path() -> Path:
    """The SQLite database with documents and answers."""
    return data_dir() / DB_NAME


def config_path() -> Path:
    """The user's ``longdoc.toml``."""
    return data_dir() / CONFIG_NAME


@dataclass
class Settings:
    """Everything in ``longdoc.toml``; empty strings mean "use the managed server's value"."""

    endpoint: str = ""
    model: str = ""
    api_key: str = ""
    thinking: bool = True
    answer_reserve: int = DEFAULT_ANSWER_RESERVE
    # Tokens per second a slow GPU still prefills; sets the first-token timeout so a
    # 250K-token prompt gets minutes, never a watchdog that kills a live prefill.
    min_prefill_rate: int = 400
    profile: str = "sglang-rocm"
    container_runtime: str = ""
    keep_server_running: bool = True

    def validate(self) -> None:
        """Raise ConfigError naming the first bad value."""
        if self.endpoint and not self.endpoint.startswith(("http://", "https://")):
            raise ConfigError(f"endpoint {self.endpoint!r} must start with http:// or https://")
        if self.answer_reserve < MIN_ANSWER_RESERVE:
            raise ConfigError(
                f"answer_reserve must be at least {MIN_ANSWER_RESERVE:,} tokens, "
                f"not {self.answer_reserve:,}"
            )
        if self.min_prefill_rate <= 0:
            raise ConfigError("min_prefill_rate must be a positive number of tokens per second")
        if self.container_runtime not in ("", "docker", "podman"):
            raise ConfigError(
                f"container_runtime must be docker or podman, not {self.container_runtime!r}"
            )

    def to_toml(self) -> str:
        """Render as TOML (flat scalar keys only, so a tiny writer suffices)."""
        lines = [
            f"# Longdoc settings (version {SETTINGS_VERSION})",
            f"version = {SETTINGS_VERSION}",
        ]
        for f in fields(self):
            lines.append(f"{f.name} = {_toml_value(getattr(self, f.name))}")
        return "\n".join(lines) + "\n"


_ENV = {"endpoint": "LONGDOC_ENDPOINT", "model": "LONGDOC_MODEL", "api_key": "LONGDOC_API_KEY"}


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def _coerce(name: str, kind: type, value: Any) -> Any:
    if kind is bool and isinstance(value, bool):
        return value
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind is str and isinstance(value, str):
        return value
    raise ConfigError(f"{config_path()}: {name} must be a {kind.__name__}, not {value!r}")


def load_settings(path: Path | None = None, *, env: bool = True) -> Settings:
    """Read ``longdoc.toml`` (missing is fine) and apply environment overrides."""
    path = path or config_path()
    settings = Settings()
    types = {
        "endpoint": str,
        "model": str,
        "api_key": str,
        "thinking": bool,
        "answer_reserve": int,
        "min_prefill_rate": int,
        "profile": str,
        "container_runtime": str,
        "keep_server_running": bool,
    }
    if path.exists():
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
        raw.pop("version", None)
        for key, value in raw.items():
            if key not in types:
                raise ConfigError(f"{path}: unknown setting {key!r}")
            setattr(settings, key, _coerce(key, types[key], value))
    if env:
        for key, var in _ENV.items():
            if os.environ.get(var):
                setattr(settings, key, os.environ[var])
    settings.validate()
    return settings


def save_settings(settings: Settings, path: Path | None = None) -> Path:
    """Validate and write atomically, owner-only (it may hold an API key)."""
    settings.validate()
    path = path or config_path()
    tmp = path.with_suffix(".toml.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(settings.to_toml())
    os.replace(tmp, path)
    return path


def with_overrides(settings: Settings, **overrides: Any) -> Settings:
    """A copy with the non-None overrides (command-line flags) applied."""
    changes = {k: v for k, v in overrides.items() if v is not None}
    result = dataclasses.replace(settings, **changes)
    result.validate()
    return result


# --- where each setting comes from (the settings dialog shows it) ----------------------------


def setting_sources(
    path: Path | None = None,
    *,
    env: bool = True,
    flags: dict[str, Any] | None = None,
) -> dict[str, str]:
    """For every setting, where its effective value comes from, with the same precedence as
    ``load_settings`` + ``with_overrides``: "flag", "environment (VAR)", "file" or "default".
    """
    path = path or config_path()
    in_file: set[str] = set()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        in_file = {key for key in raw if key != "version"}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        pass  # load_settings reports a bad file; here it just sets nothing
    sources: dict[str, str] = {}
    for f in fields(Settings):
        name = f.name
        var = _ENV.get(name)
        if flags and flags.get(name) is not None:
            sources[name] = "flag"
        elif env and var and os.environ.get(var):
            sources[name] = f"environment ({var})"
        elif name in in_file:
            sources[name] = "file"
        else:
            sources[name] = "default"
    return sources
