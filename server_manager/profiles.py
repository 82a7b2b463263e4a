"""Server profiles: TOML files that say how to run (or reach) the inference server.

Bundled profiles live in ``resources/profiles``; ``<data_dir>/profiles/NAME.toml`` overrides
the bundled profile of the same name key by key, or adds a new one (``extends = "sglang-rocm"``
starts from another profile). Every key is a field of ``Profile`` (or ``RestartPolicy`` under
``[restart]``): names, types, choices and defaults are read from the dataclasses, once.
Building the ``docker|podman run`` line and the engine's arguments is pure: everything here
can be tested without a runtime or a GPU.

The API key never appears in an argv built here (argv is world-readable through ``ps``):
SGLang reads it from a YAML file given with ``--config``, vLLM from ``VLLM_API_KEY`` in
its environment; both files are written owner-only by the supervisor (``secret_files``).
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from longdoc_net.endpoint import api_root
from longdoc_net.resources import resources_dir
from server_manager.errors import ProfileInvalid

Kind = Literal["container", "native", "external"]
Engine = Literal["sglang", "vllm"]
GpuVendor = Literal["amd", "nvidia", "none"]


BUNDLED_DIR = resources_dir("profiles")
DEFAULT_PROFILE = "sglang-rocm"
LABEL_MANAGED = "longdoc.managed"
LABEL_PROFILE = "longdoc.profile"
LABEL_PORT = "longdoc.port"
LABEL_HOME = "longdoc.home"
# Placeholders allowed in `engine_args` (which replaces the generated engine arguments).
# There is no {api_key}: the key reaches the engine through a private file, never argv.
PLACEHOLDERS = (
    "host",
    "port",
    "model_path",
    "served_model_name",
    "context_length",
    "tp_size",
)
# Where the SGLang config file (holding the key) is mounted, read-only, in the container.
# SGLang requires the .yaml/.yml suffix (server_args_config_parser._validate_yaml_file).
CONTAINER_CONFIG = "/run/longdoc/engine.yaml"
# vLLM reads its key from this variable when --api-key is not given.
VLLM_KEY_VARIABLE = "VLLM_API_KEY"


@dataclass(frozen=True)
class RestartPolicy:
    """Restart on unexpected exit with exponential backoff, at most N times per window."""

    max_restarts: int = 3
    window_s: float = 600.0
    backoff_base_s: float = 5.0
    backoff_max_s: float = 120.0

    def next_delay(self, restarts: Sequence[float], now: float) -> float | None:
        """Seconds to wait before the next restart, or None when the window's budget is spent.

        ``restarts`` are the monotonic times of earlier restarts; only those inside the
        window count, so a server that ran well for a long while gets a fresh budget.
        """
        recent = [t for t in restarts if now - t < self.window_s]
        if len(recent) >= self.max_restarts:
            return None
        return float(min(self.backoff_max_s, self.backoff_base_s * 2 ** len(recent)))


@dataclass(frozen=True)
class Profile:
    """One validated profile; paths are expanded, defaults filled in.

    Every field but ``name``, ``source`` and ``user_file`` is a TOML key of the same name.
    """

    name: str
    source: Path
    user_file: Path
    kind: Kind = "container"
    engine: Engine = "sglang"
    gpu_vendor: GpuVendor = "amd"
    image: str = ""
    command: tuple[str, ...] = ()
    model_dir: str = ""
    model_mount: str = "/model"
    served_model_name: str = ""
    port: int = 30000
    context_length: int = 0
    tp_size: int = 0
    mem_fraction_static: float | None = None
    attention_backend: str = ""
    reasoning_parser: str = "qwen3"
    tool_call_parser: str = "qwen3_coder"
    engine_args: tuple[str, ...] | None = None
    extra_engine_args: tuple[str, ...] = ()
    runtime_args: tuple[str, ...] = ()
    extra_runtime_args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    runtime: str = ""
    python: str = "python3"
    workdir: str = ""
    url: str = ""
    api_key: str = ""
    grace_period_s: float = 30.0
    ready_timeout_s: float = 1800.0
    restart: RestartPolicy = field(default_factory=RestartPolicy)

    @property
    def model_name(self) -> str:
        """The name the server lists among its models."""
        if self.served_model_name:
            return self.served_model_name
        return Path(self.model_dir).name if self.model_dir else ""

    @property
    def is_external(self) -> bool:
        """A server Longdoc only talks to: nothing to run, stop or adopt."""
        return self.kind == "external"

    @property
    def endpoint(self) -> str:
        """Base URL clients use (no ``/v1``)."""
        if self.is_external:
            return api_root(self.url)
        return f"http://127.0.0.1:{self.port}"

    @property
    def container_name(self) -> str:
        """Stable name so a second process finds the same container."""
        return f"longdoc-{self.engine}-{self.port}"


# --- the schema, read from the dataclasses -------------------------------------------------

_STR = "a string"
_INT = "an integer"
_NUM = "a number"
_LIST = "a list of strings"
_TABLE = "a table of strings"
_SUBTABLE = "a table"
# Keys that only steer loading; every other key is a Profile field.
_META_KEYS = {"description": _STR, "extends": _STR}
_NOT_KEYS = ("name", "source", "user_file")


@dataclass(frozen=True)
class _Key:
    """How one TOML key is checked and converted."""

    shape: str
    choices: tuple[str, ...] = ()


def _key_of(hint: Any) -> _Key:
    """The key description for a field's type hint."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _key_of(args[0])  # X | None: the same key, optional
    if origin is Literal:
        return _Key(_STR, tuple(str(a) for a in args))
    if hint is str:
        return _Key(_STR)
    if hint is int:
        return _Key(_INT)
    if hint is float:
        return _Key(_NUM)
    if origin is tuple:
        return _Key(_LIST)
    if origin is Mapping or origin is dict:
        return _Key(_TABLE)
    if dataclasses.is_dataclass(hint):
        return _Key(_SUBTABLE)
    raise TypeError(f"no profile key type for {hint!r}")  # a new field needs a rule here


