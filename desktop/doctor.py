"""``longdoc doctor``: one checklist of everything Longdoc needs on this workstation.

Each check returns ok / warning / problem with one sentence of detail and, when it is not
ok, one sentence saying how to fix it. The CLI prints them (or JSON) and the app shows the
same list; nothing here imports Qt (Qt is probed in a child process).
"""

from __future__ import annotations

import grp
import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from desktop.errors import ServerRedirected
from desktop.net import auth_headers, urlopen

Status = Literal["ok", "warning", "problem"]

# Free space below which ingesting or storing answers is likely to fail.
DISK_PROBLEM_BYTES = 200 * 1024 * 1024
DISK_WARNING_BYTES = 2 * 1024 * 1024 * 1024
QT_PROBE_TIMEOUT_S = 60.0
HTTP_TIMEOUT_S = 5.0
# Qwen3.5's native context; a smaller server context refuses long documents.
NATIVE_CONTEXT = 262_144


@dataclass(frozen=True)
class Check:
    """One line of the checklist."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        """The documented JSON shape: name, status, detail, fix."""
        return asdict(self)


@dataclass(frozen=True)
class Context:
    """What the checks look at; plain values so tests can point them anywhere."""

    data_dir: Path
    profile_name: str
    container_runtime: str = ""
    endpoint: str = ""
    api_key: str = ""
    # The environment the display check reads (DISPLAY, WAYLAND_DISPLAY, QT_QPA_PLATFORM).
    environ: dict[str, str] | None = None


def has_problems(checks: list[Check]) -> bool:
    """True when at least one check is a problem (the CLI then exits with EXIT_DOCTOR)."""
    return any(c.status == "problem" for c in checks)


# --- the application side ---------------------------------------------------------------


def check_python() -> Check:
    """The interpreter running Longdoc (pyproject.toml requires 3.11+, so it is one)."""
    version = ".".join(str(p) for p in sys.version_info[:3])
    return Check("Python", "ok", f"Python {version} at {sys.executable}.")


def _probe_qt() -> None:
    import importlib

    for name in ("PySide6.QtWidgets", "PySide6.QtPdf", "PySide6.QtPdfWidgets"):
        importlib.import_module(name)
    print(importlib.import_module("PySide6").__version__)


def _probe_display() -> None:
    import importlib

    widgets = importlib.import_module("PySide6.QtWidgets")
    app = widgets.QApplication([])
    print(app.platformName())


# The probes a child process runs, by name (never code from outside). Qt stays out of the
# checking process: a broken Qt library can abort the process that loads it.
PROBES: dict[str, Callable[[], None]] = {"qt": _probe_qt, "display": _probe_display}


def run_probe(name: str) -> int:
    """In the child: run one named probe and return its exit code."""
    probe = PROBES.get(name)
    if probe is None:
        print(f"unknown probe {name!r}", file=sys.stderr)
        return 2
    try:
        probe()
    except Exception as exc:  # the message is the probe's result
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def _run_python(probe: str, env: dict[str, str]) -> tuple[int, str]:
    # A one-folder build has no `python -c`: the child is longdoc itself, told which probe
    # to run by LONGDOC_PROBE (desktop.cli.main checks it first).
    env = {**env, "LONGDOC_PROBE": probe}
    if getattr(sys, "frozen", False):
        argv = [sys.executable]
    else:
        argv = [
            sys.executable,
            "-c",
            "import sys; from desktop.cli.main import main; sys.exit(main())",
        ]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=QT_PROBE_TIMEOUT_S,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return 1, f"did not finish within {QT_PROBE_TIMEOUT_S:.0f} s"
    lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    return done.returncode, (lines[-1].strip() if lines else done.stdout.strip())


def check_qt() -> Check:
    """PySide6 with QtPdf imports (probed in a child so this process stays Qt-free)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    status, out = _run_python("qt", env)
    if status == 0:
        return Check("Qt", "ok", f"PySide6 {out} with QtPdf.")
    return Check(
        "Qt",
        "problem",
        f"PySide6 with QtPdf does not import: {out}.",
        "Reinstall Longdoc (its requirements pin PySide6 with QtPdf); on Debian/Ubuntu run "
        "packaging/install-system-deps.sh run for Qt's system libraries.",
    )


