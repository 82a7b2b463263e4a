"""Chat completions and raw-prompt requests: planning, prefill, answers and streams."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.support.sglang_server.answers import (
    Piece,
    compose_answer,
    fit_tokens,
    last_question,
    needle_answer,
    token_pieces,
)
from tests.support.sglang_server.plumbing import HandlerBase
from tests.support.sglang_server.protocol import (
    CONNECTION_ERRORS,
    IM_END_ID,
    OPENAI_CHAT_FIELDS,
    THINK_CLOSE,
    ClientGone,
)
from tests.support.sglang_server.template import (
    TemplateError,
    expand_images,
    image_part_size,
    message_images,
    render_chat,
    thinking_enabled,
)
from tests.support.sglang_server.tokens import decode, encode


@dataclass
class _Run:
    """What became of a running request: aborted (stopped, or the client went away)."""

    aborted: bool = False


@dataclass
class _Generation:
    """Everything decided about one chat request before it is answered."""

    rid: str
    model: str
    stream: bool
    include_usage: bool
    prompt_tokens: int
    cached_tokens: int
    pieces: list[Piece]
    finish_reason: str
    matched_stop: int | None
    reasoning_tokens: int
    completion_tokens: int
    abort: threading.Event
    created: int = field(default_factory=lambda: int(time.time()))


def vllm_too_long(n: int, max_tokens: Any, context: int) -> str | None:
    """vLLM's refusal (sglang-facts §9): its prompt count is a lower bound ("at least"),
    the context minus the output tokens plus one, not the prompt's real size."""
    wanted = max_tokens if isinstance(max_tokens, int) else 0
    if n + wanted <= context and n < context:
        return None
    at_least = min(n, context - wanted + 1)
    return (
        f"This model's maximum context length is {context} tokens. However, you requested "
        f"{wanted} output tokens and your prompt contains at least {at_least} input tokens, "
        f"for a total of at least {at_least + wanted} tokens. Please reduce the length of the "
        "input prompt or the number of requested output tokens."
    )


