"""The context budget: document + prompt + answer reserve must fit, or nothing is sent."""

from __future__ import annotations

from dataclasses import dataclass, field

from desktop.config import MIN_ANSWER_RESERVE


@dataclass(frozen=True)
class Budget:
    """How a prompt fits the server's context; ``max_tokens`` is what the answer may use."""

    prompt_tokens: int
    context_length: int
    reserve: int
    max_tokens: int
    fits: bool
    warnings: list[str] = field(default_factory=list)

    @property
    def overflow(self) -> int:
        """Tokens too many even with the minimum reserve (0 when it fits)."""
        return max(0, self.prompt_tokens - self.prompt_limit)

    @property
    def prompt_limit(self) -> int:
        """The largest prompt that still leaves the minimum answer reserve."""
        return self.context_length - 1 - MIN_ANSWER_RESERVE


def plan_budget(
    prompt_tokens: int,
    context_length: int,
    reserve: int,
    max_input: int | None = None,
) -> Budget:
    """Fit the answer reserve; shrink it to the floor with a warning before refusing.

    SGLang refuses ``prompt >= context`` and (at least in some versions) also
    ``prompt + max_tokens >= context``, so one token is kept free; it also
    aborts prompts over ``max_req_input_len`` (from /server_info) after HTTP 200, so that
    limit is checked here too.
    """
    warnings: list[str] = []
    limit = context_length if max_input is None else min(context_length, max_input + 1)
    usable = context_length - 1
    if prompt_tokens + reserve <= usable and prompt_tokens < limit:
        return Budget(prompt_tokens, context_length, reserve, reserve, True)
    room = usable - prompt_tokens
    if room >= MIN_ANSWER_RESERVE and prompt_tokens < limit:
        warnings.append(
            f"The answer reserve was reduced from {reserve:,} to {room:,} tokens so the "
            f"document fits the context of {context_length:,} tokens; long answers may be cut."
        )
        return Budget(prompt_tokens, context_length, reserve, room, True, warnings)
    return Budget(prompt_tokens, context_length, reserve, 0, False, warnings)
