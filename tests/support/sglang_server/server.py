"""The server object: lifecycle, logs, records, aborts and metrics."""

from __future__ import annotations

import sys
import threading
import time
from http.server import ThreadingHTTPServer
from typing import Any, TextIO

from tests.support.sglang_server.behaviour import Behaviour
from tests.support.sglang_server.cache import BlockCache, PrefixCache
from tests.support.sglang_server.handler import _Handler
from tests.support.sglang_server.protocol import (
    ARCHITECTURE,
    CONNECTION_ERRORS,
    DEFAULT_CONTEXT_LENGTH,
    DEFAULT_MAX_TOTAL_NUM_TOKENS,
    DEFAULT_MODEL,
    FLAVORS,
    VLLM_BLOCK_SIZE,
    VLLM_MAX_NUM_BATCHED_TOKENS,
    Flavor,
    Metrics,
    RecordedRequest,
)


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with daemon threads that stays quiet about dropped connections."""

    daemon_threads = True
    allow_reuse_address = True
    fake: FakeSGLang

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Print unexpected errors only, never a client disconnect."""
        if isinstance(sys.exc_info()[1], CONNECTION_ERRORS):
            return
        super().handle_error(request, client_address)


class FakeSGLang:
    """An SGLang-compatible server on a background thread.

    ``FakeSGLang(port=0).start()`` binds a free port; ``.url`` is its base URL. Use it as a
    context manager to stop it. Requests land in ``.requests``, rendered prompts in
    ``.prompts``, aborted request ids in ``.aborted_rids``.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str | None = None,
        model_name: str = DEFAULT_MODEL,
        context_length: int | None = None,
        max_total_num_tokens: int = DEFAULT_MAX_TOTAL_NUM_TOKENS,
        flavor: Flavor = "new",
        startup_delay: float = 0.0,
        enable_cache_report: bool = True,
        enable_metrics: bool = True,
        cache_granularity: int = 1,
        log_stream: TextIO | None = None,
        log_stages: bool = False,
        behaviour: Behaviour | None = None,
        strict: bool = False,
        hybrid_cache: bool = False,
        chunked_prefill_size: int = 16384,
        block_size: int = VLLM_BLOCK_SIZE,
        max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS,
    ) -> None:
        if flavor not in FLAVORS:
            raise ValueError(f"flavor must be one of {FLAVORS}, not {flavor!r}")
        self.host = host
        self.requested_port = port
        self.api_key = api_key
        self.model_name = model_name
        self.context_length_arg = context_length
        self.context_length = context_length or DEFAULT_CONTEXT_LENGTH
        self.max_total_num_tokens = max_total_num_tokens
        self.flavor: Flavor = flavor
        self.startup_delay = startup_delay
        self.enable_cache_report = enable_cache_report
        self.enable_metrics = enable_metrics
        self.log_stream = log_stream
        self.log_stages = log_stages
        self.behaviour = behaviour if behaviour is not None else Behaviour()
        # Strict: unknown chat fields get 422 and /v1/models has no max_model_len.
        self.strict = strict
        self.cache: PrefixCache | BlockCache = (
            BlockCache(block_size, max_num_batched_tokens)
            if flavor == "vllm"
            else PrefixCache(cache_granularity, hybrid=hybrid_cache, chunk=chunked_prefill_size)
        )
        self.block_size = block_size
        self.metrics = Metrics()
        self.requests: list[RecordedRequest] = []
        self.statuses: list[tuple[str, str, int]] = []  # (method, path, status), not streams
        self.prompts: list[str] = []
        self.aborted_rids: list[str] = []
        self.completed_rids: list[str] = []
        self.images: list[list[tuple[int, int]]] = []  # per chat request with images: sizes
        self.created = int(time.time())
        self._lock = threading.Lock()
        self._aborts: dict[str, threading.Event] = {}
        self._started = threading.Event()  # startup finished ("fired up")
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._startup_epoch = 0

    # ----- lifecycle ---------------------------------------------------------------------

    @property
    def max_req_input_len(self) -> int:
        """SGLang's scheduler-side input limit: ``min(context-1, pool-1) - 5``."""
        return min(self.context_length - 1, self.max_total_num_tokens - 1) - 5

    @property
    def port(self) -> int:
        """The bound port (after ``start()``)."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:30000``."""
        return f"http://{self.host}:{self.port}"

    @property
    def ready(self) -> bool:
        """True once started up and while ``behaviour.ready``."""
        return self._started.is_set() and self.behaviour.ready

    def start(self) -> FakeSGLang:
        """Bind, serve on a daemon thread and run the startup emulation; returns self."""
        httpd = _HTTPServer((self.host, self.requested_port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        server_thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name=f"fake-sglang-{self.port}",
        )
        server_thread.start()
        self._threads.append(server_thread)
        self.restart_startup(self.startup_delay, stages=self.log_stages)
        return self

    def restart_startup(self, delay: float, stages: bool = False) -> None:
        """Be "starting" (health 503) for ``delay`` seconds from now, printing stages if asked."""
        with self._lock:
            self._startup_epoch += 1
            epoch = self._startup_epoch
        self._started.clear()
        if delay <= 0 and not stages:
            self.log(f"Uvicorn running on http://{self.host}:{self.port} (Press CTRL+C to quit)")
            self._started.set()
            self.log("The server is fired up and ready to roll!")
            return
        thread = threading.Thread(
            target=self._run_startup,
            args=(delay, stages, epoch),
            daemon=True,
            name="fake-sglang-startup",
        )
        thread.start()
        self._threads.append(thread)

    def _run_startup(self, delay: float, stages: bool, epoch: int) -> None:
        lines = [
            "Load weight begin. avail mem=180.00 GB",
            f"Load weight end. elapsed=1.23 s, type={ARCHITECTURE}, avail mem=120.00 GB, "
            "mem usage=60.00 GB.",
            "Mamba Cache is allocated. max_mamba_cache_size: 512",
            "Memory pool end. avail mem=20.00 GB",
            f"max_total_num_tokens={self.max_total_num_tokens}, chunked_prefill_size=16384, "
            f"max_prefill_tokens=16384, max_running_requests=64, "
            f"context_len={self.context_length}, available_gpu_mem=20.00 GB",
            f"Uvicorn running on http://{self.host}:{self.port} (Press CTRL+C to quit)",
        ]
        if not stages:
            lines = lines[-1:]
        step = delay / (len(lines) + 1)
        for line in lines:
            if self._stopping.wait(step) or epoch != self._startup_epoch:
                return
            self.log(line)
        if self._stopping.wait(step) or epoch != self._startup_epoch:
            return
        self._started.set()
        self.log("The server is fired up and ready to roll!")

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Block until the startup emulation is over."""
        if not self._started.wait(timeout):
            raise TimeoutError("fake SGLang did not become ready")

    def stop(self) -> None:
        """Stop serving, end running streams and close the socket."""
        self._stopping.set()
        with self._lock:
            for event in self._aborts.values():
                event.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        for thread in self._threads:
            thread.join(timeout=2)

    def __enter__(self) -> FakeSGLang:
        if self._httpd is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----- helpers used by the handler ----------------------------------------------------

    def log(self, message: str) -> None:
        """One SGLang-style log line (``[YYYY-mm-dd HH:MM:SS] message``), flushed."""
        stream = self.log_stream
        if stream is None:
            return
        stamp = time.strftime("[%Y-%m-%d %H:%M:%S]")
        with self._lock:
            stream.write(f"{stamp} {message}\n")
            stream.flush()

    def record(self, request: RecordedRequest) -> None:
        """Keep a request (bounded to the last 10,000)."""
        with self._lock:
            self.requests.append(request)
            del self.requests[:-10_000]

    def record_status(self, method: str, path: str, status: int) -> None:
        """Keep the status of a plain (not streamed) answer, as an access log would."""
        with self._lock:
            self.statuses.append((method, path, status))
            del self.statuses[:-10_000]

    @property
    def chat_bodies(self) -> list[Any]:
        """The bodies of the chat requests received, oldest first."""
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def not_found(self) -> list[str]:
        """The paths answered 404: what an engine's log shows as probes it lacks."""
        with self._lock:
            return [path for _, path, status in self.statuses if status == 404]

    def record_prompt(self, prompt: str) -> None:
        """Keep a rendered prompt (bounded to the last 100)."""
        with self._lock:
            self.prompts.append(prompt)
            del self.prompts[:-100]

    def register(self, rid: str) -> threading.Event:
        """Track a running request so that ``/abort_request`` can reach it."""
        event = threading.Event()
        with self._lock:
            self._aborts[rid] = event
        return event

    def unregister(self, rid: str, aborted: bool) -> None:
        """Forget a finished request, noting whether it was aborted."""
        with self._lock:
            self._aborts.pop(rid, None)
            (self.aborted_rids if aborted else self.completed_rids).append(rid)
            if aborted:
                self.metrics.num_aborted += 1

    def abort(self, rid: str | None, abort_all: bool) -> None:
        """Signal running requests to stop (they end with finish_reason "abort")."""
        with self._lock:
            for key, event in self._aborts.items():
                if abort_all or key == rid:
                    event.set()

    def metrics_text(self) -> str:
        """Prometheus text exposition of the metrics (vLLM's names in its flavor)."""
        if self.flavor == "vllm":
            return self._vllm_metrics_text()
        m = self.metrics
        labels = f'engine_type="unified",model_name="{self.model_name}",pp_rank="0",tp_rank="0"'
        with self._lock:
            hit_rate = m.cached_tokens / m.prompt_tokens if m.prompt_tokens else 0.0
            gauges: list[tuple[str, str, float]] = [
                ("num_running_reqs", "The number of running requests.", m.running),
                ("num_queue_reqs", "The number of requests in the waiting queue.", 0),
                ("gen_throughput", "The generation throughput (token/s).", m.gen_throughput),
                ("cache_hit_rate", "The prefix cache hit rate.", hit_rate),
                ("token_usage", "The token usage.", m.running_tokens / self.max_total_num_tokens),
                ("num_used_tokens", "The number of used tokens.", m.running_tokens),
                ("mamba_usage", "The mamba cache usage.", 0.01 * m.running),
            ]
            if self.flavor == "new":
                gauges += [
                    ("max_total_num_tokens", "Size of the KV pool.", self.max_total_num_tokens),
                    ("context_len", "The context length.", self.context_length),
                ]
            counters: list[tuple[str, str, float, str]] = [
                ("prompt_tokens", "Number of prefill tokens processed.", m.prompt_tokens, ""),
                ("generation_tokens", "Number of generation tokens.", m.generation_tokens, ""),
                (
                    "cached_tokens",
                    "Number of cached prompt tokens.",
                    m.cached_tokens,
                    ',cache_source="device"',
                ),
                ("num_requests", "The number of requests.", m.num_requests, ""),
                ("num_aborted_requests", "The number of aborted requests.", m.num_aborted, ""),
            ]
        lines: list[str] = []
        for name, help_text, value in gauges:
            lines += [
                f"# HELP sglang:{name} {help_text}",
                f"# TYPE sglang:{name} gauge",
                f"sglang:{name}{{{labels}}} {float(value)}",
            ]
        for name, help_text, value, extra in counters:
            lines += [
                f"# HELP sglang:{name}_total {help_text}",
                f"# TYPE sglang:{name}_total counter",
                f"sglang:{name}_total{{{labels}{extra}}} {float(value)}",
            ]
        return "\n".join(lines) + "\n"

    def _vllm_metrics_text(self) -> str:
        """vLLM's names: running/waiting requests, KV usage, prefix-cache counters (they
        equal the responses' prompt and cached token counts), the cache config."""
        m = self.metrics
        labels = f'engine="0",model_name="{self.model_name}"'
        with self._lock:
            samples: list[tuple[str, str, str, float]] = [
                ("num_requests_running", "gauge", "Number of requests running.", m.running),
                ("num_requests_waiting", "gauge", "Number of requests waiting.", 0),
                (
                    "kv_cache_usage_perc",
                    "gauge",
                    "KV-cache usage. 1 means 100 percent usage.",
                    m.running_tokens / self.max_total_num_tokens,
                ),
                ("prefix_cache_queries_total", "counter", "Prefix cache queries.", m.prompt_tokens),
                ("prefix_cache_hits_total", "counter", "Prefix cache hits.", m.cached_tokens),
                ("prompt_tokens_total", "counter", "Number of prefill tokens.", m.prompt_tokens),
                ("generation_tokens_total", "counter", "Generation tokens.", m.generation_tokens),
            ]
        lines: list[str] = []
        for name, kind, help_text, value in samples:
            lines += [
                f"# HELP vllm:{name} {help_text}",
                f"# TYPE vllm:{name} {kind}",
                f"vllm:{name}{{{labels}}} {float(value)}",
            ]
        lines += [
            "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
            "# TYPE vllm:cache_config_info gauge",
            f'vllm:cache_config_info{{block_size="{self.block_size}",cache_dtype="auto",'
            f'enable_prefix_caching="True",engine="0",mamba_cache_mode="align"}} 1.0',
        ]
        return "\n".join(lines) + "\n"
