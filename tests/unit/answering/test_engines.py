"""Each engine recognised once and used for what it has (issue 22), on both engines' rules.

The test server's ``vllm`` flavor speaks vLLM 0.26 as observed on a GPU (sglang-facts §9):
``owned_by: "vllm"``, ``GET /version``, ``POST /tokenize`` at the root, 404 for SGLang's
routes, and a hybrid cache that keeps states only at block boundaries where a prefill
chunk ends. ``hybrid_cache`` gives SGLang's Mamba radix cache (checkpoints at request ends
and chunk boundaries).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator

import pytest

from desktop.answering.events import Event, Stored, Usage
from desktop.answering.prompt import PageRange, document_share, prefix_tokens
from desktop.answering.service import Question
from desktop.answering.sets import build_set
from desktop.documents.model import Document
from desktop.errors import EXIT_DOCUMENT, Cancelled, DocumentTooLarge, SetTooLarge
from desktop.store.db import Store
from longdoc_net.endpoint import Engine
from tests.conftest import API_KEY, make_document
from tests.support.answers import answerer_for
from tests.support.sglang_server import FakeSGLang

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "pi",
    "rho",
]
SGLANG_ONLY = ("/server_info", "/get_server_info", "/model_info", "/generate", "/abort_request")


def document(pages: int, seed: int = 1) -> Document:
    """``pages`` pages of ~560 tokens each (a 40-page document is ~20K tokens)."""
    rnd = random.Random(seed)
    return make_document(
        [(str(i), " ".join(rnd.choice(WORDS) for _ in range(420))) for i in range(1, pages + 1)],
        title=f"Document {seed}",
    )


@pytest.fixture
def vllm() -> Iterator[FakeSGLang]:
    with FakeSGLang(api_key=API_KEY, flavor="vllm", context_length=262_144) as server:
        yield server


def reuse(events: list[Event]) -> float:
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.cached_tokens is not None
    return usage.cached_tokens / usage.prompt_tokens


def chats(server: FakeSGLang) -> list[dict[str, object]]:
    return [r.body for r in server.requests if r.path == "/v1/chat/completions"]


# --- item 5: vLLM is recognised and used for what it has --------------------------------------


def test_vllm_is_recognised_from_its_model_list(vllm: FakeSGLang, store: Store) -> None:
    answerer = answerer_for(vllm, store)
    facts = answerer.client.facts()
    assert facts.engine == Engine.VLLM
    assert facts.granularity == vllm.block_size  # from vllm:cache_config_info
    assert facts.tokenize_path == "/tokenize"


def test_vllm_gets_chat_template_kwargs_and_no_probe_it_lacks(
    vllm: FakeSGLang, store: Store
) -> None:
    answerer = answerer_for(vllm, store)
    doc = document(4)
    list(answerer.ask(Question(doc, "What is it?", thinking=False, check_tokens=True)))
    answerer.prewarm(doc, PageRange(1, 2))
    [body] = chats(vllm)
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert "rid" not in body and "separate_reasoning" not in body
    # Zero 404s in the engine's log: no SGLang route is ever asked.
    assert vllm.not_found == []
    assert not any(r.path in SGLANG_ONLY or r.path == "/v1/tokenize" for r in vllm.requests)


def test_a_stopped_vllm_answer_sends_no_abort_request(vllm: FakeSGLang, store: Store) -> None:
    vllm.behaviour.update(token_delay_s=0.05)
    answerer = answerer_for(vllm, store)
    cancel = threading.Event()

    def ask_and_stop() -> None:
        for seen, _ in enumerate(answerer.ask(Question(document(2), "Long answer?"), cancel)):
            if seen == 3:
                cancel.set()

    with pytest.raises(Cancelled):
        ask_and_stop()
    assert not any(r.path == "/abort_request" for r in vllm.requests)
    assert vllm.not_found == []


def test_sglang_is_still_recognised_by_its_server_info(store: Store) -> None:
    with FakeSGLang(api_key=API_KEY, chunked_prefill_size=8192) as server:
        facts = answerer_for(server, store).client.facts()
        assert facts.engine == Engine.SGLANG
        assert facts.granularity == 8192  # the chunk size from /server_info
        assert facts.max_req_input_len == server.max_req_input_len
        assert server.not_found == []


# --- item 1: --check-tokens counts on vLLM -----------------------------------------------------


def test_check_tokens_is_exact_on_vllm(vllm: FakeSGLang, store: Store) -> None:
    plan = answerer_for(vllm, store).plan(Question(document(6), "Count?", check_tokens=True))
    assert plan.server_tokens == plan.local_tokens
    assert any(r.path == "/tokenize" for r in vllm.requests)


# --- item 2: prefix reuse on hybrid models --------------------------------------------------


@pytest.mark.parametrize("pages", [40, 400])
def test_second_question_and_follow_up_reuse_the_document(
    engine: FakeSGLang, store: Store, pages: int
) -> None:
    answerer = answerer_for(engine, store)
    doc = document(pages, seed=pages)
    list(answerer.ask(Question(doc, "What is the first duty?")))
    second = list(answerer.ask(Question(doc, "What is the second duty?")))
    assert reuse(second) >= 0.99
    # Exactly one warm-up, as a raw prompt, before the first question: never a chat one.
    raw = [r for r in engine.requests if r.path in ("/generate", "/v1/completions")]
    assert len(raw) == 1 and len(chats(engine)) == 2


def test_a_page_range_after_the_whole_document_is_warmed_as_its_own_prefix(
    engine: FakeSGLang, store: Store
) -> None:
    answerer = answerer_for(engine, store)
    doc = document(40)
    list(answerer.ask(Question(doc, "What is the first duty?")))
    ranged = list(answerer.ask(Question(doc, "What is it?", pages=PageRange(1, 39))))
    assert reuse(ranged) >= 0.99


def test_a_new_process_does_not_warm_a_prefix_an_answer_already_reused(
    engine: FakeSGLang, store: Store
) -> None:
    doc = document(40)
    list(answerer_for(engine, store).ask(Question(doc, "What is the first duty?")))
    later = answerer_for(engine, store)  # another `longdoc ask`: nothing in memory
    events = list(later.ask(Question(doc, "What is the second duty?")))
    assert reuse(events) >= 0.99
    raw = [r for r in engine.requests if r.path in ("/generate", "/v1/completions")]
    assert len(raw) == 1


def test_was_warm_uses_the_engines_granularity(engine: FakeSGLang, store: Store) -> None:
    answerer = answerer_for(engine, store)
    doc = document(40)
    first = answerer.prewarm(doc)
    again = answerer.prewarm(doc)
    assert not first.was_warm
    assert again.was_warm, again
    assert again.granularity == answerer.client.facts().granularity


def test_a_plain_openai_server_gets_no_warm_up_before_a_question(store: Store) -> None:
    with FakeSGLang(api_key=API_KEY, flavor="openai") as server:
        list(answerer_for(server, store).ask(Question(document(4), "What?")))
        assert not any(r.path in ("/generate", "/v1/completions") for r in server.requests)


# --- item 4: the engine's own too-long refusal is Longdoc's refusal ---------------------------


@pytest.mark.parametrize("flavor", ["vllm", "new"])
def test_the_engines_too_long_400_is_a_document_refusal(flavor: str, store: Store) -> None:
    messages = {
        "vllm": "This model's maximum context length is 8192 tokens. However, you requested "
        "1024 output tokens and your prompt contains at least 7169 input tokens, for a total "
        "of at least 8193 tokens. Please reduce the length of the input prompt or the number "
        "of requested output tokens.",
        "new": "The input (23000 tokens) is longer than the model's context length (8192 tokens).",
    }
    with FakeSGLang(api_key=API_KEY, flavor=flavor) as server:  # type: ignore[arg-type]
        server.behaviour.update(fail_status=400, fail_times=None, fail_message=messages[flavor])
        answerer = answerer_for(server, store)
        doc = document(40)
        plan = answerer.plan(Question(doc, "Too long?"))
        with pytest.raises(DocumentTooLarge) as refused:
            list(answerer.ask(Question(doc, "Too long?")))
    error = refused.value
    assert error.exit_code == EXIT_DOCUMENT
    assert error.needed == plan.budget.prompt_tokens  # Longdoc's exact count, not "at least"
    assert error.context == 8192
    assert error.suggested is not None and error.suggested[1] < 40
    assert "7169" not in str(error)


def test_the_engines_too_long_400_about_a_set_names_each_documents_tokens(store: Store) -> None:
    """The set's form of the refusal above: each document's tokens, not document A alone."""
    message = "The input (43000 tokens) is longer than the model's context length (8192 tokens)."
    with FakeSGLang(api_key=API_KEY) as server:
        server.behaviour.update(fail_status=400, fail_times=None, fail_message=message)
        answerer = answerer_for(server, store)
        a, b = document(4, seed=1), document(10, seed=2)
        docset = build_set([a, b])
        question = Question(a, "Too long?", docset=docset)
        plan = answerer.plan(question)
        with pytest.raises(SetTooLarge) as refused:
            list(answerer.ask(Question(a, "Too long?", docset=docset)))
    error = refused.value
    assert error.exit_code == EXIT_DOCUMENT
    assert error.needed == plan.budget.prompt_tokens
    assert [(letter, tokens) for letter, _, tokens in error.documents] == [
        ("A", document_share(docset, "A")),
        ("B", document_share(docset, "B")),
    ]
    assert a.path in str(error) and b.path in str(error) and "8,192" in str(error)
    assert "drop document" in error.remedy_text


def test_the_prefix_size_is_what_the_warm_up_sends(vllm: FakeSGLang, store: Store) -> None:
    doc = document(10)
    warmed = answerer_for(vllm, store).prewarm(doc)
    assert warmed.prompt_tokens == prefix_tokens(doc, PageRange(1, 10))


def test_the_prefill_estimate_allows_for_vllms_block(vllm: FakeSGLang, store: Store) -> None:
    from desktop.answering.prefill import QUESTION_ALLOWANCE, expected_uncached

    answerer = answerer_for(vllm, store)
    doc = document(40)
    [*_, stored] = answerer.ask(Question(doc, "What is the first duty?"))
    assert isinstance(stored, Stored)
    earlier = [stored.answer]
    block = answerer.client.resume_granularity()
    assert block == vllm.block_size
    now = stored.answer.created_at
    size = stored.answer.prompt_tokens or 0
    plain = expected_uncached(size, earlier, 1, 40, now)
    assert plain == QUESTION_ALLOWANCE
    assert expected_uncached(size, earlier, 1, 40, now, block) == QUESTION_ALLOWANCE + block
