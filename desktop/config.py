"""Settings and the data directory: one typed schema, a TOML file, environment overrides.

Precedence, lowest first: defaults < ``longdoc.toml`` < ``LONGDOC_*`` environment < flags.
"""

from __future__ import annotations

import dataclasses
import os
import stat
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from desktop.errors import ConfigError, StorageError, display_path

CONFIG_NAME = "longdoc.toml"
DB_NAME = "longdoc.db"
SETTINGS_VERSION = 1

DEFAULT_ANSWER_RESERVE = 16_384
MIN_ANSWER_RESERVE = 2_048
# The largest token count any setting or flag may name: above every context Qwen3.5
# supports (1M with YaRN), far below what SQLite's integers or the server could overflow on.
MAX_TOKENS = 1_048_576
MAX_PREFILL_RATE = 10_000_000


def data_dir() -> Path:
    """The one directory holding all state: ``$LONGDOC_HOME`` or the platform's data dir.

    Created owner-only (0700); one that other users can read is made private on the spot,
    with one notice on stderr (documents and answers are confidential).
    """
    home = os.environ.get("LONGDOC_HOME")
    if home:
        path = Path(home).expanduser()
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir("longdoc", False))
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        make_private(path)
    except OSError as exc:
        raise StorageError(
            f"{display_path(path)}: cannot create the data directory "
            f"({exc.strerror or exc}); set LONGDOC_HOME to a writable folder"
        ) from exc
    return path


# What Longdoc keeps in the data directory; only these are tightened, so a LONGDOC_HOME
# shared with other files (even $HOME) loses nothing but the other users' access to ours.
_OWN_DIRS = ("server", "profiles")
_OWN_FILE_PREFIXES = ("longdoc.", "ui.ini")


def make_private(path: Path) -> bool:
    """Make a data directory that others can read owner-only, with Longdoc's files in it.

    Returns True (after printing the one notice) when something had to change. Files and
    folders of other owners are left alone: chmod would fail on them anyway.
    """
    info = path.stat()
    if not info.st_mode & 0o077 or info.st_uid != os.getuid():
        return False
    os.chmod(path, 0o700)
    entries = [path / name for name in os.listdir(path) if name.startswith(_OWN_FILE_PREFIXES)]
    for name in _OWN_DIRS:
        if (path / name).is_dir() and not (path / name).is_symlink():
            entries.append(path / name)
            for root, dirs, files in os.walk(path / name):
                entries += [Path(root, n) for n in dirs + files]
    for entry in entries:
        st = os.lstat(entry)
        if stat.S_ISLNK(st.st_mode) or st.st_uid != info.st_uid or not st.st_mode & 0o077:
            continue
        os.chmod(entry, stat.S_IMODE(st.st_mode) & 0o700)
    print(
        f"Notice: {display_path(path)} could be read by other users; made it and Longdoc's "
        "files in it private (owner-only).",
        file=sys.stderr,
    )
    return True


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
    # For servers that do not report their context (transformers serve, llama.cpp, routers);
    # 0 = the server's own figure. When both exist the smaller wins.
    context_length: int = 0

    def validate(self) -> None:
        """Raise ConfigError naming the first bad value."""
        if self.endpoint:
            check_endpoint(self.endpoint)
        if self.answer_reserve < MIN_ANSWER_RESERVE:
            raise ConfigError(
                f"answer_reserve must be at least {MIN_ANSWER_RESERVE:,} tokens, "
                f"not {self.answer_reserve:,}"
            )
        if self.answer_reserve > MAX_TOKENS:
            raise ConfigError(
                f"answer_reserve must be at most {MAX_TOKENS:,} tokens, not {self.answer_reserve:,}"
            )
        if not 0 < self.min_prefill_rate <= MAX_PREFILL_RATE:
            raise ConfigError(
                "min_prefill_rate must be a positive number of tokens per second, at most "
                f"{MAX_PREFILL_RATE:,}, not {self.min_prefill_rate:,}"
            )
        if not 0 <= self.context_length <= MAX_TOKENS:
            raise ConfigError(
                f"context_length must be between 1 and {MAX_TOKENS:,} tokens "
                f"(0 = as the server reports), not {self.context_length:,}"
            )
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


def check_endpoint(url: str) -> None:
    """Raise ConfigError unless ``url`` is an http(s) URL with a host (and a valid port)."""
    from urllib.parse import urlsplit

    example = "e.g. http://127.0.0.1:30000"
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"endpoint {url!r} must start with http:// or https:// ({example})")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is what raises for a bad one
    except ValueError as exc:
        raise ConfigError(f"endpoint {url!r} is not a valid URL ({exc}); {example}") from None
    if not parts.hostname:
        raise ConfigError(f"endpoint {url!r} names no host; {example}")


_ENV = {"endpoint": "LONGDOC_ENDPOINT", "model": "LONGDOC_MODEL", "api_key": "LONGDOC_API_KEY"}
CONTEXT_LENGTH_ENV = "LONGDOC_CONTEXT_LENGTH"


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
    raise ConfigError(
        f"{display_path(config_path())}: {name} must be a {kind.__name__}, not {value!r}"
    )


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
        "context_length": int,
    }
    text = _read_config(path)
    if text is not None:
        import tomllib

        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{display_path(path)}: not valid TOML ({exc})") from exc
        raw.pop("version", None)
        for key, value in raw.items():
            if key not in types:
                raise ConfigError(f"{display_path(path)}: unknown setting {key!r}")
            setattr(settings, key, _coerce(key, types[key], value))
    if env:
        for key, var in _ENV.items():
            if os.environ.get(var):
                setattr(settings, key, os.environ[var])
        stated = os.environ.get(CONTEXT_LENGTH_ENV, "").strip()
        if stated:
            try:
                settings.context_length = int(stated.replace("_", "").replace(",", ""))
            except ValueError:
                raise ConfigError(
                    f"{CONTEXT_LENGTH_ENV}={stated!r} is not a number of tokens"
                ) from None
    settings.validate()
    return settings


def _read_config(path: Path) -> str | None:
    """The settings file's text, None when there is none, or ConfigError saying what is wrong."""
    shown = display_path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read the settings ({exc.strerror or exc})") from exc
    if stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"{shown}: is a folder, not a settings file; remove or rename it")
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{shown}: is not a regular file; replace it with a TOML file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown}: not valid TOML (not UTF-8 text)") from exc
    except OSError as exc:
        raise ConfigError(
            f"{shown}: cannot read the settings ({exc.strerror or exc}); "
            "make it readable (chmod 600) or remove it"
        ) from exc


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
    import tomllib

    path = path or config_path()
    in_file: set[str] = set()
    try:
        text = _read_config(path)
        raw = tomllib.loads(text) if text is not None else {}
        in_file = {key for key in raw if key != "version"}
    except (ConfigError, tomllib.TOMLDecodeError):
        pass  # load_settings reports a bad file; here it just sets nothing
    sources: dict[str, str] = {}
    for f in fields(Settings):
        name = f.name
        var = _ENV.get(name) or (CONTEXT_LENGTH_ENV if name == "context_length" else None)
        if flags and flags.get(name) is not None:
            sources[name] = "flag"
        elif env and var and os.environ.get(var):
            sources[name] = f"environment ({var})"
        elif name in in_file:
            sources[name] = "file"
        else:
            sources[name] = "default"
    return sources
