"""Server profiles: TOML files that say how to run (or reach) the inference server.

Bundled profiles live in ``resources/profiles``; ``<data_dir>/profiles/NAME.toml`` overrides
the bundled profile of the same name key by key, or adds a new one (``extends = "sglang-rocm"``
starts from another profile). Building the ``docker|podman run`` line and the engine's
arguments is pure: everything here can be tested without a runtime or a GPU.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from server_manager.errors import ProfileInvalid

Kind = Literal["container", "native", "external"]
Engine = Literal["sglang", "vllm"]
GpuVendor = Literal["amd", "nvidia", "none"]

KINDS: tuple[Kind, ...] = ("container", "native", "external")
ENGINES: tuple[Engine, ...] = ("sglang", "vllm")
GPU_VENDORS: tuple[GpuVendor, ...] = ("amd", "nvidia", "none")


def _bundled_dir() -> Path:
    """The checkout's ``resources/profiles``, or the copy a wheel installs under the prefix."""
    source = Path(__file__).resolve().parents[1] / "resources" / "profiles"
    if source.is_dir():
        return source
    return Path(sys.prefix) / "share" / "longdoc" / "profiles"


BUNDLED_DIR = _bundled_dir()
DEFAULT_PROFILE = "sglang-rocm"
LABEL_MANAGED = "longdoc.managed"
LABEL_PROFILE = "longdoc.profile"
LABEL_PORT = "longdoc.port"
LABEL_HOME = "longdoc.home"
# Placeholders allowed in `engine_args` (which replaces the generated engine arguments).
PLACEHOLDERS = (
    "host",
    "port",
    "api_key",
    "model_path",
    "served_model_name",
    "context_length",
    "tp_size",
)


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
    """One validated profile; paths are expanded, defaults filled in."""

    name: str
    source: Path
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
        """The name the server lists in /v1/models."""
        if self.served_model_name:
            return self.served_model_name
        return Path(self.model_dir).name if self.model_dir else ""

    @property
    def endpoint(self) -> str:
        """Base URL clients use (no ``/v1``)."""
        if self.kind == "external":
            return self.url.rstrip("/")
        return f"http://127.0.0.1:{self.port}"

    @property
    def container_name(self) -> str:
        """Stable name so a second process finds the same container."""
        return f"longdoc-{self.engine}-{self.port}"


# --- loading -------------------------------------------------------------------------------

_STR = "a string"
_INT = "an integer"
_NUM = "a number"
_LIST = "a list of strings"
_TABLE = "a table of strings"

_KEYS: dict[str, str] = {
    "description": _STR,
    "extends": _STR,
    "kind": _STR,
    "engine": _STR,
    "gpu_vendor": _STR,
    "image": _STR,
    "command": _LIST,
    "model_dir": _STR,
    "model_mount": _STR,
    "served_model_name": _STR,
    "port": _INT,
    "context_length": _INT,
    "tp_size": _INT,
    "mem_fraction_static": _NUM,
    "attention_backend": _STR,
    "reasoning_parser": _STR,
    "tool_call_parser": _STR,
    "engine_args": _LIST,
    "extra_engine_args": _LIST,
    "runtime_args": _LIST,
    "extra_runtime_args": _LIST,
    "env": _TABLE,
    "mounts": _LIST,
    "devices": _LIST,
    "runtime": _STR,
    "python": _STR,
    "workdir": _STR,
    "url": _STR,
    "api_key": _STR,
    "grace_period_s": _NUM,
    "ready_timeout_s": _NUM,
    "restart": "a table",
}
_RESTART_KEYS = ("max_restarts", "window_s", "backoff_base_s", "backoff_max_s")


def _check_type(path: Path, key: str, value: Any, kind: str) -> None:
    ok = {
        _STR: isinstance(value, str),
        _INT: isinstance(value, int) and not isinstance(value, bool),
        _NUM: isinstance(value, int | float) and not isinstance(value, bool),
        _LIST: isinstance(value, list) and all(isinstance(v, str) for v in value),
        _TABLE: isinstance(value, dict) and all(isinstance(v, str) for v in value.values()),
        "a table": isinstance(value, dict),
    }[kind]
    if not ok:
        raise ProfileInvalid(f"{path}: {key} must be {kind}, not {value!r}.")