def _schema(cls: type) -> dict[str, _Key]:
    hints = typing.get_type_hints(cls)
    return {
        f.name: _key_of(hints[f.name]) for f in dataclasses.fields(cls) if f.name not in _NOT_KEYS
    }


_PROFILE_KEYS = _schema(Profile)
_RESTART_KEYS = _schema(RestartPolicy)
_KEYS: dict[str, _Key] = {**{k: _Key(v) for k, v in _META_KEYS.items()}, **_PROFILE_KEYS}
KINDS: tuple[str, ...] = _PROFILE_KEYS["kind"].choices
ENGINES: tuple[str, ...] = _PROFILE_KEYS["engine"].choices
GPU_VENDORS: tuple[str, ...] = _PROFILE_KEYS["gpu_vendor"].choices


# What each kind of profile cannot do without.
_REQUIRED: dict[str, tuple[tuple[str, str], ...]] = {
    "container": (
        ("image", "is required for a container profile"),
        ("model_dir", "is required (the local directory holding the model)"),
    ),
    "native": (("model_dir", "is required (the local directory holding the model)"),),
    "external": (("url", "must start with http:// or https:// for an external profile"),),
}


def _check_type(path: Path, key: str, value: Any, spec: _Key) -> None:
    ok = {
        _STR: isinstance(value, str),
        _INT: isinstance(value, int) and not isinstance(value, bool),
        _NUM: isinstance(value, int | float) and not isinstance(value, bool),
        _LIST: isinstance(value, list) and all(isinstance(v, str) for v in value),
        _TABLE: isinstance(value, dict) and all(isinstance(v, str) for v in value.values()),
        _SUBTABLE: isinstance(value, dict),
    }[spec.shape]
    if not ok:
        raise ProfileInvalid(f"{path}: {key} must be {spec.shape}, not {value!r}.")


