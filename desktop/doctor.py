"""``longdoc doctor``: one checklist of everything Longdoc needs on this workstation.

Each check returns ok / warning / problem with one sentence of detail and, when it is not
ok, one sentence saying how to fix it. The CLI prints them (or JSON) and the app shows the
same list; nothing here imports Qt (Qt is probed in a child process).
"""

from __future__ import annotations

import grp
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from desktop.config import Settings

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

    @classmethod
    def of(cls, settings: Settings) -> Context:
        """What the checks look at for these settings, in this user's data directory."""
        from desktop.config import data_dir

        return cls(
            data_dir=data_dir(),
            profile_name=settings.profile,
            container_runtime=settings.container_runtime,
            endpoint=settings.endpoint,
            api_key=settings.api_key,
        )


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


def _probe_check(
    name: str,
    probe: str,
    env: dict[str, str],
    ok: Callable[[str], str],
    problem: Callable[[str], str],
    fix: str,
) -> Check:
    """Check ``name`` by a child's ``probe``: its last line worded by ``ok`` or ``problem``."""
    status, out = _run_python(probe, env)
    if status == 0:
        return Check(name, "ok", ok(out))
    return Check(name, "problem", problem(out), fix)


def check_qt() -> Check:
    """PySide6 with QtPdf imports (probed in a child so this process stays Qt-free)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return _probe_check(
        "Qt",
        "qt",
        env,
        lambda out: f"PySide6 {out} with QtPdf.",
        lambda out: f"PySide6 with QtPdf does not import: {out}.",
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
    return _probe_check(
        "Display",
        "display",
        env,
        lambda out: f"Qt opens windows through {where} ({out}).",
        lambda out: f"Qt cannot use {where}: {out}.",
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
    from desktop.store.db import read_only_reason

    reason = read_only_reason(existing)
    if reason is not None:
        what, _, fix = reason.partition(": ")
        return Check(
            name, "problem", what[0].upper() + what[1:] + ".", fix[0].upper() + fix[1:] + "."
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
    """The configured server profile loads and validates (with an endpoint: that server)."""
    from longdoc_net.endpoint import api_root
    from server_manager.errors import ServerManagerError
    from server_manager.profiles import load_profile

    if ctx.endpoint:
        # The app and the CLI then use that server and no profile: say so, not the profile's.
        return Check(
            "Server profile",
            "ok",
            f"external: the endpoint {api_root(ctx.endpoint)} (the endpoint setting or "
            f"LONGDOC_ENDPOINT), which Longdoc does not start or stop; the profile "
            f"{ctx.profile_name} is not used while an endpoint is set.",
        )
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
        + (f" at {profile.url}" if profile.is_external else f" on port {profile.port}"),
    )


def _preflight(ctx: Context, facts: _ServerFacts) -> list[Check]:
    """The start's own checks (``server_manager.preflight.findings``), one line each."""
    from longdoc_net.endpoint import Phase
    from server_manager.preflight import findings
    from server_manager.state import Paths, read_state

    def held_by_us(port: int) -> str:
        state = read_state(Paths(ctx.data_dir))
        if (
            state is not None
            and state.port == port
            and state.state in (Phase.STARTING, Phase.READY)
        ):
            return str(state.state)
        return ""

    found, facts.runtime = findings(facts.profile, ctx.container_runtime, held_by_us)
    return [
        Check(
            f.name,
            "warning" if f.skipped else "problem" if f.problem is not None else "ok",
            f.detail,
            f.fix,
        )
        for f in found
    ]


def _groups_of_user() -> set[str]:
    gids = set(os.getgroups()) | {os.getgid()}
    names = set()
    for gid in gids:
        try:
            names.add(grp.getgrgid(gid).gr_name)
        except KeyError:
            continue
    return names


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


def _server_key(ctx: Context, facts: _ServerFacts) -> str:
    from server_manager.state import Paths, read_api_key

    if ctx.api_key or ctx.endpoint:
        return ctx.api_key  # an endpoint gets the key set for it, as the app sends it
    if facts.profile is not None and facts.profile.api_key:
        return str(facts.profile.api_key)
    return read_api_key(Paths(ctx.data_dir))


def check_server(ctx: Context, facts: _ServerFacts) -> list[Check]:
    """The server answers with the key, and its context length matches the profile."""
    from longdoc_net.endpoint import Failure, api_root, classify, list_models, models_url
    from longdoc_net.redirects import redirect_message

    profile = facts.profile
    endpoint = api_root(ctx.endpoint or (profile.endpoint if profile is not None else ""))
    if not endpoint:
        return [
            Check(
                "Server",
                "problem",
                "No server is configured.",
                "Set endpoint in Settings, or choose a managed profile.",
            )
        ]
    reply, cards = list_models(endpoint, _server_key(ctx, facts), timeout=HTTP_TIMEOUT_S)
    status = reply.status
    if 300 <= status < 400:
        return [
            Check(
                "Server",
                "problem",
                redirect_message(endpoint, status, reply.location),
                "Set the endpoint to the server's own address.",
            )
        ]
    failure = classify(status) if status != 200 else None
    managed = not ctx.endpoint and profile is not None and not profile.is_external
    if failure == Failure.UNREACHABLE:
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
    if failure == Failure.UNAUTHORIZED:
        return [
            Check(
                "Server",
                "problem",
                f"The server at {endpoint} refuses the API key (HTTP {status}).",
                "Set the server's key in Settings (api_key) or LONGDOC_API_KEY.",
            )
        ]
    if failure == Failure.LOADING:
        return [
            Check(
                "Server",
                "warning",
                f"The server at {endpoint} is still loading.",
                "Wait for it (`longdoc server status` shows its progress).",
            )
        ]
    if not cards:
        return [
            Check(
                "Server",
                "problem",
                f"The server at {endpoint} gave HTTP {status} without a model list.",
                f"Check that the endpoint is an OpenAI-compatible server ({models_url(endpoint)}).",
            )
        ]
    card = cards[0]
    checks = [Check("Server", "ok", f"{endpoint} answers with the key; model {card.id}.")]
    context = card.max_model_len
    wanted = int(getattr(profile, "context_length", 0) or 0)
    if context is None:
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
    if profile is not None and not ctx.endpoint and not profile.is_external:
        yield from _guarded("Server checks", lambda: _preflight(ctx, facts))
        if profile.gpu_vendor == "amd":
            yield from _guarded("GPU permissions", lambda: check_gpu_groups(ctx, facts))
        if profile.gpu_vendor in ("amd", "nvidia"):
            yield from _guarded("GPU tools", lambda: check_gpu_tools(ctx, facts))
    yield from _guarded("Server", lambda: check_server(ctx, facts))


def run_checks(ctx: Context, *, probe_qt: bool = True) -> list[Check]:
    """The whole checklist as a list."""
    return list(iter_checks(ctx, probe_qt=probe_qt))