def check_display(environ: dict[str, str] | None = None) -> Check:
    """A display the app can open windows on (the command line works without one)."""
    env = dict(os.environ if environ is None else environ)
    platform = env.get("QT_QPA_PLATFORM", "")
    where = (
        f"QT_QPA_PLATFORM={platform}"
        if platform
        else ("Wayland" if env.get("WAYLAND_DISPLAY") else "")
        or (f"X11 display {env['DISPLAY']}" if env.get("DISPLAY") else "")
    )
    if not where:
        return Check(
            "Display",
            "warning",
            "No display (neither DISPLAY nor WAYLAND_DISPLAY is set): the desktop app cannot "
            "open; the command line works.",
            "Run Longdoc from a desktop session, or use the longdoc commands in a terminal.",
        )
    status, out = _run_python("display", env)
    if status == 0:
        return Check("Display", "ok", f"Qt opens windows through {where} ({out}).")
    return Check(
        "Display",
        "problem",
        f"Qt cannot use {where}: {out}.",
        "Install Qt's platform libraries (packaging/install-system-deps.sh run installs "
        "libxcb-cursor0 and friends), or check that the display is reachable.",
    )


def check_data_dir(data_dir: Path) -> Check:
    """The data directory: writable, private to this user, with free disk."""
    name = "Data directory"
    existing = data_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return Check(
            name,
            "problem",
            f"{existing} is not a directory, so {data_dir} cannot be created.",
            "Set LONGDOC_HOME to a directory you own.",
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        return Check(
            name,
            "problem",
            f"{existing} is not writable by you.",
            "Fix its owner or permissions, or set LONGDOC_HOME to a directory you own.",
        )
    free = shutil.disk_usage(existing).free
    free_text = f"{free / 1024**3:.1f} GiB free"
    if free < DISK_PROBLEM_BYTES:
        return Check(
            name,
            "problem",
            f"{data_dir}: only {free / 1024**2:.0f} MiB free on its disk.",
            "Free disk space (documents and answers are stored there).",
        )
    if data_dir.exists():
        mode = data_dir.stat().st_mode & 0o777
        if mode & 0o077:
            return Check(
                name,
                "warning",
                f"{data_dir} is readable by other users (mode {mode:o}).",
                f"Run `chmod 700 {data_dir}` (Longdoc also tightens it when it starts).",
            )
    if free < DISK_WARNING_BYTES:
        return Check(
            name,
            "warning",
            f"{data_dir}: {free_text}; large documents may not fit.",
            "Free some disk space.",
        )
    state = "private" if data_dir.exists() else "will be created, private"
    return Check(name, "ok", f"{data_dir} ({state}, {free_text}).")


def check_database(db_path: Path) -> Check:
    """The SQLite database is intact (quick_check, read-only)."""
    name = "Database"
    if not db_path.exists():
        return Check(name, "ok", f"{db_path} will be created on first use.")
    from desktop.store.db import damage

    result = damage(db_path)
    if result is None:
        return Check(name, "ok", f"{db_path} is intact.")
    return Check(
        name,
        "problem",
        f"{db_path} is damaged ({result}).",
        "Move it aside and start fresh with `longdoc reset-db` (the damaged file is kept "
        "for recovery).",
    )


# --- the server side ---------------------------------------------------------------------


@dataclass
class _ServerFacts:
    """What earlier checks learned, for later ones (runtime found, profile loaded...)."""

    profile: Any = None
    runtime: Any = None


def check_profile(ctx: Context, facts: _ServerFacts) -> Check:
    """The configured server profile loads and validates."""
    from server_manager.errors import ServerManagerError
    from server_manager.profiles import load_profile

    try:
        facts.profile = load_profile(ctx.profile_name, ctx.data_dir)
    except ServerManagerError as exc:
        return Check(
            "Server profile",
            "problem",
            str(exc),
            f"Fix {ctx.data_dir / 'profiles' / (ctx.profile_name + '.toml')}, or choose "
            "another profile in Settings (profile = ... in longdoc.toml).",
        )
    profile = facts.profile
    return Check(
        "Server profile",
        "ok",
        f"{profile.name}: {profile.kind} {profile.engine}"
        + (f" at {profile.url}" if profile.kind == "external" else f" on port {profile.port}"),
    )


def check_runtime(ctx: Context, facts: _ServerFacts) -> Check:
    """docker or podman installed and usable by this user."""
    from server_manager.errors import NoContainerRuntime, ServerManagerError
    from server_manager.runtime import Runtime, detect_runtime

    name = "Container runtime"
    try:
        runtime = Runtime(detect_runtime(facts.profile.runtime or ctx.container_runtime))
        runtime.check_usable()
    except NoContainerRuntime as exc:
        return Check(
            name,
            "problem",
            str(exc),
            "Install podman (`sudo apt install podman`) or docker, or use the native profile.",
        )
    except ServerManagerError as exc:
        return Check(
            name,
            "problem",
            str(exc),
            "Use rootless podman, or ask your administrator to add you to the docker group.",
        )
    facts.runtime = runtime
    return Check(name, "ok", f"{runtime.name} ({runtime.executable}) answers.")


def check_image(ctx: Context, facts: _ServerFacts) -> Check:
    """The profile's image is already on this machine (nothing can be pulled offline)."""
    profile, runtime = facts.profile, facts.runtime
    name = "Server image"
    if runtime is None:
        return Check(name, "warning", "Not checked: no usable container runtime.", "See above.")
    if runtime.image_exists(profile.image):
        return Check(name, "ok", f"{profile.image} is present.")
    return Check(
        name,
        "problem",
        f"The image {profile.image} is not present locally.",
        f"Load it from a tarball made on a networked machine: `{runtime.name} load -i "
        f"sglang-image.tar` (made there with `{runtime.name} save -o sglang-image.tar "
        f"{profile.image}`).",
    )


def _groups_of_user() -> set[str]:
    gids = set(os.getgroups()) | {os.getgid()}
    names = set()
    for gid in gids:
        try:
            names.add(grp.getgrgid(gid).gr_name)
        except KeyError:
            continue
    return names


def check_gpu_devices(ctx: Context, facts: _ServerFacts) -> Check:
    """The GPU device nodes exist (/dev/kfd, /dev/dri for ROCm)."""
    profile = facts.profile
    name = "GPU devices"
    nodes = [d.split(":")[0] for d in profile.devices if d.startswith("/")]
    if not nodes and profile.gpu_vendor == "amd":
        nodes = ["/dev/kfd", "/dev/dri"]
    if not nodes:
        return Check(name, "ok", "The profile passes no device nodes (the runtime handles GPUs).")
    missing = [n for n in nodes if not Path(n).exists()]
    if missing:
        return Check(
            name,
            "problem",
            f"Missing: {', '.join(missing)}.",
            "Install the amdgpu driver and ROCm (see AMD's ROCm install guide) and reboot."
            if profile.gpu_vendor == "amd"
            else "Install the GPU driver and reboot.",
        )
    return Check(name, "ok", f"{', '.join(nodes)} present.")


def check_gpu_groups(ctx: Context, facts: _ServerFacts) -> Check:
    """Membership in video and render, which ROCm's device nodes require."""
    name = "GPU permissions"
    if os.geteuid() == 0:
        return Check(name, "ok", "Running as root.")
    wanted = []
    for group in ("video", "render"):
        try:
            grp.getgrnam(group)
        except KeyError:
            continue
        wanted.append(group)
    missing = sorted(set(wanted) - _groups_of_user())
    if missing:
        return Check(
            name,
            "problem",
            f"You are not in the group(s) {', '.join(missing)}, which the GPU devices need.",
            f"Run `sudo usermod -aG {','.join(missing)} $USER`, then log out and back in.",
        )
    return Check(name, "ok", f"Member of {', '.join(wanted) or 'the GPU groups'}.")


def check_gpu_tools(ctx: Context, facts: _ServerFacts) -> Check:
    """amd-smi/rocm-smi (or nvidia-smi), which the server panel uses for GPU memory."""
    tools = ("nvidia-smi",) if facts.profile.gpu_vendor == "nvidia" else ("amd-smi", "rocm-smi")
    found = [t for t in tools if shutil.which(t)]
    if found:
        return Check("GPU tools", "ok", f"{found[0]} found.")
    return Check(
        "GPU tools",
        "warning",
        f"None of {', '.join(tools)} is installed: the server panel cannot show GPU memory.",
        "Install amd-smi (part of ROCm)."
        if facts.profile.gpu_vendor != "nvidia"
        else "Install the NVIDIA driver utilities.",
    )


def _weights(model_dir: Path) -> tuple[list[Path], list[str]]:
    """Weight files present, and shards an index lists that are missing."""
    present = [
        p
        for pattern in ("*.safetensors", "*.bin", "*.gguf", "*.pt")
        for p in model_dir.glob(pattern)
    ]
    missing: list[str] = []
    for index in model_dir.glob("*.index.json"):
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {})
        except (OSError, ValueError, AttributeError):
            missing.append(f"{index.name} (unreadable)")
            continue
        for shard in sorted(set(weight_map.values()) if isinstance(weight_map, dict) else ()):
            if not (model_dir / str(shard)).is_file():
                missing.append(str(shard))
    return present, missing