def _check_keys(path: Path, raw: Mapping[str, Any]) -> None:
    for key, value in raw.items():
        if key not in _KEYS:
            raise ProfileInvalid(f"{path}: unknown key {key!r}.")
        _check_type(path, key, value, _KEYS[key])
    for key, value in raw.get("restart", {}).items():
        if key not in _RESTART_KEYS:
            raise ProfileInvalid(f"{path}: unknown key 'restart.{key}'.")
        _check_type(path, f"restart.{key}", value, _RESTART_KEYS[key])


def _convert(spec: _Key, value: Any) -> Any:
    """TOML value to the field's Python type (lists become tuples, ints become floats)."""
    if spec.shape == _LIST:
        return tuple(value)
    if spec.shape == _TABLE:
        return dict(value)
    if spec.shape == _NUM:
        return float(value)
    return value


# --- loading -------------------------------------------------------------------------------


def _read_raw(path: Path) -> dict[str, Any]:
    """One file's keys, checked for names and types (not yet for meaning)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProfileInvalid(f"{path}: cannot be read ({exc.strerror}).") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProfileInvalid(f"{path}: not valid TOML ({exc}).") from exc
    _check_keys(path, raw)
    _check_secrets(path, raw)
    return raw


def profile_files(data_dir: Path | None) -> dict[str, list[Path]]:
    """Every profile name with its files, bundled first then the user's."""
    found: dict[str, list[Path]] = {}
    dirs = [BUNDLED_DIR] + ([data_dir / "profiles"] if data_dir is not None else [])
    for directory in dirs:
        if directory.is_dir():
            for path in sorted(directory.glob("*.toml")):
                found.setdefault(path.stem, []).append(path)
    return found


def available_profiles(data_dir: Path | None) -> list[str]:
    """Names of all profiles, sorted."""
    return sorted(profile_files(data_dir))


def user_file(name: str, data_dir: Path | None) -> Path:
    """Where the user overrides profile ``name``: ``<data_dir>/profiles/NAME.toml``."""
    base = data_dir if data_dir is not None else Path("<data_dir>")
    return base / "profiles" / f"{name}.toml"


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """Keys of ``top`` win; the ``env`` and ``restart`` tables merge key by key."""
    merged = dict(base)
    for key, value in top.items():
        if key in ("env", "restart") and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    merged.pop("extends", None)
    if "extends" in top:
        merged["extends"] = top["extends"]
    return merged


def _load_raw(
    name: str, files: dict[str, list[Path]], seen: tuple[str, ...]
) -> tuple[dict[str, Any], Path]:
    if name in seen:
        chain = " -> ".join((*seen, name))
        raise ProfileInvalid(f"{files[seen[0]][-1]}: extends forms a loop ({chain}).")
    paths = files.get(name)
    if not paths:
        known = ", ".join(sorted(files)) or "none"
        raise ProfileInvalid(f"No profile named {name!r} (known profiles: {known}).")
    raw: dict[str, Any] = {}
    for path in paths:
        layer = _read_raw(path)
        if "extends" in layer:
            base, _ = _load_raw(str(layer["extends"]), files, (*seen, name))
            raw = _merge(base, raw)
        raw = _merge(raw, layer)
        raw.pop("extends", None)
    return raw, paths[-1]


def load_profile(name: str, data_dir: Path | None) -> Profile:
    """Load, merge and validate a profile by name; raises ProfileInvalid naming file and key."""
    raw, source = _load_raw(name, profile_files(data_dir), ())
    return profile_from_dict(name, raw, source, user_file(name, data_dir))


def _expand(path: str) -> str:
    return str(Path(path).expanduser()) if path else ""


_KEY_ON_ARGV = (
    "would put the API key on the command line, where every user of the machine can read "
    "it (ps, /proc); remove it: Longdoc gives the key to SGLang in a private --config file "
    "and to vLLM as VLLM_API_KEY in a private environment file"
)


