"""A real X display for GUI tests, and the check that a test run leaves no process behind.

Qt picks its platform once per process, and most GUI tests run offscreen (fast, no
display). A test marked ``@pytest.mark.xvfb`` needs what only a real display does (scroll
bars that show and hide, a cursor position, a window manager's geometry): in an offscreen
run it is re-run alone in a child pytest on a private Xvfb server (``QT_QPA_PLATFORM=xcb``)
that this plugin starts once per run, and its outcome is reported as the test's.
``@pytest.mark.xvfb(wm=True)`` runs it under a window manager (openbox) on another Xvfb.

Every process started during the run inherits ``LONGDOC_TEST_RUN``; when the run ends, any
process still carrying it (a daemonised supervisor, a native engine, a test server, a
private dockerd) fails the run, named. A container does not inherit it (podman's conmon
and the container's processes get their own environment), so the run also fails on any
running container labelled with a Longdoc data directory inside the run's temporary folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from _pytest.reports import TestReport

RUN_VARIABLE = "LONGDOC_TEST_RUN"
_XVFB_SCREEN = "1920x1200x24"  # room for the 1400x860 and default-size windows the tests use


def on_real_display() -> bool:
    """True in the child run: Qt draws on an X server, not offscreen."""
    return os.environ.get("QT_QPA_PLATFORM") == "xcb" and bool(os.environ.get("DISPLAY"))


class _Display:
    """One Xvfb server (and optionally a window manager on it), started on first use."""

    def __init__(self, wm: bool) -> None:
        self.wm = wm
        self.name = ""
        self._procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> str:
        if self.name:
            return self.name
        xvfb = shutil.which("Xvfb")
        if xvfb is None:
            raise RuntimeError("Xvfb is not installed (packaging/install-system-deps.sh test)")
        read, write = os.pipe()
        server = subprocess.Popen(
            [xvfb, "-displayfd", str(write), "-screen", "0", _XVFB_SCREEN, "-nolisten", "tcp"],
            pass_fds=(write,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write)
        self._procs.append(server)
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()  # Xvfb writes it once it accepts clients
        if not number:
            self.stop()
            raise RuntimeError("Xvfb did not start")
        self.name = f":{number}"
        if self.wm:
            openbox = shutil.which("openbox")
            if openbox is None:
                self.stop()
                raise RuntimeError("openbox is not installed (install-system-deps.sh test)")
            manager = subprocess.Popen(
                [openbox, "--sm-disable"],
                env={**os.environ, "DISPLAY": self.name},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self._procs.append(manager)
            _wait_for_wm(self.name)
        return self.name

    def stop(self) -> None:
        for proc in reversed(self._procs):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()
        self.name = ""


def _wait_for_wm(display: str) -> None:
    """Until the window manager has claimed the screen (its _NET_SUPPORTING_WM_CHECK)."""
    xprop = shutil.which("xprop")
    if xprop is None:
        return
    for _ in range(200):
        out = subprocess.run(
            [xprop, "-root", "_NET_SUPPORTING_WM_CHECK"],
            env={**os.environ, "DISPLAY": display},
            capture_output=True,
            text=True,
        ).stdout
        if "window id" in out:
            return
        time.sleep(0.05)


_displays = {False: _Display(wm=False), True: _Display(wm=True)}


_RESULTS_VARIABLE = "LONGDOC_DISPLAY_RESULTS"  # the child writes its outcomes there
_results: dict[bool, dict[str, dict[str, object]]] = {}  # wm -> nodeid -> outcome


def _xvfb_items(session: pytest.Session, wm: bool) -> list[pytest.Item]:
    return [
        item
        for item in session.items
        if (marker := item.get_closest_marker("xvfb")) is not None
        and bool(marker.kwargs.get("wm", False)) == wm
    ]


def _run_children(session: pytest.Session, wm: bool, limit: int) -> dict[str, dict[str, object]]:
    """Run every test of this display kind in one child pytest on the display (a child's
    start-up, tokenizers included, costs seconds: once per run, not once per test)."""
    display = _displays[wm].start()  # RuntimeError: no display
    nodeids = [item.nodeid for item in _xvfb_items(session, wm)]
    results_file = Path(tempfile.mkstemp(prefix="longdoc-display-", suffix=".jsonl")[1])
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb", "DISPLAY": display}
    env[_RESULTS_VARIABLE] = str(results_file)
    env.pop("WAYLAND_DISPLAY", None)
    # Each test stops itself, by a thread (a UI thread looping inside Qt never returns to
    # Python's signal handler), well before this run's own limit for the first one.
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += [f"--timeout={limit}", "--timeout-method=thread", *nodeids]
    proc = subprocess.run(
        command, cwd=str(session.config.rootpath), env=env, capture_output=True, text=True
    )
    results: dict[str, dict[str, object]] = {}
    for line in results_file.read_text().splitlines():
        entry = json.loads(line)
        previous = results.get(entry["nodeid"])
        if previous is None or previous["outcome"] == "passed":  # the worst phase wins
            results[entry["nodeid"]] = entry
    results_file.unlink()
    tail = (proc.stdout + proc.stderr)[-6_000:]
    for nodeid in nodeids:  # a test the child never reported (it crashed): its output
        results.setdefault(nodeid, {"outcome": "failed", "text": f"no result; the child:\n{tail}"})
    return results


def _run_on_display(item: pytest.Item, wm: bool) -> TestReport:
    """This test's outcome from the child run on the display (started on first need)."""
    started = time.monotonic()
    if wm not in _results:
        limit = max(30, int(item.config.getini("timeout") or 300) - 30)
        try:
            _results[wm] = _run_children(item.session, wm, limit)
        except RuntimeError as exc:
            outcome = "failed" if os.environ.get("LONGDOC_REQUIRE_DISPLAY") else "skipped"
            _results[wm] = {
                i.nodeid: {"outcome": outcome, "text": f"no real display: {exc}"}
                for i in _xvfb_items(item.session, wm)
            }
    entry = _results[wm].get(item.nodeid, {"outcome": "failed", "text": "not run on the display"})
    where = "under a window manager" if wm else "on Xvfb"
    text = entry.get("text")
    return _report(item, str(entry["outcome"]), f"{where}: {text}" if text else None, started)


