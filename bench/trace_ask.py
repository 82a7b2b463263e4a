"""How far one follows a question through the code: ``longdoc ask`` to the stored answer.

Run as ``.venv/bin/python bench/trace_ask.py`` from the project root. It asks one fresh
question (then the same one again, a cache hit) about a small stored document of the test
server, in this process, with ``sys.settrace`` on the main thread, and counts in the
project's own code (``desktop/``, import-time module code left out):

- files: the distinct files whose functions ran;
- climbs: the distinct call sites where control went into another file and so came back
  up (each is one "return to the caller's file" a reader makes; loops count once);
- store: the distinct ``Store`` methods called, and the calls to them (each a transaction
  or a query), and the writes among them.

The figures are for reading the code, not for speed.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from _common import ROOT  # first: it puts the project on sys.path

CODE = str(ROOT / "desktop") + os.sep
WRITES = {
    "save_document",
    "save_page_tokens",
    "start_answer",
    "save_progress",
    "finish_answer",
    "update_answer_extra",
    "add_turn",
    "remember_model",
    "touch_document",
    "mark_orphaned",
}


class Tracer:
    """Collects files, cross-file call sites and Store calls of the traced code."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.climbs: set[tuple[str, int, str, str]] = set()
        self.store_calls: list[str] = []

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call":
            return None
        code = frame.f_code
        path = code.co_filename
        if not path.startswith(CODE) or code.co_name == "<module>":
            return None
        self.files.add(path)
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(CODE):
            caller = caller.f_back  # through the standard library (contextlib, ...)
        if caller is not None and caller.f_code.co_filename != path:
            site = (caller.f_code.co_filename, caller.f_lineno, path, code.co_name)
            self.climbs.add(site)
        if path.endswith(os.path.join("store", "db.py")) and "self" in frame.f_locals:
            owner = type(frame.f_locals["self"]).__name__
            outside = caller is not None and not caller.f_code.co_filename.endswith("db.py")
            if owner == "Store" and outside:
                self.store_calls.append(code.co_name)
        return None

    def report(self, title: str) -> str:
        names = sorted({os.path.relpath(f, ROOT) for f in self.files})
        methods = sorted(set(self.store_calls))
        writes = [m for m in self.store_calls if m in WRITES]
        return (
            f"{title}: {len(names)} files, {len(self.climbs)} climbs, "
            f"{len(methods)} Store methods in {len(self.store_calls)} calls "
            f"({len(writes)} writes: {', '.join(writes) or 'none'})\n"
            + "".join(f"    {n}\n" for n in names)
        )


def traced(fn: Callable[[], object]) -> Tracer:
    """Run ``fn`` with the tracer on this thread."""
    tracer = Tracer()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return tracer


def main() -> None:
    """Ask twice and print what each ask went through."""
    from tests.support.sglang_server import FakeSGLang

    with tempfile.TemporaryDirectory() as home, FakeSGLang(api_key="k") as server:
        os.environ["LONGDOC_HOME"] = home
        for var in ("LONGDOC_ENDPOINT", "LONGDOC_MODEL", "LONGDOC_API_KEY"):
            os.environ.pop(var, None)
        doc = Path(home) / "contract.txt"
        doc.write_text("The agreement runs for 24 months from the effective date.\n" * 40)
        from desktop.cli.main import main as longdoc

        args = ["ask", str(doc), "What is the term?", "--endpoint", server.url]
        args += ["--api-key", "k", "--no-think"]
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            longdoc(["ingest", str(doc)])
            fresh = traced(lambda: longdoc(args))
            hit = traced(lambda: longdoc(args))
        print(fresh.report("fresh question"))
        print(hit.report("cache hit"))


if __name__ == "__main__":
    main()