def _check_secrets(path: Path, raw: Mapping[str, Any]) -> None:
    """Refuse arguments that would put the API key (back) on an argv."""
    for key in ("engine_args", "extra_engine_args"):
        for arg in raw.get(key, []):
            if "{api_key}" in arg or arg == "--api-key" or arg.startswith("--api-key="):
                raise ProfileInvalid(f"{path}: {key} entry {arg!r} {_KEY_ON_ARGV}.")
            if arg == "--config" or arg.startswith("--config="):
                # SGLang accepts one --config only, and Longdoc's carries the key.
                raise ProfileInvalid(
                    f"{path}: {key} entry {arg!r}: Longdoc passes its own --config file; "
                    f"put these server arguments in {key} instead."
                )
    for key in ("runtime_args", "extra_runtime_args"):
        for arg in raw.get(key, []):
            if VLLM_KEY_VARIABLE in arg:
                raise ProfileInvalid(f"{path}: {key} entry {arg!r} {_KEY_ON_ARGV}.")
    for name, value in raw.get("env", {}).items():
        if name == VLLM_KEY_VARIABLE:
            raise ProfileInvalid(
                f"{path}: env.{name} is set by Longdoc from its generated key; remove it."
            )
        if "\n" in value or "\n" in name or "=" in name:
            raise ProfileInvalid(f"{path}: env.{name} must be one line without '=' in its name.")


def profile_from_dict(
    name: str, raw: Mapping[str, Any], source: Path, user: Path | None = None
) -> Profile:
    """Validate merged keys into a Profile (types were checked per file already).

    Problems with the merged values are reported against ``user`` (the file the user edits,
    ``<data_dir>/profiles/NAME.toml``), never against a bundled file.
    """
    user = user if user is not None else source
    _check_keys(source, raw)
    _check_secrets(source, raw)

    def bad(key: str, why: str) -> ProfileInvalid:
        return ProfileInvalid(f"{user}: {key} {why}.")

    for key, spec in _PROFILE_KEYS.items():
        if spec.choices and key in raw and raw[key] not in spec.choices:
            raise bad(key, f"must be one of {', '.join(spec.choices)}, not {raw[key]!r}")
    kind = raw.get("kind", Profile.kind)
    port = raw.get("port", Profile.port)
    if not 1 <= port <= 65535:
        raise bad("port", f"must be between 1 and 65535, not {port}")
    for key in ("context_length", "tp_size"):
        if raw.get(key, 0) < 0:
            raise bad(key, "must be 0 (automatic) or positive")
    mem = raw.get("mem_fraction_static")
    if mem is not None and not 0 < mem < 1:
        raise bad("mem_fraction_static", f"must be between 0 and 1, not {mem}")
    for key in ("grace_period_s", "ready_timeout_s"):
        if key in raw and raw[key] <= 0:
            raise bad(key, "must be positive")
    restart_raw = raw.get("restart", {})
    if restart_raw.get("max_restarts", 0) < 0:
        raise bad("restart.max_restarts", "must be 0 or more")
    for key in ("window_s", "backoff_base_s", "backoff_max_s"):
        if key in restart_raw and restart_raw[key] < 0:
            raise bad(f"restart.{key}", "must not be negative")
    for mount in raw.get("mounts", []):
        parts = mount.split(":")
        if len(parts) not in (2, 3) or not parts[0] or not parts[1]:
            raise bad("mounts", f"entry {mount!r} must look like /host/path:/container/path[:ro]")
        if not Path(parts[0]).expanduser().is_absolute():
            raise bad("mounts", f"entry {mount!r} must start with an absolute host path")
    for arg in raw.get("engine_args", []):
        try:
            arg.format(**dict.fromkeys(PLACEHOLDERS, ""))
        except (KeyError, IndexError, ValueError) as exc:
            raise bad("engine_args", f"entry {arg!r} uses an unknown placeholder ({exc})") from exc
    for key, why in _REQUIRED.get(str(kind), ()):
        if not raw.get(key):
            raise bad(key, why)
    if raw.get("url") and not str(raw["url"]).startswith(("http://", "https://")):
        raise bad("url", "must start with http:// or https:// for an external profile")

    values: dict[str, Any] = {
        key: _convert(_PROFILE_KEYS[key], value)
        for key, value in raw.items()
        if key in _PROFILE_KEYS and key != "restart"
    }
    if "model_dir" in values:
        values["model_dir"] = _expand(values["model_dir"])
    restart = RestartPolicy(**{k: _convert(_RESTART_KEYS[k], v) for k, v in restart_raw.items()})
    return Profile(name=name, source=source, user_file=user, restart=restart, **values)