class GenerationHandler(HandlerBase):
    """The routes that generate: /v1/chat/completions, /generate and /v1/completions."""

    def _reject_unknown_fields(self, body: dict[str, Any]) -> bool:
        """Strict mode: answer 422 (FastAPI's shape) to fields OpenAI's API does not have."""
        unknown = sorted(set(body) - OPENAI_CHAT_FIELDS)
        if not self.fake.strict or not unknown:
            return False
        detail = [
            {
                "type": "extra_forbidden",
                "loc": ["body", name],
                "msg": "Extra inputs are not permitted",
                "input": body[name],
            }
            for name in unknown
        ]
        self._json(422, {"detail": detail})
        return True

    def _chat(self, body: Any) -> None:
        fake = self.fake
        if not isinstance(body, dict):
            self._error(400, "Request body must be a JSON object")
            return
        if self._reject_unknown_fields(body):
            return
        failure = fake.behaviour.consume_failure()
        if failure is not None:
            status, message = failure
            self._error(status, message or f"Injected failure (HTTP {status}).")
            return
        messages = body.get("messages")
        enable_thinking = thinking_enabled(body)
        try:
            prompt = render_chat(messages, enable_thinking=enable_thinking)
        except TemplateError as exc:
            self._error(400, str(exc))
            return
        assert isinstance(messages, list)
        images = message_images(messages)
        if images and not fake.behaviour.image_understanding:
            self._error(400, "This model does not support image input.")
            return
        fake.record_prompt(prompt)
        try:
            prompt_ids = expand_images(encode(prompt), images)
        except TemplateError as exc:
            self._error(400, str(exc))
            return
        if images:
            with fake._lock:
                fake.images.append([image_part_size(i) for i in images])
        n = len(prompt_ids)
        stream = bool(body.get("stream"))
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        context = fake.context_length
        error: str | None = None
        if fake.flavor == "vllm":
            error = vllm_too_long(n, max_tokens, context)
        elif n >= context:
            error = (
                f"The input ({n} tokens) is longer than the model's context length "
                f"({context} tokens)."
            )
        elif isinstance(max_tokens, int) and n + max_tokens >= context:
            error = (
                f"Requested token count exceeds the model's maximum context length of {context} "
                f"tokens. You requested a total of {n + max_tokens} tokens: {n} tokens from the "
                f"input messages and {max_tokens} tokens for the completion. Please reduce the "
                "number of tokens in the input messages or the completion to fit within the "
                "limit."
            )
        if error is not None:
            if stream and fake.flavor == "old":
                self._start_stream()
                self._event({"error": self._error_object(error, "BadRequestError")})
                self._event_raw("[DONE]")
                self._end_stream()
            else:
                self._error(400, error)
            return
        given = body.get("rid")
        rid = given if isinstance(given, str) and given else uuid.uuid4().hex
        if fake.flavor in ("openai", "vllm"):
            rid = f"chatcmpl-{uuid.uuid4().hex}"  # vLLM takes no rid
        gen = self._plan(rid, body, prompt, prompt_ids, messages, enable_thinking, max_tokens)
        gen.stream = stream
        with self._running(gen, chat=True) as run:
            if fake.flavor != "vllm" and n > fake.max_req_input_len:
                run.aborted = True
                self._scheduler_reject(gen, n)
                return
            run.aborted = (
                self._stream(gen, prompt_ids) if stream else self._complete(gen, prompt_ids)
            )

    def _prefill_request(self, body: Any, native: bool) -> None:
        """A raw prompt (no chat template), answered with a few tokens and no streaming.

        What a warm-up sends: the server prefills exactly the given text, so a hybrid model
        keeps its state at the prompt's end. ``native`` is SGLang's ``/generate`` (``text``
        or ``input_ids``, ``sampling_params.max_new_tokens``, answer with ``meta_info``);
        otherwise ``/v1/completions`` (``prompt``, ``max_tokens``, OpenAI ``usage``).
        """
        fake = self.fake
        if not isinstance(body, dict):
            self._error(400, "Request body must be a JSON object")
            return
        if body.get("stream"):
            self._error(400, "The fake server answers raw prompts without streaming only.")
            return
        if native:
            params = body.get("sampling_params")
            params = params if isinstance(params, dict) else {}
            max_new = params.get("max_new_tokens", 16)
            text, ids = body.get("text"), body.get("input_ids")
        else:
            max_new = body.get("max_tokens", 16)
            text, ids = body.get("prompt"), None
        if isinstance(text, str):
            prompt_ids = encode(text)
            fake.record_prompt(text)
        elif isinstance(ids, list) and ids and all(isinstance(i, int) for i in ids):
            prompt_ids = list(ids)
            fake.record_prompt(decode(prompt_ids))
        else:
            self._error(400, "The request needs a prompt: a string (or input_ids).")
            return
        max_new = max_new if isinstance(max_new, int) and max_new >= 0 else 16
        n = len(prompt_ids)
        if fake.flavor == "vllm":
            refusal = vllm_too_long(n, max_new, fake.context_length)
            if refusal is not None:
                self._error(400, refusal)
                return
        elif n + max_new >= fake.context_length:
            self._error(
                400,
                f"The input ({n} tokens) is longer than the model's context length "
                f"({fake.context_length} tokens).",
            )
            return
        given = body.get("rid")
        rid = given if isinstance(given, str) and given else uuid.uuid4().hex
        output = token_pieces(fit_tokens("OK", max_new), "content")[:max_new]
        generated = sum(p.tokens for p in output)
        gen = _Generation(
            rid=rid,
            model=str(body.get("model") or fake.model_name),
            stream=False,
            include_usage=False,
            prompt_tokens=n,
            cached_tokens=fake.cache.match(prompt_ids),
            pieces=output,
            finish_reason="length",
            matched_stop=None,
            reasoning_tokens=0,
            completion_tokens=generated,
            abort=fake.register(rid),
        )
        started = time.monotonic()
        with self._running(gen, chat=False) as run:
            self._prefill(gen, prompt_ids)
            aborted = run.aborted = gen.abort.is_set() or fake._stopping.is_set()
            self._finish_metrics(gen, 0 if aborted else generated, started)
            finish = "abort" if aborted else "length"
            out_text = "" if aborted else "".join(p.text for p in output)
            if native:
                self._json(
                    200,
                    {
                        "text": out_text,
                        "meta_info": {
                            "id": rid,
                            "finish_reason": {"type": finish, "length": generated},
                            "prompt_tokens": n,
                            "completion_tokens": 0 if aborted else generated,
                            "cached_tokens": gen.cached_tokens,
                            "e2e_latency": time.monotonic() - started,
                        },
                    },
                )
            else:
                choice = {"index": 0, "text": out_text, "logprobs": None, "finish_reason": finish}
                completion = _envelope(gen, "text_completion", choice)
                completion["usage"] = self._usage(gen, 0 if aborted else generated)
                self._json(200, completion)

    @contextlib.contextmanager
    def _running(self, gen: _Generation, *, chat: bool) -> Iterator[_Run]:
        """Count ``gen`` as running (a chat also in the peak) while the body answers it;
        then unregister it, aborted when the body says so or the client went away."""
        fake = self.fake
        n = gen.prompt_tokens
        with fake._lock:
            fake.metrics.running += 1
            if chat:
                fake.metrics.peak_running = max(fake.metrics.peak_running, fake.metrics.running)
            fake.metrics.running_tokens += n
            fake.metrics.num_requests += 1
            fake.metrics.prompt_tokens += n
            fake.metrics.cached_tokens += gen.cached_tokens
        run = _Run()
        try:
            yield run
        except (ClientGone, *CONNECTION_ERRORS):
            run.aborted = True
            self.close_connection = True
        finally:
            with fake._lock:
                fake.metrics.running -= 1
                fake.metrics.running_tokens -= n
            fake.unregister(gen.rid, run.aborted)

    def _plan(
        self,
        rid: str,
        body: dict[str, Any],
        prompt: str,
        prompt_ids: list[int],
        messages: list[dict[str, Any]],
        enable_thinking: bool,
        max_tokens: Any,
    ) -> _Generation:
        """Decide the generated pieces, the cache hit and the finish reason up front."""
        fake = self.fake
        settings = fake.behaviour.snapshot()
        reasoning, answer = compose_answer(prompt, last_question(messages))
        if settings["answer_text"] is not None:
            answer = str(settings["answer_text"])
        if settings["needle_horizon"] is not None:
            answer = needle_answer(prompt, float(settings["needle_horizon"]))
        answer = fit_tokens(answer, settings["answer_tokens"])
        pieces: list[Piece] = []
        reasoning_tokens = 0
        if enable_thinking:
            reasoning = fit_tokens(reasoning, settings["reasoning_tokens"])
            pieces += token_pieces(reasoning, "reasoning")
            reasoning_tokens = sum(p.tokens for p in pieces)
            pieces.append(Piece("hidden", "", len(encode(THINK_CLOSE))))
        pieces += token_pieces(answer, "content")
        pieces.append(Piece("hidden", "", 1))  # <|im_end|>
        finish_reason = "stop"
        matched_stop: int | None = IM_END_ID
        if not isinstance(max_tokens, int):
            max_tokens = fake.context_length - len(prompt_ids) - 1
        kept: list[Piece] = []
        used = 0
        for piece in pieces:
            if used + piece.tokens > max_tokens:
                finish_reason, matched_stop = "length", None
                break
            kept.append(piece)
            used += piece.tokens
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        return _Generation(
            rid=rid,
            model=str(body.get("model") or fake.model_name),
            stream=False,
            include_usage=include_usage,
            prompt_tokens=len(prompt_ids),
            cached_tokens=fake.cache.match(prompt_ids),
            pieces=kept,
            finish_reason=finish_reason,
            matched_stop=matched_stop,
            reasoning_tokens=min(reasoning_tokens, used),
            completion_tokens=used,
            abort=fake.register(rid),
        )

    def _prefill(self, gen: _Generation, prompt_ids: list[int]) -> None:
        fake = self.fake
        speed = fake.behaviour.prefill_tokens_per_s
        uncached = gen.prompt_tokens - gen.cached_tokens
        if speed:
            with fake._lock:
                fake.metrics.slow_prefills += 1
            try:
                self._sleep(uncached / speed, gen)
            finally:
                with fake._lock:
                    fake.metrics.slow_prefills -= 1
        if gen.abort.is_set():
            return
        fake.cache.insert(prompt_ids, gen.cached_tokens)
        fake.log(
            f"Prefill batch, #new-seq: 1, #new-token: {uncached}, #cached-token: "
            f"{gen.cached_tokens}, token usage: "
            f"{gen.prompt_tokens / fake.max_total_num_tokens:.2f}, #running-req: 0, "
            "#queue-req: 0, "
        )

    def _finish_metrics(self, gen: _Generation, generated: int, started: float) -> None:
        fake = self.fake
        elapsed = max(time.monotonic() - started, 1e-3)
        throughput = generated / elapsed
        with fake._lock:
            fake.metrics.generation_tokens += generated
            fake.metrics.gen_throughput = throughput
        fake.log(
            f"Decode batch, #running-req: 1, #token: {gen.prompt_tokens + generated}, "
            f"token usage: {(gen.prompt_tokens + generated) / fake.max_total_num_tokens:.2f}, "
            f"cuda graph: True, gen throughput (token/s): {throughput:.2f}, #queue-req: 0, "
        )

    def _usage(self, gen: _Generation, completion_tokens: int) -> dict[str, Any]:
        fake = self.fake
        usage: dict[str, Any] = {
            "prompt_tokens": gen.prompt_tokens,
            "total_tokens": gen.prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
        }
        if fake.flavor == "openai":
            return usage
        if fake.flavor == "vllm":  # with --enable-prompt-tokens-details
            details = {"cached_tokens": gen.cached_tokens} if fake.enable_cache_report else None
            usage["prompt_tokens_details"] = details
            return usage
        usage["prompt_tokens_details"] = (
            {"cached_tokens": gen.cached_tokens} if fake.enable_cache_report else None
        )
        usage["reasoning_tokens"] = gen.reasoning_tokens
        if fake.flavor == "new":
            usage["completion_tokens_details"] = (
                {"reasoning_tokens": gen.reasoning_tokens} if gen.reasoning_tokens else None
            )
        return usage

    def _scheduler_reject(self, gen: _Generation, n: int) -> None:
        """SGLang's scheduler-side limit (max_req_input_len): an abort after HTTP 200."""
        message = (
            f"Input length ({n} tokens) exceeds the maximum allowed length "
            f"({self.fake.max_req_input_len} tokens). Use a shorter input or enable "
            "--allow-auto-truncate."
        )
        if not gen.stream:
            self._error(400, message)
            return
        self._start_stream()
        self._event({"error": self._error_object(message, "BAD_REQUEST")})
        if self.fake.flavor != "openai":
            self._event_raw("[DONE]")
        self._end_stream()

    def _complete(self, gen: _Generation, prompt_ids: list[int]) -> bool:
        """Non-streaming answer; returns True when aborted."""
        fake = self.fake
        self._prefill(gen, prompt_ids)
        started = time.monotonic()
        delay = fake.behaviour.token_delay_s
        reasoning: list[str] = []
        content: list[str] = []
        generated = 0
        for piece in gen.pieces:
            if gen.abort.is_set() or fake._stopping.is_set():
                break
            if delay:
                self._sleep(delay * piece.tokens, gen)
            generated += piece.tokens
            (reasoning if piece.kind == "reasoning" else content).append(piece.text)
        aborted = gen.abort.is_set() or fake._stopping.is_set()
        finish_reason = "abort" if aborted else gen.finish_reason
        matched_stop = None if aborted else gen.matched_stop
        self._finish_metrics(gen, generated, started)
        message: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": finish_reason,
        }
        if fake.flavor in ("openai", "vllm"):
            if reasoning:
                message["reasoning"] = "".join(reasoning)
        else:
            message["reasoning_content"] = "".join(reasoning) if reasoning else None
            message["tool_calls"] = None
            choice["matched_stop"] = matched_stop
        response = _envelope(gen, "chat.completion", choice)
        response["usage"] = self._usage(gen, generated if aborted else gen.completion_tokens)
        if fake.flavor == "new":
            response["metadata"] = {"weight_version": "default"}
        if fake.flavor == "openai":
            response["system_fingerprint"] = "fp_fake"
        self._json(200, response)
        return aborted

    def _chunk(
        self,
        gen: _Generation,
        delta: dict[str, Any],
        finish: str | None = None,
        matched_stop: int | None = None,
    ) -> dict[str, Any]:
        """A ``chat.completion.chunk`` in the flavor's shape."""
        flavor = self.fake.flavor
        choice: dict[str, Any] = {
            "index": 0,
            "delta": delta,
            "logprobs": None,
            "finish_reason": finish,
        }
        if flavor in ("new", "old"):
            choice["matched_stop"] = matched_stop
        elif flavor == "vllm":
            choice["stop_reason"] = None
        chunk = _envelope(gen, "chat.completion.chunk", choice)
        if flavor == "old":
            chunk["usage"] = None
        elif flavor == "openai":
            chunk["system_fingerprint"] = "fp_fake"
            chunk["x_fake_server"] = {"tokens_so_far": None}
        return chunk

    def _delta(
        self, role: str | None = None, content: str | None = None, reasoning: str | None = None
    ) -> dict[str, Any]:
        """Delta object: new omits null role/content; old keeps all three; openai has no
        reasoning_content (reasoning goes to ``reasoning``)."""
        flavor = self.fake.flavor
        if flavor == "new":
            delta: dict[str, Any] = {"reasoning_content": reasoning}
            if role is not None:
                delta["role"] = role
            if content is not None:
                delta["content"] = content
            return delta
        if flavor == "old":
            return {"role": role, "content": content, "reasoning_content": reasoning}
        delta = {}
        if role is not None:
            delta["role"] = role
        if content is not None:
            delta["content"] = content
        if reasoning is not None:
            delta["reasoning"] = reasoning
        return delta

    def _stream(self, gen: _Generation, prompt_ids: list[int]) -> bool:
        """Streaming answer; returns True when aborted or cut off."""
        fake = self.fake
        settings = fake.behaviour.snapshot()
        stall_after: int | None = settings["stall_after"]
        if stall_after == 0:
            self._stall()
        # 0.5.15+ kick-starts the generator before sending HTTP 200, so headers only leave
        # after prefill; 0.5.9 (and generic servers) send 200 at once.
        if fake.flavor == "new":
            self._prefill(gen, prompt_ids)
            self._start_stream()
        else:
            self._start_stream()
            self._prefill(gen, prompt_ids)
        events = 0
        disconnect_after: int | None = settings["disconnect_after"]
        drop_done = bool(settings["drop_done"])
        error_after: int | None = settings["midstream_error_after"]

        def send(payload: dict[str, Any]) -> None:
            nonlocal events
            self._event(payload)
            events += 1
            if disconnect_after is not None and events >= disconnect_after:
                self._drop()
            if stall_after is not None and events >= stall_after:
                self._stall()

        started = time.monotonic()
        generated = 0
        content_chunks = 0
        aborted = False
        send(self._chunk(gen, self._delta(role="assistant", content="")))
        for piece in self._pieces(gen, settings["token_delay_s"]):
            generated += piece.tokens
            if piece.kind == "hidden":
                continue
            if piece.kind == "reasoning":
                send(self._chunk(gen, self._delta(reasoning=piece.text)))
                continue
            send(self._chunk(gen, self._delta(content=piece.text)))
            content_chunks += 1
            if error_after is not None and content_chunks >= error_after:
                self._finish_metrics(gen, generated, started)
                send(
                    {
                        "error": self._error_object(
                            "Internal server error: the scheduler aborted the request (fake).",
                            "BAD_REQUEST",
                        )
                    }
                )
                if fake.flavor != "openai" and not drop_done:
                    self._event_raw("[DONE]")
                self._end_stream()
                return True
        aborted = gen.abort.is_set() or fake._stopping.is_set()
        finish = "abort" if aborted else gen.finish_reason
        stop = None if aborted else gen.matched_stop
        self._finish_metrics(gen, generated, started)
        send(self._chunk(gen, self._delta(), finish=finish, matched_stop=stop))
        if gen.include_usage:
            usage_chunk = self._chunk(gen, {})
            usage_chunk["choices"] = []
            usage_chunk["usage"] = self._usage(gen, generated)
            send(usage_chunk)
        if fake.flavor != "openai" and not drop_done:
            self._event_raw("[DONE]")
        self._end_stream()
        return aborted

    def _pieces(self, gen: _Generation, delay: float) -> Iterator[Piece]:
        """The planned pieces, paced by ``delay`` per token, until aborted."""
        for piece in gen.pieces:
            if gen.abort.is_set() or self.fake._stopping.is_set():
                return
            if delay:
                self._sleep(delay * piece.tokens, gen)
                if gen.abort.is_set():
                    return
            yield piece


def _envelope(gen: _Generation, kind: str, choice: dict[str, Any]) -> dict[str, Any]:
    """The fields every OpenAI-style answer object starts with: one choice."""
    return {
        "id": gen.rid,
        "object": kind,
        "created": gen.created,
        "model": gen.model,
        "choices": [choice],
    }