def _read_raw(path: Path) -> dict[str, Any]:
    """One file's keys, checked for names and types (not yet for meaning)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProfileInvalid(f"{path}: cannot be read ({exc.strerror}).") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProfileInvalid(f"{path}: not valid TOML ({exc}).") from exc
    for key, value in raw.items():
        if key not in _KEYS:
            raise ProfileInvalid(f"{path}: unknown key {key!r}.")
        _check_type(path, key, value, _KEYS[key])
    for key, value in raw.get("restart", {}).items():
        if key not in _RESTART_KEYS:
            raise ProfileInvalid(f"{path}: unknown key 'restart.{key}'.")
        _check_type(path, f"restart.{key}", value, _INT if key == "max_restarts" else _NUM)
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
    return profile_from_dict(name, raw, source)


def _expand(path: str) -> str:
    return str(Path(path).expanduser()) if path else ""


def profile_from_dict(name: str, raw: Mapping[str, Any], source: Path) -> Profile:
    """Validate merged keys into a Profile (types were checked per file already)."""
    for key, value in raw.items():
        if key not in _KEYS:
            raise ProfileInvalid(f"{source}: unknown key {key!r}.")
        _check_type(source, key, value, _KEYS[key])

    def bad(key: str, why: str) -> ProfileInvalid:
        return ProfileInvalid(f"{source}: {key} {why}.")

    kind = raw.get("kind", "container")
    if kind not in KINDS:
        raise bad("kind", f"must be one of {', '.join(KINDS)}, not {kind!r}")
    engine = raw.get("engine", "sglang")
    if engine not in ENGINES:
        raise bad("engine", f"must be one of {', '.join(ENGINES)}, not {engine!r}")
    vendor = raw.get("gpu_vendor", "amd")
    if vendor not in GPU_VENDORS:
        raise bad("gpu_vendor", f"must be one of {', '.join(GPU_VENDORS)}, not {vendor!r}")
    port = raw.get("port", 30000)
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
    if kind == "container" and not raw.get("image"):
        raise bad("image", "is required for a container profile")
    if kind in ("container", "native") and not raw.get("model_dir"):
        raise bad("model_dir", "is required (the local directory holding the model)")
    if kind == "external" and not str(raw.get("url", "")).startswith(("http://", "https://")):
        raise bad("url", "must start with http:// or https:// for an external profile")

    restart = RestartPolicy(**{k: v for k, v in restart_raw.items()})
    engine_args = raw.get("engine_args")
    return Profile(
        name=name,
        source=source,
        kind=kind,
        engine=engine,
        gpu_vendor=vendor,
        image=raw.get("image", ""),
        command=tuple(raw.get("command", ())),
        model_dir=_expand(raw.get("model_dir", "")),
        model_mount=raw.get("model_mount", "/model"),
        served_model_name=raw.get("served_model_name", ""),
        port=port,
        context_length=raw.get("context_length", 0),
        tp_size=raw.get("tp_size", 0),
        mem_fraction_static=float(mem) if mem is not None else None,
        attention_backend=raw.get("attention_backend", ""),
        reasoning_parser=raw.get("reasoning_parser", "qwen3"),
        tool_call_parser=raw.get("tool_call_parser", "qwen3_coder"),
        engine_args=tuple(engine_args) if engine_args is not None else None,
        extra_engine_args=tuple(raw.get("extra_engine_args", ())),
        runtime_args=tuple(raw.get("runtime_args", ())),
        extra_runtime_args=tuple(raw.get("extra_runtime_args", ())),
        env=dict(raw.get("env", {})),
        mounts=tuple(raw.get("mounts", ())),
        devices=tuple(raw.get("devices", ())),
        runtime=raw.get("runtime", ""),
        python=raw.get("python", "python3"),
        workdir=raw.get("workdir", ""),
        url=raw.get("url", ""),
        api_key=raw.get("api_key", ""),
        grace_period_s=float(raw.get("grace_period_s", 30.0)),
        ready_timeout_s=float(raw.get("ready_timeout_s", 1800.0)),
        restart=restart,
    )


# --- argv building (pure) ------------------------------------------------------------------


def engine_args(
    profile: Profile, *, api_key: str, tp_size: int, host: str, model_path: str
) -> list[str]:
    """The inference engine's own arguments (after the program name)."""
    values = {
        "host": host,
        "port": str(profile.port),
        "api_key": api_key,
        "model_path": model_path,
        "served_model_name": profile.model_name,
        "context_length": str(profile.context_length),
        "tp_size": str(tp_size),
    }
    if profile.engine_args is not None:
        return [a.format(**values) for a in profile.engine_args] + list(profile.extra_engine_args)
    if profile.engine == "vllm":
        args = [
            model_path,
            "--served-model-name",
            profile.model_name,
            "--host",
            host,
            "--port",
            str(profile.port),
            "--api-key",
            api_key,
        ]
        if profile.reasoning_parser:
            args += ["--reasoning-parser", profile.reasoning_parser]
        if profile.tool_call_parser:
            args += ["--enable-auto-tool-choice", "--tool-call-parser", profile.tool_call_parser]
        if profile.context_length:
            args += ["--max-model-len", str(profile.context_length)]
        args += ["--tensor-parallel-size", str(tp_size)]
        if profile.mem_fraction_static is not None:
            args += ["--gpu-memory-utilization", f"{profile.mem_fraction_static:g}"]
        return args + list(profile.extra_engine_args)
    args = [
        "--model-path",
        model_path,
        "--served-model-name",
        profile.model_name,
        "--host",
        host,
        "--port",
        str(profile.port),
        "--api-key",
        api_key,
    ]
    if profile.reasoning_parser:
        args += ["--reasoning-parser", profile.reasoning_parser]
    if profile.tool_call_parser:
        args += ["--tool-call-parser", profile.tool_call_parser]
    if profile.attention_backend:
        args += ["--attention-backend", profile.attention_backend]
    args += ["--enable-metrics", "--enable-cache-report"]
    if profile.context_length:
        args += ["--context-length", str(profile.context_length)]
    args += ["--tp-size", str(tp_size)]
    if profile.mem_fraction_static is not None:
        args += ["--mem-fraction-static", f"{profile.mem_fraction_static:g}"]
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


