"""One Longdoc per data directory: a second start hands its files to the first and exits.

The first instance listens on a local socket (``QLocalServer``) named after a hash of the
data directory, readable by the user only. A second ``longdoc`` / ``longdoc gui FILE...``
connects, sends one JSON line ``{"files": [absolute paths]}`` and waits for ``ok``; the
first adds the files and raises its window. A socket left behind by a crashed instance
(nobody answers on it) is removed and taken over. Two starts at the very same moment can
still both listen (the later one wins the name); that race is not guarded against.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger("longdoc.ui.instance")

CONNECT_TIMEOUT_MS = 1_000
# The first instance answers from its event loop; a busy UI thread may take a moment.
REPLY_TIMEOUT_MS = 5_000
MAX_MESSAGE_BYTES = 1 << 20
ALREADY_OPEN = "Longdoc is already open; the files were sent to it."
ALREADY_OPEN_NO_FILES = "Longdoc is already open; its window was brought to the front."


def server_name(data_dir: Path) -> str:
    """The local socket's name for a data directory (the same for every spelling of it)."""
    key = str(data_dir.expanduser().resolve())
    return f"longdoc-{hashlib.sha256(key.encode()).hexdigest()[:24]}"


def send_to_running(name: str, paths: list[Path]) -> bool:
    """Hand ``paths`` (made absolute here) to the instance listening on ``name``.

    True once it confirmed; False when no instance answers (none runs, or a stale socket).
    Blocking, with short timeouts: called before this process shows anything.
    """
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_TIMEOUT_MS):
        return False
    message = {"files": [os.path.abspath(p.expanduser()) for p in paths]}
    socket.write((json.dumps(message) + "\n").encode())
    socket.flush()
    reply = b""
    while b"\n" not in reply and socket.waitForReadyRead(REPLY_TIMEOUT_MS):
        reply += bytes(socket.readAll().data())
    socket.disconnectFromServer()
    return reply.startswith(b"ok")


class InstanceGuard(QObject):
    """The first instance's end of the socket; ``files_received`` on the UI thread."""

    files_received = Signal(list)  # list[Path]; empty: just show the window

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self.server = QLocalServer(self)
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self.server.newConnection.connect(self._on_server_new_connection)
        self._buffers: dict[QLocalSocket, bytes] = {}

    def listen(self) -> bool:
        """Become the instance for this name. False if another instance answers on it.

        Asks first: with the user-only access option Qt would replace a live instance's
        socket rather than fail. A socket nobody answers on is a crashed instance's
        leftover, removed before listening. If listening still fails, that is logged and
        True returned: Longdoc starts without the guard rather than not at all.
        """
        probe = QLocalSocket()
        probe.connectToServer(self.name)
        if probe.waitForConnected(CONNECT_TIMEOUT_MS):
            probe.disconnectFromServer()
            return False
        # Only a socket file nobody answers on is a leftover; on the first start there is
        # none (removeServer would report success all the same: nothing left to remove).
        stale = probe.error() != QLocalSocket.LocalSocketError.ServerNotFoundError
        if QLocalServer.removeServer(self.name) and stale:
            log.info("removed a stale instance socket: %s", self.name)
        if not self.server.listen(self.name):
            log.warning("cannot listen for other starts of Longdoc: %s", self.server.errorString())
        return True

    def close(self) -> None:
        """Stop listening (the socket file is removed)."""
        self.server.close()

    @Slot()
    def _on_server_new_connection(self) -> None:
        while self.server.hasPendingConnections():
            socket = self.server.nextPendingConnection()
            self._buffers[socket] = b""
            socket.readyRead.connect(lambda s=socket: self._on_socket_ready_read(s))
            socket.disconnected.connect(lambda s=socket: self._forget(s))

    def _on_socket_ready_read(self, socket: QLocalSocket) -> None:
        data = self._buffers.get(socket, b"") + bytes(socket.readAll().data())
        if b"\n" not in data:
            if len(data) > MAX_MESSAGE_BYTES:
                socket.abort()
            else:
                self._buffers[socket] = data
            return
        line = data.split(b"\n", 1)[0]
        self._buffers[socket] = b""
        paths = _parse(line)
        if paths is None:
            log.warning("ignored a malformed message from another start of Longdoc")
            socket.abort()
            return
        socket.write(b"ok\n")
        socket.flush()
        self.files_received.emit(paths)

    def _forget(self, socket: QLocalSocket) -> None:
        self._buffers.pop(socket, None)
        socket.deleteLater()


def _parse(line: bytes) -> list[Path] | None:
    """The paths in a message, or None if it is not ``{"files": [str, ...]}``."""
    try:
        message = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    files = message.get("files") if isinstance(message, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        return None
    return [Path(f) for f in files]