def _report(item: pytest.Item, outcome: str, text: str | None, started: float) -> TestReport:
    longrepr: object = text
    if outcome == "skipped":
        longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {text}")
    return TestReport(
        item.nodeid,
        item.location,
        {name: 1 for name in item.keywords},
        outcome,  # type: ignore[arg-type]
        longrepr,  # type: ignore[arg-type]
        "call",
        duration=time.monotonic() - started,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """An ``xvfb`` test in an offscreen run: its outcome from the child on the display."""
    marker = item.get_closest_marker("xvfb")
    if marker is None or on_real_display():
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    report = _run_on_display(item, bool(marker.kwargs.get("wm", False)))
    item.ihook.pytest_runtest_logreport(report=report)
    # This item's fixtures were never set up; tear down what the next item does not share.
    item.session._setupstate.teardown_exact(nextitem)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def pytest_runtest_logreport(report: TestReport) -> None:
    """In the child run: each phase's outcome, for the parent to report."""
    path = os.environ.get(_RESULTS_VARIABLE)
    if path and on_real_display():
        text = None if report.passed else str(report.longrepr)
        entry = {"nodeid": report.nodeid, "outcome": report.outcome, "text": text}
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "xvfb(wm=False): runs on a real X display (a private Xvfb; wm=True: with openbox)",
    )
    if RUN_VARIABLE not in os.environ:  # the outermost run; children inherit its id
        os.environ[RUN_VARIABLE] = uuid.uuid4().hex
        config.stash[_OWNER] = True


_OWNER = pytest.StashKey[bool]()


def leftover_processes(run_id: str) -> list[tuple[int, str]]:
    """Processes other than this one (and its ancestors) whose environment has ``run_id``."""
    mine = {os.getpid(), *_ancestors(os.getpid())}
    needle = f"{RUN_VARIABLE}={run_id}".encode()
    found: list[tuple[int, str]] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            environ = (entry / "environ").read_bytes()
            if needle not in environ.split(b"\0"):
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":  # a zombie is already dead; its parent reaps it
            found.append((int(entry.name), cmdline.strip()))
    return found


def leftover_containers(under: Path) -> list[tuple[str, str]]:
    """Running podman containers of a Longdoc data directory inside ``under`` (this run's
    temporary folder, so other runs' containers are never named): (name, data directory)."""
    from server_manager.profiles import LABEL_HOME

    podman = shutil.which("podman")
    if podman is None:
        return []
    try:
        listed = subprocess.run(
            [podman, "ps", "--filter", f"label={LABEL_HOME}", "--format", "json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        containers = json.loads(listed.stdout or "[]")
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return []
    found = []
    for container in containers:
        home = Path(str((container.get("Labels") or {}).get(LABEL_HOME, "")))
        names = container.get("Names") or [container.get("Id", "?")]
        if home.is_absolute() and home.is_relative_to(under):
            found.append((str(names[0]), str(home)))
    return found


def _remove_containers(names: list[str]) -> None:
    podman = shutil.which("podman")
    if podman is None:
        return
    for name in names:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                [podman, "rm", "--force", "--time", "0", name],
                capture_output=True,
                timeout=60,
                check=False,
            )


def _ancestors(pid: int) -> list[int]:
    result = []
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        result.append(pid)
    return result


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the displays, then fail the run if any process it started is still alive."""
    for display in _displays.values():
        display.stop()
    if not session.config.stash.get(_OWNER, False) or not Path("/proc").is_dir():
        return
    # multiprocessing's resource tracker lives until this process exits: stop it now.
    from multiprocessing import resource_tracker

    with contextlib.suppress(Exception):
        resource_tracker._resource_tracker._stop()  # type: ignore[attr-defined]
    run_id = os.environ[RUN_VARIABLE]
    left = leftover_processes(run_id)
    for _ in range(50):  # processes told to stop at the last teardown may need a moment
        if not left:
            break
        time.sleep(0.1)
        left = leftover_processes(run_id)
    if left:
        lines = "\n".join(f"  {pid}: {cmd[:200]}" for pid, cmd in left)
        sys.stderr.write(f"\nError: the test run left {len(left)} process(es) running:\n{lines}\n")
        for pid, _cmd in left:  # the next run must not inherit them
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    factory = getattr(session.config, "_tmp_path_factory", None)
    basetemp = getattr(factory, "_basetemp", None)  # None: no test made a temporary folder
    containers = leftover_containers(Path(basetemp)) if basetemp is not None else []
    if containers:
        lines = "\n".join(f"  {name}: data directory {home}" for name, home in containers)
        sys.stderr.write(
            f"\nError: the test run left {len(containers)} container(s) running:\n{lines}\n"
        )
        _remove_containers([name for name, _home in containers])
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
