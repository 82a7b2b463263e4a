"""Load progress from SGLang's own log lines: named stages in order, plus pool sizes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import IntEnum


class Stage(IntEnum):
    """Start-up stages in the order SGLang passes through them."""

    STARTING_CONTAINER = 0
    LOADING_WEIGHTS = 1
    WEIGHTS_LOADED = 2
    ALLOCATING_CACHE = 3
    MEMORY_POOL_READY = 4
    HTTP_SERVER_UP = 5
    WARMING_UP = 6
    READY = 7

    @property
    def key(self) -> str:
        """Machine name, e.g. ``loading_weights`` (used in JSON)."""
        return self.name.lower()

    @property
    def label(self) -> str:
        """What the user reads, e.g. ``Loading weights…``."""
        return _LABELS[self]


_LABELS = {
    Stage.STARTING_CONTAINER: "Starting the server…",
    Stage.LOADING_WEIGHTS: "Loading weights…",
    Stage.WEIGHTS_LOADED: "Weights loaded",
    Stage.ALLOCATING_CACHE: "Allocating the cache…",
    Stage.MEMORY_POOL_READY: "Memory pool ready",
    Stage.HTTP_SERVER_UP: "HTTP server up",
    Stage.WARMING_UP: "Warming up…",
    Stage.READY: "Ready",
}

STAGE_BY_KEY = {stage.key: stage for stage in Stage}

# Line fragments from SGLang's source (facts sheet, section 3); matched anywhere in the line
# because the prefix (timestamp, TP rank) differs between versions.
_PATTERNS: tuple[tuple[re.Pattern[str], Stage], ...] = (
    (re.compile(r"Load weight begin"), Stage.LOADING_WEIGHTS),
    (re.compile(r"Load weight end"), Stage.WEIGHTS_LOADED),
    (re.compile(r"Mamba Cache is allocated|KV Cache is allocated"), Stage.ALLOCATING_CACHE),
    (re.compile(r"Memory pool end"), Stage.MEMORY_POOL_READY),
    (re.compile(r"max_total_num_tokens="), Stage.MEMORY_POOL_READY),
    (re.compile(r"Uvicorn running on|Application startup complete"), Stage.HTTP_SERVER_UP),
    (re.compile(r"The server is fired up and ready to roll"), Stage.READY),
)
_MAX_TOTAL = re.compile(r"max_total_num_tokens=(\d+)")
_CONTEXT = re.compile(r"context_len=(\d+)")


@dataclass(frozen=True)
class StageEvent:
    """A stage reached, and the line that showed it."""

    stage: Stage
    line: str


def stage_of(line: str) -> Stage | None:
    """The stage a single log line shows, if any."""
    for pattern, stage in _PATTERNS:
        if pattern.search(line):
            return stage
    return None


@dataclass
class LoadProgress:
    """Feeds on log lines; reports each new stage once, never going backwards."""

    stage: Stage = Stage.STARTING_CONTAINER
    max_total_num_tokens: int | None = None
    context_len: int | None = None
    seen: list[Stage] = field(default_factory=lambda: [Stage.STARTING_CONTAINER])

    def feed(self, line: str) -> list[StageEvent]:
        """Digest one line; return the stages it moved through (often none)."""
        if (m := _MAX_TOTAL.search(line)) is not None:
            self.max_total_num_tokens = int(m.group(1))
            if (c := _CONTEXT.search(line)) is not None:
                self.context_len = int(c.group(1))
        stage = stage_of(line)
        if stage is None or stage <= self.stage:
            return []
        events: list[StageEvent] = []
        # The HTTP server coming up means SGLang now sends its warm-up request; SGLang
        # logs nothing distinct for it, so it is implied before "fired up".
        if stage == Stage.READY and self.stage < Stage.WARMING_UP:
            events.append(self._advance(Stage.WARMING_UP, line))
        events.append(self._advance(stage, line))
        if stage == Stage.HTTP_SERVER_UP:
            events.append(self._advance(Stage.WARMING_UP, line))
        return events

    def _advance(self, stage: Stage, line: str) -> StageEvent:
        self.stage = stage
        self.seen.append(stage)
        return StageEvent(stage, line)

    def reset(self) -> None:
        """Back to the beginning (after a restart)."""
        self.stage = Stage.STARTING_CONTAINER
        self.seen = [Stage.STARTING_CONTAINER]
