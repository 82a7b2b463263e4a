"""Stop benchmark: how long from Stop until the panel is given back, in every state.

The fake SGLang server (in this process) hangs after sending some events and never closes
the stream, and ignores ``/abort_request``: the worst case for Stop. For each state (waiting
for the response headers, during reasoning, during the answer) the real window asks, Stop
is clicked once the state is reached, and the bench records:

- **give-back**: Stop until Ask is enabled again (goal: 0.5 s);
- **worker end**: Stop until the background task has ended (connection shut down, the
  partial answer stored as incomplete) — the app waited for this before giving back;
- whether ``/abort_request`` reached the server for that request.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_stop.py [--repeats 10]
"""

from __future__ import annotations

import argparse
import statistics
import time

from _common import (  # first: it puts the project on sys.path
    API_KEY,
    FOUR_PAGES,
    gui_environment,
    spin,
    window_on,
)

gui_environment()


import desktop.ui  # noqa: E402,F401  (PySide6 6.12.0 workaround first)
from desktop.documents import tokens  # noqa: E402
from desktop.ui.app import application  # noqa: E402
from tests.support.sglang_server import FakeSGLang  # noqa: E402

PDF = FOUR_PAGES
GOAL_S = 0.5
STATES = (("before headers", 0, True), ("reasoning", 3, True), ("answer", 3, False))


def rids(server: FakeSGLang, path: str) -> list[str]:
    return [
        str(r.body.get("rid"))
        for r in list(server.requests)
        if r.path.endswith(path) and isinstance(r.body, dict)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    app = application()
    tokens.encoding()
    with FakeSGLang(api_key=API_KEY, context_length=262_144) as server:
        window = window_on(app, server.url, PDF, 2_000)
        panel = window.ask_panel
        view = panel.answer_view
        print(
            f"Stop against a server that hangs with the stream open and ignores aborts; "
            f"{args.repeats} stops per state"
        )
        worst = 0.0
        for state, stall_after, thinking in STATES:
            server.behaviour.update(stall_after=stall_after, reasoning_tokens=40, answer_tokens=400)
            panel.think_box.setChecked(thinking)
            give_back: list[float] = []
            worker_end: list[float] = []
            aborted = 0
            for i in range(args.repeats):
                sent = len(rids(server, "/chat/completions"))
                panel.question_edit.setPlainText(f"{state} {i} {time.time()}?")
                assert panel.ask()
                reached = {
                    "before headers": lambda sent=sent: (
                        len(rids(server, "/chat/completions")) > sent
                    ),
                    "reasoning": lambda: bool(view.reasoning.toPlainText()),
                    "answer": lambda: bool(view.writer.text),
                }[state]
                assert spin(app, reached, 30), f"{state} not reached"
                task = panel._task
                assert task is not None
                started = time.perf_counter()
                panel.stop_button.click()
                spin(app, lambda: panel.ask_button.isEnabled(), 300)
                give_back.append(time.perf_counter() - started)
                spin(app, lambda task=task: task.done, 300)  # type: ignore[misc]
                worker_end.append(time.perf_counter() - started)
                rid = rids(server, "/chat/completions")[-1]
                if spin(app, lambda rid=rid: rid in rids(server, "/abort_request"), 5):  # type: ignore[misc]
                    aborted += 1
            worst = max(worst, max(give_back))
            print(
                f"  {state:15}: give-back median {statistics.median(give_back) * 1000:.1f} ms, "
                f"worst {max(give_back) * 1000:.1f} ms; worker end median "
                f"{statistics.median(worker_end) * 1000:.1f} ms, worst "
                f"{max(worker_end) * 1000:.1f} ms; /abort_request sent {aborted} of "
                f"{args.repeats}"
            )
        window.close()
    verdict = "OK" if worst <= GOAL_S else "MISSED"
    print(f"worst give-back: {worst * 1000:.1f} ms (goal <= {GOAL_S * 1000:.0f} ms): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