# --- the key's files (pure text; the supervisor writes them owner-only) ----------------------


def engine_config_text(api_key: str) -> str:
    """SGLang's ``--config`` YAML: just the key (a JSON string is a valid YAML scalar).

    SGLang turns the file's keys back into ``--key value`` inside its own process
    (``ConfigArgumentMerger``, added in sglang PR #10534, so in 0.5.9 and later) and
    command-line flags override it; the file must end in .yaml or .yml.
    """
    return f"api-key: {json.dumps(api_key)}\n"


def container_env(profile: Profile, api_key: str = "") -> dict[str, str]:
    """Environment inside the container: offline by default, the profile's, vLLM's key."""
    env = {"HF_HUB_OFFLINE": "1", **profile.env}
    if profile.engine == "vllm" and api_key:
        env[VLLM_KEY_VARIABLE] = api_key
    return env


def env_file_text(env: Mapping[str, str]) -> str:
    """An ``--env-file`` for docker and podman: one ``NAME=value`` a line, taken literally."""
    return "".join(f"{name}={value}\n" for name, value in env.items())


# --- argv building (pure) ------------------------------------------------------------------


def _serving_args(profile: Profile, host: str) -> list[str]:
    """The arguments SGLang and vLLM spell alike: the served name, where to listen, and the
    reasoning parser."""
    args = ["--served-model-name", profile.model_name, "--host", host, "--port", str(profile.port)]
    if profile.reasoning_parser:
        args += ["--reasoning-parser", profile.reasoning_parser]
    return args


@dataclass(frozen=True)
class _EngineFlags:
    """How an engine spells the arguments ``engine_args`` gives it."""

    model: tuple[str, ...]  # before the model path (vLLM takes it as its first argument)
    tool_choice: tuple[str, ...]  # before --tool-call-parser
    attention_backend: str | None  # None: the profile's attention backend is not passed
    cache: tuple[str, ...]  # prefix caching and cached tokens in the usage
    context_length: str
    tp_size: str
    memory: str  # the profile's mem_fraction_static


_ENGINE_FLAGS: dict[Engine, _EngineFlags] = {
    "sglang": _EngineFlags(
        model=("--model-path",),
        tool_choice=(),
        attention_backend="--attention-backend",
        cache=("--enable-metrics", "--enable-cache-report"),
        context_length="--context-length",
        tp_size="--tp-size",
        memory="--mem-fraction-static",
    ),
    # Qwen3.5's hybrid layers: prefix caching is opt-in on vLLM and, for them, keeps states
    # in the "align" mode (vllm/config/cache.py MambaCacheMode; the flags are registered in
    # vllm/engine/arg_utils.py); cached_tokens in the usage only with
    # --enable-prompt-tokens-details (vllm/entrypoints/openai/cli_args.py).
    "vllm": _EngineFlags(
        model=(),
        tool_choice=("--enable-auto-tool-choice",),
        attention_backend=None,
        cache=(
            "--enable-prefix-caching",
            "--mamba-cache-mode",
            "align",
            "--enable-prompt-tokens-details",
        ),
        context_length="--max-model-len",
        tp_size="--tensor-parallel-size",
        memory="--gpu-memory-utilization",
    ),
}


def engine_args(profile: Profile, *, tp_size: int, host: str, model_path: str) -> list[str]:
    """The inference engine's own arguments (after the program name); never the key."""
    values = {
        "host": host,
        "port": str(profile.port),
        "model_path": model_path,
        "served_model_name": profile.model_name,
        "context_length": str(profile.context_length),
        "tp_size": str(tp_size),
    }
    if profile.engine_args is not None:
        return [a.format(**values) for a in profile.engine_args] + list(profile.extra_engine_args)
    flags = _ENGINE_FLAGS[profile.engine]
    args = [*flags.model, model_path, *_serving_args(profile, host)]
    if profile.tool_call_parser:
        args += [*flags.tool_choice, "--tool-call-parser", profile.tool_call_parser]
    if profile.attention_backend and flags.attention_backend:
        args += [flags.attention_backend, profile.attention_backend]
    args += flags.cache
    if profile.context_length:
        args += [flags.context_length, str(profile.context_length)]
    args += [flags.tp_size, str(tp_size)]
    if profile.mem_fraction_static is not None:
        args += [flags.memory, f"{profile.mem_fraction_static:g}"]
    return args + list(profile.extra_engine_args)