def check_model_dir(ctx: Context, facts: _ServerFacts) -> Check:
    """The model folder holds config.json, every weight shard and the tokenizer."""
    profile = facts.profile
    name = "Model folder"
    override = ctx.data_dir / "profiles" / f"{profile.name}.toml"
    if not profile.model_dir:
        return Check(
            name, "problem", "The profile names no model_dir.", f"Set model_dir in {override}."
        )
    model_dir = Path(profile.model_dir)
    if not model_dir.is_dir():
        return Check(
            name,
            "problem",
            f"{model_dir} does not exist.",
            f"Copy the model there, or set model_dir in {override} to where it is.",
        )
    lacking = []
    if not (model_dir / "config.json").is_file():
        lacking.append("config.json")
    present, missing = _weights(model_dir)
    if not present:
        lacking.append("weights (*.safetensors)")
    lacking += [f"weight shard {m}" for m in missing[:3]]
    if len(missing) > 3:
        lacking.append(f"{len(missing) - 3} more shards")
    if not any((model_dir / t).is_file() for t in ("tokenizer.json", "tokenizer.model")):
        lacking.append("tokenizer (tokenizer.json)")
    if lacking:
        return Check(
            name,
            "problem",
            f"{model_dir} is incomplete: no {', '.join(lacking)}.",
            "Copy the whole model folder again (config.json, every *.safetensors shard, "
            "tokenizer.json and tokenizer_config.json).",
        )
    size = sum(p.stat().st_size for p in present)
    return Check(
        name, "ok", f"{model_dir} ({len(present)} weight files, {size / 1024**3:.1f} GiB)."
    )


