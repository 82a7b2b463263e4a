"""Routing of one HTTP connection's requests, and the endpoints that do not generate."""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import unquote, urlsplit

from tests.support.sglang_server.generation import GenerationHandler
from tests.support.sglang_server.protocol import (
    ARCHITECTURE,
    TOKENIZER_MODEL_MAX_LENGTH,
    VERSIONS,
    ClientGone,
    RecordedRequest,
)
from tests.support.sglang_server.template import (
    TemplateError,
    expand_images,
    message_images,
    render_chat,
    thinking_enabled,
)
from tests.support.sglang_server.tokens import decode, encode


class _Handler(GenerationHandler):
    """Routes one HTTP connection's requests to the fake."""

    def do_GET(self) -> None:
        """Dispatch GET."""
        self._dispatch("GET")

    def do_POST(self) -> None:
        """Dispatch POST."""
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        """Dispatch DELETE (only for 404/405 answers)."""
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        fake = self.fake
        split = urlsplit(self.path)
        path = split.path
        raw = self._read_body() if method == "POST" else b""
        body: Any = None
        bad_json = False
        if raw:
            try:
                body = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                bad_json = True
        if not path.startswith("/_test/"):
            fake.record(RecordedRequest(method, self.path, dict(self.headers.items()), body))
        if not self._authorised(path):
            if fake.flavor == "openai":
                self._json(401, {"detail": "Unauthorized"})
            else:
                self._json(401, {"error": "Unauthorized"})
            return
        sglang = fake.flavor in ("new", "old")
        vllm = fake.flavor == "vllm"
        route = (method, path)
        try:
            if method == "GET" and path in self._health_paths():
                self._empty(200 if fake.ready else 503)
            elif route == ("GET", "/v1/models"):
                self._json(200, {"object": "list", "data": [self._model_card()]})
            elif method == "GET" and path.startswith("/v1/models/"):
                self._one_model(unquote(path[len("/v1/models/") :]))
            elif sglang and method == "GET" and path in ("/model_info", "/get_model_info"):
                self._json(200, self._model_info())
            elif sglang and method == "GET" and path in ("/server_info", "/get_server_info"):
                self._json(200, self._server_info())
            elif path == "/metrics" and method == "GET" and fake.enable_metrics:
                self._text(200, fake.metrics_text(), "text/plain; version=0.0.4; charset=utf-8")
            elif sglang and path == "/flush_cache" and method in ("GET", "POST"):
                self._flush_cache()
            elif bad_json:
                self._error(400, "Invalid JSON body")
            elif vllm and route == ("GET", "/version"):
                self._json(200, {"version": VERSIONS["vllm"]})
            elif sglang and route in (("POST", "/v1/tokenize"), ("POST", "/tokenize")):
                self._tokenize(body)
            elif vllm and route == ("POST", "/tokenize"):
                self._tokenize(body)  # at the root only: /v1/tokenize is 404 on vLLM
            elif (sglang and route in (("POST", "/v1/detokenize"), ("POST", "/detokenize"))) or (
                vllm and route == ("POST", "/detokenize")
            ):
                self._detokenize(body)
            elif sglang and route == ("POST", "/abort_request"):
                body = body if isinstance(body, dict) else {}
                fake.abort(body.get("rid"), bool(body.get("abort_all")))
                self._empty(200)
            elif route == ("POST", "/v1/chat/completions"):
                self._chat(body)
            elif sglang and route == ("POST", "/generate"):
                self._prefill_request(body, native=True)
            elif route == ("POST", "/v1/completions"):
                self._prefill_request(body, native=False)
            elif path == "/_test/behaviour":
                self._test_behaviour(method, body)
            elif route == ("GET", "/_test/state"):
                self._test_state()
            else:
                self._not_found()
        except ClientGone:
            self.close_connection = True

    def _model_card(self) -> dict[str, Any]:
        fake = self.fake
        card = {
            "id": fake.model_name,
            "object": "model",
            "created": fake.created,
            "owned_by": {"openai": "openai-compatible", "vllm": "vllm"}.get(fake.flavor, "sglang"),
            "root": fake.model_name,
            "parent": None,
            "max_model_len": fake.context_length,
        }
        if fake.strict:
            del card["max_model_len"]  # as transformers serve, llama.cpp, LM Studio
        return card

    def _one_model(self, name: str) -> None:
        if name == self.fake.model_name:
            self._json(200, self._model_card())
            return
        if self.fake.flavor == "openai":
            self._json(404, {"detail": f"The model '{name}' does not exist"})
            return
        self._json(
            404,
            {
                "error": {
                    "message": f"The model '{name}' does not exist",
                    "type": "invalid_request_error",
                    "param": "model",
                    "code": "model_not_found",
                }
            },
        )

    def _model_info(self) -> dict[str, Any]:
        fake = self.fake
        info: dict[str, Any] = {
            "model_path": fake.model_name,
            "tokenizer_path": fake.model_name,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "load_format": "auto",
            "disaggregation_mode": "null",
            "has_image_understanding": fake.behaviour.image_understanding,
            "has_audio_understanding": False,
            "model_type": "qwen3_5_moe",
            "architectures": [ARCHITECTURE],
        }
        if fake.flavor == "new":
            info["served_model_name"] = fake.model_name
            info["reasoning_parser"] = "qwen3"
            info["tool_call_parser"] = "qwen3_coder"
        return info

    def _server_info(self) -> dict[str, Any]:
        fake = self.fake
        info: dict[str, Any] = {
            "model_path": fake.model_name,
            "served_model_name": fake.model_name,
            "tokenizer_path": fake.model_name,
            "host": fake.host,
            "port": fake.port,
            "context_length": fake.context_length_arg,
            "chunked_prefill_size": fake.cache.chunk,
            "max_prefill_tokens": fake.cache.chunk,
            "max_running_requests": 64,
            "tp_size": 1,
            "attention_backend": "triton",
            "reasoning_parser": "qwen3",
            "tool_call_parser": "qwen3_coder",
            "enable_metrics": fake.enable_metrics,
            "enable_cache_report": fake.enable_cache_report,
            "disable_radix_cache": False,
            "api_key": None,
            "max_total_num_tokens": fake.max_total_num_tokens,
            "max_req_input_len": fake.max_req_input_len,
            "startup_time": 42.0,
            "internal_states": [
                {
                    "last_gen_throughput": fake.metrics.gen_throughput,
                    "effective_max_running_requests_per_dp": 64,
                }
            ],
            "version": VERSIONS[fake.flavor],
        }
        if fake.flavor == "new":
            info["launch_command"] = "python -m sglang.launch_server (fake)"
            info["kv_events"] = None
            info["frontend"] = "http"
        return info

    def _flush_cache(self) -> None:
        fake = self.fake
        text = (
            "Cache flushed.\nPlease check backend logs for more details. (When there are "
            "running or waiting requests, the operation will not be performed.)\n"
        )
        with fake._lock:
            busy = fake.metrics.running > 0
        if not busy:
            fake.cache.clear()
        self._text(400 if busy else 200, text)

    def _tokenize(self, body: Any) -> None:
        if not isinstance(body, dict):
            self._error(400, "Request body must be a JSON object")
            return
        prompt = body.get("prompt")
        messages = body.get("messages")
        if messages is not None and self.fake.flavor in ("new", "vllm"):
            try:
                rendered = render_chat(
                    messages,
                    enable_thinking=thinking_enabled(body),
                    add_generation_prompt=body.get("add_generation_prompt", True) is not False,
                )
            except TemplateError as exc:
                self._error(400, str(exc))
                return
            try:
                tokens = expand_images(encode(rendered), message_images(messages))
            except TemplateError as exc:
                self._error(400, str(exc))
                return
            self._json(
                200,
                {
                    "tokens": tokens,
                    "count": len(tokens) + self.fake.behaviour.tokenize_extra,
                    "max_model_len": self._tokenizer_max_len(),
                },
            )
            return
        if isinstance(prompt, str):
            tokens = encode(prompt)
            self._json(
                200,
                {
                    "tokens": tokens,
                    "count": len(tokens),
                    "max_model_len": self._tokenizer_max_len(),
                },
            )
        elif isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
            lists = [encode(p) for p in prompt]
            self._json(
                200,
                {
                    "tokens": lists,
                    "count": [len(t) for t in lists],
                    "max_model_len": self._tokenizer_max_len(),
                },
            )
        else:
            self._error(400, "1 validation error: 'prompt' must be a string or a list of strings")

    def _tokenizer_max_len(self) -> int:
        """SGLang reports the tokenizer's model_max_length; vLLM its max_model_len."""
        return (
            self.fake.context_length if self.fake.flavor == "vllm" else TOKENIZER_MODEL_MAX_LENGTH
        )

    def _detokenize(self, body: Any) -> None:
        tokens = body.get("tokens") if isinstance(body, dict) else None
        skip = bool(body.get("skip_special_tokens", True)) if isinstance(body, dict) else True
        if isinstance(tokens, list) and all(isinstance(t, int) for t in tokens):
            self._json(200, {"text": decode(tokens, skip)})
        elif isinstance(tokens, list) and all(
            isinstance(t, list) and all(isinstance(i, int) for i in t) for t in tokens
        ):
            self._json(200, {"text": [decode(t, skip) for t in tokens]})
        else:
            self._error(400, "1 validation error: 'tokens' must be a list of ints or of lists")

    def _test_behaviour(self, method: str, body: Any) -> None:
        fake = self.fake
        if method == "POST":
            if not isinstance(body, dict):
                self._json(400, {"detail": "expected a JSON object of behaviour fields"})
                return
            changes = dict(body)
            delay = changes.pop("startup_delay", None)
            try:
                fake.behaviour.update(**changes)
            except KeyError as exc:
                self._json(400, {"detail": str(exc.args[0])})
                return
            if delay is not None:
                fake.restart_startup(float(delay), stages=fake.log_stages)
        self._json(200, fake.behaviour.snapshot())

    def _test_state(self) -> None:
        fake = self.fake
        with fake._lock:
            state = {
                "requests": [dataclasses.asdict(r) for r in fake.requests],
                "prompts": list(fake.prompts),
                "aborted_rids": list(fake.aborted_rids),
                "completed_rids": list(fake.completed_rids),
                "ready": fake.ready,
            }
        self._json(200, state)
