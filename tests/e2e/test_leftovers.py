"""The run-end check (tests/support/display.py) finds what a test could leave running:
a detached process such as a supervisor or a test server, and a server's container,
which does not carry the run's variable."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.e2e.conftest import podman, run_sleeping_container
from tests.support.display import RUN_VARIABLE, leftover_containers, leftover_processes


def test_a_detached_process_of_the_run_is_found(tmp_path: Path) -> None:
    # As the server manager starts a supervisor: a new session, the run's environment.
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True
    )
    try:
        found = dict(leftover_processes(os.environ[RUN_VARIABLE]))
        assert process.pid in found and "time.sleep(120)" in found[process.pid]
    finally:
        process.kill()
        process.wait(timeout=30)
    assert process.pid not in dict(leftover_processes(os.environ[RUN_VARIABLE]))


@pytest.mark.container
def test_a_servers_container_is_found_though_it_lacks_the_runs_variable(
    tmp_path: Path, test_image: str
) -> None:
    home = tmp_path / "home"
    name = f"longdoc-leftover-{uuid.uuid4().hex[:8]}"
    run_sleeping_container(name, str(home), test_image, 120)
    try:
        assert (name, str(home)) in leftover_containers(tmp_path)
        # Only this run's folders: another run's containers are not ours to name.
        assert name not in dict(leftover_containers(tmp_path / "elsewhere"))
        # Its processes do not carry the run's variable: the process check cannot see it.
        assert not any(name in cmd for _pid, cmd in leftover_processes(os.environ[RUN_VARIABLE]))
    finally:
        podman("rm", "--force", "--time", "0", name, check=False)
    assert name not in dict(leftover_containers(tmp_path))