def container_env(profile: Profile) -> dict[str, str]:
    """Environment inside the container: offline by default, then the profile's."""
    return {"HF_HUB_OFFLINE": "1", **profile.env}


def container_argv(
    profile: Profile, *, runtime: str, api_key: str, tp_size: int, home: Path
) -> list[str]:
    """The complete ``docker|podman run`` command line; pure."""
    argv = [runtime, "run", "--detach", "--name", profile.container_name]
    for key, value in container_labels(profile, home).items():
        argv += ["--label", f"{key}={value}"]
    # Published on loopback only: nobody else on the network reaches the GPU server.
    argv += ["--publish", f"127.0.0.1:{profile.port}:{profile.port}"]
    argv += [f"--device={device}" for device in profile.devices]
    argv += list(profile.runtime_args)
    argv += ["--volume", f"{profile.model_dir}:{profile.model_mount}:ro"]
    for mount in profile.mounts:
        host, _, rest = mount.partition(":")
        argv += ["--volume", f"{Path(host).expanduser()}:{rest}"]
    for key, value in container_env(profile).items():
        argv += ["--env", f"{key}={value}"]
    if profile.workdir:
        argv += ["--workdir", profile.workdir]
    argv += list(profile.extra_runtime_args)
    command = default_command(profile)
    argv += ["--entrypoint", command[0], profile.image, *command[1:]]
    # Inside the container the engine listens on all interfaces; the publish line above
    # is what keeps it on the host's loopback.
    argv += engine_args(
        profile, api_key=api_key, tp_size=tp_size, host="0.0.0.0", model_path=profile.model_mount
    )
    return argv


def native_argv(profile: Profile, *, api_key: str, tp_size: int) -> list[str]:
    """The host command line of a native profile; bound to 127.0.0.1 only; pure."""
    return [
        *default_command(profile),
        *engine_args(
            profile,
            api_key=api_key,
            tp_size=tp_size,
            host="127.0.0.1",
            model_path=profile.model_dir,
        ),
    ]


def native_env(profile: Profile, base: Mapping[str, str]) -> dict[str, str]:
    """The native process's environment: the caller's, offline, then the profile's."""
    return {**base, "HF_HUB_OFFLINE": "1", **profile.env}
