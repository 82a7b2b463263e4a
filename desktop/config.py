"""Settings and the data directory: one typed schema, a TOML file, environment overrides.

Precedence, lowest first: defaults < ``longdoc.toml`` < ``LONGDOC_*`` environment < flags.
"""

from __future__ import annotations

import dataclasses
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

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

_T = TypeVar("_T")


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


@dataclass(frozen=True)
class Setting:
    """One setting's declaration: everything the loader, the Settings dialog and the flags
    (``desktop.cli.options``) need to know about it. Its type is its default's type.
    """

    default: Any
    label: str  # the dialog's field label (a check box's text for a bool)
    help: str  # one line: the dialog's tooltip and the flag's --help
    env: str | None = None  # the LONGDOC_* variable that overrides the file
    minimum: int | None = None
    maximum: int | None = None
    unit: str = ""  # "tokens": messages, the dialog's suffix
    # What the empty value ("" or 0) means, as the dialog and the flag's help say it;
    # set only when empty is allowed (for an int, 0 is then allowed below ``minimum``).
    empty: str = ""
    choices: tuple[str, ...] = ()  # the values allowed ("" allowed when ``empty`` is set)
    secret: bool = False  # never shown: the dialog says "set" or "none"
    flag: str = ""  # "URL": a server flag added by add_server_options, with this metavar
    step: int = 1  # the dialog's spin-box step
    check: Callable[[str], None] | None = None  # raises ConfigError for a bad value

    @property
    def kind(self) -> type:
        """str, int or bool."""
        return type(self.default)

    def validate(self, name: str, value: Any) -> None:
        """Raise ConfigError naming the setting when ``value`` is out of its bounds."""
        if self.kind is int:
            if value == 0 and self.empty:
                return
            unit = f" {self.unit}" if self.unit else ""
            zero = f" (0 = {self.empty})" if self.empty else ""
            if self.minimum is not None and value < self.minimum:
                raise ConfigError(
                    f"{name} must be at least {self.minimum:,}{unit}{zero}, not {value:,}"
                )
            if self.maximum is not None and value > self.maximum:
                raise ConfigError(f"{name} must be at most {self.maximum:,}{unit}, not {value:,}")
        elif self.kind is str and value:
            if self.choices and value not in self.choices:
                listed = " or ".join(c for c in self.choices if c)
                raise ConfigError(f"{name} must be {listed}, not {value!r}")
            if self.check is not None:
                self.check(value)

    def from_env(self, text: str) -> Any:
        """The value an environment variable's text states (ConfigError if it cannot)."""
        if self.kind is int:
            try:
                return int(text.strip().replace("_", "").replace(",", ""))
            except ValueError:
                raise ConfigError(
                    f"{self.env}={text!r} is not a number of {self.unit or 'units'}"
                ) from None
        return text


def setting(default: _T, label: str, help: str, **declared: Any) -> _T:
    """A ``Settings`` field with its declaration (see ``Setting``) as metadata."""
    spec = Setting(default, label, help, **declared)
    return field(default=default, metadata={"setting": spec})


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


@dataclass
class Settings:
    """Everything in ``longdoc.toml``, each field declared once (``setting``); empty strings
    mean "use the managed server's value"."""

    endpoint: str = setting(
        "",
        "Server endpoint",
        "the server's URL",
        env="LONGDOC_ENDPOINT",
        empty="the server Longdoc manages",
        flag="URL",
        check=check_endpoint,
    )
    model: str = setting(
        "",
        "Model",
        "the model to ask",
        env="LONGDOC_MODEL",
        empty="the server's model",
        flag="NAME",
    )
    api_key: str = setting(
        "",
        "API key",
        "the key the server requires",
        env="LONGDOC_API_KEY",
        empty="none, or the managed server's key",
        secret=True,
        flag="KEY",
    )
    thinking: bool = setting(True, "Let the model think before answering", "")
    answer_reserve: int = setting(
        DEFAULT_ANSWER_RESERVE,
        "Answer reserve",
        f"tokens kept for the answer; shrinks to {MIN_ANSWER_RESERVE:,} (with a warning) "
        "when the document needs the room",
        minimum=MIN_ANSWER_RESERVE,
        maximum=MAX_TOKENS,
        unit="tokens",
        step=1024,
    )
    # Tokens per second a slow GPU still prefills; sets the first-token timeout so a
    # 250K-token prompt gets minutes, never a watchdog that kills a live prefill.
    min_prefill_rate: int = setting(
        400,
        "Slowest prefill",
        "the slowest prefill your GPU does; sets how long to wait for the first token",
        minimum=1,
        maximum=MAX_PREFILL_RATE,
        unit="tokens/s",
    )
    profile: str = setting(
        "sglang-rocm",
        "Server profile",
        "server profile: a bundled one, or one of yours in <data dir>/profiles",
        flag="NAME",
    )
    container_runtime: str = setting(
        "",
        "Container runtime",
        "docker or podman",
        empty="whichever is installed",
        choices=("", "docker", "podman"),
    )
    keep_server_running: bool = setting(True, "Keep the server running after Longdoc quits", "")
    # For servers that do not report their context (transformers serve, llama.cpp, routers);
    # 0 = the server's own figure. When both exist the smaller wins.
    context_length: int = setting(
        0,
        "Context length",
        "the server's context length in tokens, for servers that do not report it; "
        "when both exist the smaller wins",
        env="LONGDOC_CONTEXT_LENGTH",
        minimum=1,
        maximum=MAX_TOKENS,
        unit="tokens",
        empty="as the server reports",
        flag="N",
    )

    def validate(self) -> None:
        """Raise ConfigError naming the first bad value."""
        for name, spec in SETTINGS.items():
            spec.validate(name, getattr(self, name))

    def to_toml(self) -> str:
        """Render as TOML (flat scalar keys only, so a tiny writer suffices)."""
        lines = [
            f"# Longdoc settings (version {SETTINGS_VERSION})",
            f"version = {SETTINGS_VERSION}",
        ]
        for name in SETTINGS:
            lines.append(f"{name} = {_toml_value(getattr(self, name))}")
        return "\n".join(lines) + "\n"


# Every setting's declaration, in the file's (and the dialog's) order.
SETTINGS: dict[str, Setting] = {f.name: f.metadata["setting"] for f in fields(Settings)}


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
    text = _read_config(path)
    if text is not None:
        import tomllib

        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{display_path(path)}: not valid TOML ({exc})") from exc
        raw.pop("version", None)
        for key, value in raw.items():
            if key not in SETTINGS:
                raise ConfigError(f"{display_path(path)}: unknown setting {key!r}")
            setattr(settings, key, _coerce(key, SETTINGS[key].kind, value))
    if env:
        for key, spec in SETTINGS.items():
            stated = os.environ.get(spec.env, "").strip() if spec.env else ""
            if stated:
                setattr(settings, key, spec.from_env(os.environ[spec.env or ""]))
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
    for name, spec in SETTINGS.items():
        var = spec.env
        if flags and flags.get(name) is not None:
            sources[name] = "flag"
        elif env and var and os.environ.get(var):
            sources[name] = f"environment ({var})"
        elif name in in_file:
            sources[name] = "file"
        else:
            sources[name] = "default"
    return sources
