"""Reports the user points at (``--out``, the app's export): checked first, never replaced.

Issue 20 items 1 and 4. Nothing here touches the real /dev: FIFOs, sockets and symlinks are
made in a temporary folder, and the device cases run in a private mount namespace (root only).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from desktop.batch import BatchItem, BatchReport, Cell
from desktop.errors import StorageError, UsageError
from desktop.reports import check_output, csv_cell, write_report

ROOT = Path(__file__).resolve().parents[2]


def test_a_symlink_is_written_through_to_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real" / "report.md"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    write_report(link, "new report\n")
    assert link.is_symlink()
    assert target.read_text() == "new report\n"


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.md"
    link.symlink_to(tmp_path / "made.md")
    write_report(link, "x\n")
    assert link.is_symlink() and (tmp_path / "made.md").read_text() == "x\n"


def test_a_fifo_is_written_in_place_never_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def reader() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    thread = threading.Thread(target=reader)
    thread.start()
    while True:
        try:
            write_report(fifo, "through the pipe\n")
            break
        except StorageError:  # the reader has not opened its end yet: try again
            threading.Event().wait(0.01)
    thread.join(10)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_to_a_proc_fd_link_is_written_through_the_kernel(tmp_path: Path) -> None:
    # What /dev/stdout is: a symlink to /proc/self/fd/1, whose target is no path at all.
    read_end, write_end = os.pipe()
    link = tmp_path / "stdout"
    link.symlink_to(f"/proc/self/fd/{write_end}")
    try:
        write_report(link, "to the pipe\n")
        os.close(write_end)
        with os.fdopen(read_end, "rb") as fh:
            assert fh.read() == b"to the pipe\n"
    finally:
        with contextlib.suppress(OSError):
            os.close(write_end)
    assert link.is_symlink()


def test_a_fifo_nobody_reads_is_one_error_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(StorageError, match="no program is reading this pipe"):
        write_report(fifo, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_socket_is_refused_before_anything(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(UsageError, match="socket"):
            check_output(path)
        assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_a_folder_or_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a folder"):
        check_output(tmp_path)
    with pytest.raises(UsageError, match="does not exist"):
        check_output(tmp_path / "missing" / "report.md")
    with pytest.raises(UsageError, match="is a folder"):
        write_report(tmp_path, "x")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_an_unwritable_place_is_a_usage_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(UsageError, match="permission denied"):
        check_output(locked / "report.md")
    (tmp_path / "ro.md").write_text("x")
    (tmp_path / "ro.md").chmod(0o400)
    with pytest.raises(UsageError, match="permission denied"):
        check_output(tmp_path / "ro.md")


def test_a_regular_file_is_replaced_atomically_keeping_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "report.md"
    path.write_text("old")
    path.chmod(0o644)
    inode = path.stat().st_ino
    write_report(path, "new\n")
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert path.stat().st_ino != inode  # renamed over, not rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


DEVICE_SCRIPT = r"""
set -e
mount --make-rprivate /
mount -t tmpfs tmpfs /dev
mknod -m 666 /dev/null c 1 3
mknod -m 666 /dev/full c 1 7
mkdir -p {ro}
mount -t tmpfs -o ro tmpfs {ro}
"{python}" - <<'PY'
import os, stat, sys
sys.path.insert(0, {root!r})
from desktop.errors import StorageError, UsageError
from desktop.reports import check_output, write_report
try:
    check_output({ro!r} + "/report.md")
    raise SystemExit("a read-only file system passed the check")
except UsageError as exc:
    print("ro:", exc)
write_report("/dev/null", "report\n")
assert stat.S_ISCHR(os.stat("/dev/null").st_mode), "replaced /dev/null"
assert stat.S_IMODE(os.stat("/dev/null").st_mode) == 0o666
try:
    write_report("/dev/full", "report\n")
except StorageError as exc:
    print("full:", exc)
assert stat.S_ISCHR(os.stat("/dev/full").st_mode), "replaced /dev/full"
print("devices intact")
PY
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root")
def test_devices_are_written_in_place_in_a_private_mount_namespace(tmp_path: Path) -> None:
    ro = str(tmp_path / "ro")
    script = DEVICE_SCRIPT.format(python=sys.executable, root=str(ROOT), ro=ro)
    result = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0 and "unshare failed" in result.stderr:
        pytest.skip("no mount namespaces here")
    assert result.returncode == 0, result.stderr
    assert "devices intact" in result.stdout
    assert "No space left on device" in result.stdout
    assert "ro: " in result.stdout and "permission denied" in result.stdout


# --- CSV (item 4) ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["=HYPERLINK(\"http://x/?\"&A1)", "+1", "-2+3", "@SUM(A1)",
                                  "\tx", "\rx"])  # fmt: skip
def test_formula_cells_get_a_quote(text: str) -> None:
    assert csv_cell(text) == "'" + text
    assert csv_cell("plain") == "plain" and csv_cell(12) == 12


def test_the_review_grid_defuses_titles_answers_and_errors() -> None:
    report = BatchReport("review", ["Q1?"])
    item = BatchItem("/docs/=evil.pdf", status="done", title='=HYPERLINK("http://x")')
    item.cells = [Cell("Q1?", status="done", answer="@SUM(1)")]
    failed = BatchItem("/docs/b.pdf", status="failed", error="-bad")
    report.items = [item, failed]
    rows = list(csv.reader(io.StringIO(report.to_csv())))
    assert rows[1][:2] == ["/docs/=evil.pdf", '\'=HYPERLINK("http://x")']
    assert rows[1][5] == "'@SUM(1)"
    assert rows[2][5] == "'-bad"