def check_port(ctx: Context, facts: _ServerFacts) -> Check:
    """The profile's port is free, or held by Longdoc's own server."""
    from server_manager.errors import PortInUse
    from server_manager.preflight import check_port as bind_port
    from server_manager.state import Paths, read_state

    port = facts.profile.port
    state = read_state(Paths(ctx.data_dir))
    if state is not None and state.port == port and state.state in ("starting", "ready"):
        return Check("Port", "ok", f"Port {port} is held by Longdoc's server ({state.state}).")
    try:
        bind_port(port)
    except PortInUse:
        return Check(
            "Port",
            "problem",
            f"Port {port} on 127.0.0.1 is used by another program.",
            f"Stop that program (`ss -ltnp 'sport = :{port}'` names it) or set another port "
            f"in {ctx.data_dir / 'profiles' / (facts.profile.name + '.toml')}.",
        )
    except OSError as exc:
        return Check("Port", "warning", f"Could not test port {port}: {exc.strerror}.")
    return Check("Port", "ok", f"Port {port} is free.")


def _get_json(url: str, api_key: str) -> tuple[int, Any]:
    """GET with the clients' proxy rule (none for loopback); status 0 = no answer."""
    request = urllib.request.Request(url, headers=auth_headers(api_key))
    try:
        with urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            body = response.read()
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, None
    except (urllib.error.URLError, OSError, ValueError):
        return 0, None
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


def _server_key(ctx: Context, facts: _ServerFacts) -> str:
    from server_manager.state import Paths, read_api_key

    if ctx.api_key:
        return ctx.api_key
    if facts.profile is not None and facts.profile.api_key:
        return str(facts.profile.api_key)
    return read_api_key(Paths(ctx.data_dir))


