"""The prefix cache: plain (radix) and hybrid (Mamba checkpoints)."""

from __future__ import annotations

import threading
from collections.abc import Sequence


class PrefixCache:
    """Token sequences of earlier prompts; a hit is the longest common prefix with any of them.

    Like SGLang, at least the last prompt token is always computed, and for hybrid (Mamba)
    models a hit can only resume at a checkpoint, emulated by rounding down to ``granularity``.
    """

    def __init__(
        self, granularity: int = 1, max_entries: int = 32, hybrid: bool = False, chunk: int = 16384
    ) -> None:
        self.granularity = max(1, granularity)
        self.max_entries = max_entries
        self.hybrid = hybrid
        self.chunk = max(1, chunk)
        self._entries: list[bytes] = []
        self._lock = threading.Lock()

    @staticmethod
    def _pack(tokens: Sequence[int]) -> bytes:
        return b"".join(t.to_bytes(4, "little") for t in tokens)

    @staticmethod
    def _common(a: bytes, b: bytes) -> int:
        """Length in tokens of the common prefix, by binary search over C-level compares."""
        lo, hi = 0, min(len(a), len(b)) // 4
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if a[: mid * 4] == b[: mid * 4]:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def match(self, tokens: Sequence[int]) -> int:
        """Cached tokens for a new prompt (rounded down to the granularity)."""
        packed = self._pack(tokens)
        limit = max(len(tokens) - 1, 0)
        if self.hybrid:
            with self._lock:
                found = [(self._common(packed, e), len(e) // 4) for e in self._entries]
            best = max((self._hybrid_hit(common, end, limit) for common, end in found), default=0)
        else:
            with self._lock:
                best = max((self._common(packed, e) for e in self._entries), default=0)
            best = min(best, limit)
        return best - best % self.granularity

    def _hybrid_hit(self, common: int, end: int, limit: int) -> int:
        """Where a hybrid (Mamba) model can resume: a state kept at an earlier request's end
        or at a chunked-prefill chunk boundary, never in between."""
        if common >= end and end <= limit:
            return end
        reach = min(common, limit)
        return reach - reach % self.chunk

    def insert(self, tokens: Sequence[int], cached: int = 0) -> None:
        """Remember a prompt (most recent last; the oldest goes beyond ``max_entries``)."""
        packed = self._pack(tokens)
        with self._lock:
            if packed in self._entries:
                self._entries.remove(packed)
            self._entries.append(packed)
            del self._entries[: -self.max_entries]

    def clear(self) -> None:
        """Forget everything (``/flush_cache``)."""
        with self._lock:
            self._entries.clear()


class BlockCache:
    """vLLM's hybrid prefix cache ("Mamba cache mode ... 'align'"), as measured on a GPU.

    A request of N prompt tokens that found ``cached`` of them leaves linear-attention
    states only at block boundaries: at each prefill chunk's end (chunks of the batch
    budget cut to whole blocks, counted from where the cached part ends), at
    ``floor(N / block) * block``, and where it diverges from the earlier request it shares
    the most with (rounded down to a block). A hit resumes at the last state on the shared
    path, at most N - 1 (the last prompt token is always computed).
    """

    def __init__(self, block: int, budget: int, max_entries: int = 64) -> None:
        self.block = max(1, block)
        self.chunk = max(self.block, budget - budget % self.block)
        self.max_entries = max_entries
        self._entries: list[tuple[bytes, frozenset[int]]] = []
        self._lock = threading.Lock()

    def match(self, tokens: Sequence[int]) -> int:
        """Cached tokens for a new prompt: the furthest state on a shared path."""
        packed = PrefixCache._pack(tokens)
        limit = max(len(tokens) - 1, 0)
        best = 0
        with self._lock:
            for entry, states in self._entries:
                reach = min(PrefixCache._common(packed, entry), limit)
                best = max([best, *(s for s in states if s <= reach)])
        return best

    def insert(self, tokens: Sequence[int], cached: int = 0) -> None:
        """Remember a finished prefill and the states it left."""
        packed = PrefixCache._pack(tokens)
        n = len(tokens)
        states = set(range(cached + self.chunk, n, self.chunk))
        states.add(n - n % self.block)
        with self._lock:
            shared = max((PrefixCache._common(packed, e) for e, _ in self._entries), default=0)
            if 0 < shared < n:
                states.add(shared - shared % self.block)
            states.discard(0)
            self._entries = [(e, s) for e, s in self._entries if e != packed]
            self._entries.append((packed, frozenset(states)))
            del self._entries[: -self.max_entries]

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()