def default_command(profile: Profile) -> tuple[str, ...]:
    """The program (and its leading arguments) that runs the engine."""
    if profile.command:
        return profile.command
    if profile.kind == "native":
        module = (
            "vllm.entrypoints.openai.api_server"
            if profile.engine == "vllm"
            else ("sglang.launch_server")
        )
        return (profile.python, "-m", module)
    return (
        ("vllm", "serve") if profile.engine == "vllm" else ("python3", "-m", "sglang.launch_server")
    )


def container_labels(profile: Profile, home: Path) -> dict[str, str]:
    """Labels that let any Longdoc process find this container again."""
    return {
        LABEL_MANAGED: "1",
        LABEL_PROFILE: profile.name,
        LABEL_PORT: str(profile.port),
        LABEL_HOME: str(home),
    }


def container_argv(
    profile: Profile,
    *,
    runtime: str,
    tp_size: int,
    home: Path,
    env_file: Path,
    config_file: Path,
) -> list[str]:
    """The complete ``docker|podman run`` command line; pure, and free of the key.

    The environment comes from ``env_file`` (``--env-file``; ``--env NAME=value`` would be
    on the runtime's argv), and SGLang's key from ``config_file`` mounted read-only.
    """
    # --pull=never: the workstation is offline, and a missing image must fail at once with
    # the runtime's own message rather than after pull retries (docker >= 20.10, podman).
    argv = [runtime, "run", "--detach", "--pull=never", "--name", profile.container_name]
    for key, value in container_labels(profile, home).items():
        argv += ["--label", f"{key}={value}"]
    # Published on loopback only: nobody else on the network reaches the GPU server.
    argv += ["--publish", f"127.0.0.1:{profile.port}:{profile.port}"]
    argv += [f"--device={device}" for device in profile.devices]
    argv += list(profile.runtime_args)
    argv += ["--volume", f"{profile.model_dir}:{profile.model_mount}:ro"]
    if profile.engine == "sglang":
        argv += ["--volume", f"{config_file}:{CONTAINER_CONFIG}:ro"]
    for mount in profile.mounts:
        host, _, rest = mount.partition(":")
        argv += ["--volume", f"{Path(host).expanduser()}:{rest}"]
    argv += ["--env-file", str(env_file)]
    if profile.workdir:
        argv += ["--workdir", profile.workdir]
    argv += list(profile.extra_runtime_args)
    command = default_command(profile)
    argv += ["--entrypoint", command[0], profile.image, *command[1:]]
    if profile.engine == "sglang":
        argv += ["--config", CONTAINER_CONFIG]
    # Inside the container the engine listens on all interfaces; the publish line above
    # is what keeps it on the host's loopback.
    argv += engine_args(profile, tp_size=tp_size, host="0.0.0.0", model_path=profile.model_mount)
    return argv


def native_argv(profile: Profile, *, tp_size: int, config_file: Path) -> list[str]:
    """The host command line of a native profile; bound to 127.0.0.1 only; pure."""
    config = ["--config", str(config_file)] if profile.engine == "sglang" else []
    return [
        *default_command(profile),
        *config,
        *engine_args(profile, tp_size=tp_size, host="127.0.0.1", model_path=profile.model_dir),
    ]


def native_env(profile: Profile, base: Mapping[str, str], api_key: str = "") -> dict[str, str]:
    """The native process's environment: the caller's, offline, the profile's, vLLM's key.

    ``/proc/PID/environ`` is readable by the owner only, unlike ``/proc/PID/cmdline``.
    """
    return {**base, **container_env(profile, api_key)}
