"""Start-up benchmark: whole ``longdoc`` processes as ratios to a bare Python process.

Run as ``.venv/bin/python bench/bench_startup.py`` from the project root. Every figure is
a median over interleaved runs in the same session, divided by the median of
``python -c "import sqlite3, json, argparse"`` (the floor any Python CLI pays), so a busy
machine slows numerator and denominator alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _common import (  # first: it puts the project on sys.path
    GEOTOPO,
    ROOT,
)

PY = sys.executable
BASELINE = [PY, "-c", "import sqlite3, json, argparse"]
LONGDOC = [PY, "-m", "desktop.cli.main"]


class _Ok(BaseHTTPRequestHandler):
    """Answers every GET with a tiny JSON body: the one HTTP call of the reference process."""

    def do_GET(self) -> None:
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


def run_once(argv: list[str], env: dict[str, str]) -> float:
    """Wall time of one whole process (output discarded; a failure stops the benchmark)."""
    start = time.perf_counter()
    # cwd: `python -m` puts the working directory first on sys.path.
    result = subprocess.run(
        argv, env=env, cwd=env["PYTHONPATH"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {result.stderr.decode()[-500:]}")
    return seconds


def main() -> None:
    """Measure, then print one line per figure with its goal."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15, help="processes per figure")
    parser.add_argument(
        "--tree", type=Path, default=ROOT, help="the checkout to measure (default: this one)"
    )
    options = parser.parse_args()
    runs = options.runs

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/health"
    one_http_call = [
        PY,
        "-c",
        f"import sqlite3, json, argparse, urllib.request; urllib.request.urlopen({url!r}).read()",
    ]

    with tempfile.TemporaryDirectory() as home:
        os.chmod(home, 0o700)
        env = {**os.environ, "LONGDOC_HOME": home, "PYTHONPATH": str(options.tree)}
        for var in ("LONGDOC_ENDPOINT", "LONGDOC_MODEL", "LONGDOC_API_KEY"):
            env.pop(var, None)
        run_once([*LONGDOC, "ingest", str(GEOTOPO)], env)  # stored once; later runs reopen it
        commands = {
            "baseline": BASELINE,
            "one HTTP call": one_http_call,
            "--help": [*LONGDOC, "--help"],
            "ingest (stored)": [*LONGDOC, "ingest", str(GEOTOPO)],
            "server status": [*LONGDOC, "server", "status"],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for argv in commands.values():
            run_once(argv, env)  # warm the page cache
        for _ in range(runs):
            for name, argv in commands.items():  # interleaved: load changes hit all alike
                times[name].append(run_once(argv, env))
    server.shutdown()

    median = {name: statistics.median(values) for name, values in times.items()}
    base = median["baseline"]
    http = median["one HTTP call"] - base
    print(f"Median of {runs} processes each; baseline `import sqlite3, json, argparse`:")
    print(f"  baseline                 {base * 1000:7.1f} ms")
    rows = [
        ("longdoc --help", median["--help"], "<= 4x"),
        ("ingest of a stored PDF", median["ingest (stored)"], "<= 6x"),
    ]
    for label, seconds, goal in rows:
        print(f"  {label:<24} {seconds * 1000:7.1f} ms  {seconds / base:5.2f}x  (goal {goal})")
    status = median["server status"]
    reference = median["--help"] + http
    print(
        f"  server status (stopped)  {status * 1000:7.1f} ms  {status / base:5.2f}x  "
        f"= {status / reference:4.2f}x of --help + one HTTP call ({http * 1000:.1f} ms) "
        "(goal about 1x)"
    )


if __name__ == "__main__":
    main()