def check_server(ctx: Context, facts: _ServerFacts) -> list[Check]:
    """The server answers with the key, and its context length matches the profile."""
    profile = facts.profile
    endpoint = (ctx.endpoint or (profile.endpoint if profile is not None else "")).rstrip("/")
    if endpoint.endswith("/v1"):
        endpoint = endpoint[: -len("/v1")]
    if not endpoint:
        return [
            Check(
                "Server",
                "problem",
                "No server is configured.",
                "Set endpoint in Settings, or choose a managed profile.",
            )
        ]
    try:
        status, data = _get_json(f"{endpoint}/v1/models", _server_key(ctx, facts))
    except ServerRedirected as exc:
        return [
            Check(
                "Server",
                "problem",
                str(exc),
                "Set the endpoint to the server's own address (the one the redirect names "
                "only if you trust that host).",
            )
        ]
    managed = not ctx.endpoint and profile is not None and profile.kind != "external"
    if status == 0:
        if managed:
            return [
                Check(
                    "Server",
                    "warning",
                    f"Longdoc's server is not running at {endpoint}.",
                    "Start it with `longdoc server start` (or Start in the app's server panel).",
                )
            ]
        return [
            Check(
                "Server",
                "problem",
                f"Nothing answers at {endpoint}.",
                "Check that the server runs and the endpoint in Settings is right.",
            )
        ]
    if status in (401, 403):
        return [
            Check(
                "Server",
                "problem",
                f"The server at {endpoint} refuses the API key (HTTP {status}).",
                "Set the server's key in Settings (api_key) or LONGDOC_API_KEY.",
            )
        ]
    if status == 503:
        return [
            Check(
                "Server",
                "warning",
                f"The server at {endpoint} is still loading.",
                "Wait for it (`longdoc server status` shows its progress).",
            )
        ]
    cards = data.get("data") if isinstance(data, dict) else None
    if status != 200 or not isinstance(cards, list) or not cards:
        return [
            Check(
                "Server",
                "problem",
                f"The server at {endpoint} gave HTTP {status} without a model list.",
                "Check that the endpoint is an OpenAI-compatible server (…/v1/models).",
            )
        ]
    card = cards[0] if isinstance(cards[0], dict) else {}
    model = str(card.get("id", "?"))
    checks = [Check("Server", "ok", f"{endpoint} answers with the key; model {model}.")]
    context = card.get("max_model_len")
    wanted = int(getattr(profile, "context_length", 0) or 0)
    if not isinstance(context, int) or context <= 0:
        checks.append(
            Check(
                "Context length",
                "warning",
                "The server does not report its context length (max_model_len).",
                "Set context_length in longdoc.toml (or --context-length) to the server's.",
            )
        )
    elif wanted and context < wanted:
        checks.append(
            Check(
                "Context length",
                "problem",
                f"The server's context is {context:,} tokens but the profile asks for {wanted:,}.",
                "Restart the server (`longdoc server restart`) so it takes the profile's "
                "context_length; check --context-length in its log.",
            )
        )
    elif context < NATIVE_CONTEXT:
        checks.append(
            Check(
                "Context length",
                "warning",
                f"The server's context is {context:,} tokens, less than Qwen3.5's "
                f"{NATIVE_CONTEXT:,}: longer documents are refused.",
                "Raise context_length in the profile if the GPUs have the memory.",
            )
        )
    else:
        checks.append(Check("Context length", "ok", f"{context:,} tokens."))
    return checks


def _guarded(name: str, check: Callable[[], Check | list[Check]]) -> list[Check]:
    """A check that crashes is itself a problem line, never a traceback."""
    try:
        result = check()
    except Exception as exc:  # the checklist must always complete
        return [Check(name, "problem", f"The check failed: {exc}.", "Report this as a bug.")]
    return result if isinstance(result, list) else [result]


def iter_checks(ctx: Context, *, probe_qt: bool = True) -> Iterator[Check]:
    """Every check in order, cheapest and most fundamental first."""
    yield from _guarded("Python", check_python)
    if probe_qt:
        yield from _guarded("Qt", check_qt)
        yield from _guarded("Display", lambda: check_display(ctx.environ))
    yield from _guarded("Data directory", lambda: check_data_dir(ctx.data_dir))
    yield from _guarded("Database", lambda: check_database(ctx.data_dir / "longdoc.db"))
    facts = _ServerFacts()
    profile_check = _guarded("Server profile", lambda: check_profile(ctx, facts))
    yield from profile_check
    profile = facts.profile
    if profile is not None and not ctx.endpoint and profile.kind != "external":
        if profile.kind == "container":
            yield from _guarded("Container runtime", lambda: check_runtime(ctx, facts))
            yield from _guarded("Server image", lambda: check_image(ctx, facts))
        if profile.gpu_vendor in ("amd", "nvidia"):
            yield from _guarded("GPU devices", lambda: check_gpu_devices(ctx, facts))
            if profile.gpu_vendor == "amd":
                yield from _guarded("GPU permissions", lambda: check_gpu_groups(ctx, facts))
            yield from _guarded("GPU tools", lambda: check_gpu_tools(ctx, facts))
        yield from _guarded("Model folder", lambda: check_model_dir(ctx, facts))
        yield from _guarded("Port", lambda: check_port(ctx, facts))
    yield from _guarded("Server", lambda: check_server(ctx, facts))


def run_checks(ctx: Context, *, probe_qt: bool = True) -> list[Check]:
    """The whole checklist as a list."""
    return list(iter_checks(ctx, probe_qt=probe_qt))
