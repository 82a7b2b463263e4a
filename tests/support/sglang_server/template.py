"""The chat template: the text-only part of Qwen3.5's chat_template.jinja, and images."""

from __future__ import annotations

import base64
import json
import math
import zlib
from typing import Any

from tests.support.sglang_server.protocol import IM_END, IM_START
from tests.support.sglang_server.tokens import qwen_encoding


class TemplateError(ValueError):
    """The messages cannot be rendered (SGLang answers 400)."""


def content_text(content: Any, system: bool = False) -> str:
    """``render_content``: a string, or the text and image parts of a content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for item in content:
            if isinstance(item, dict) and is_image_part(item):
                if system:
                    raise TemplateError("System message cannot contain images.")
                parts.append(IMAGE_MARKUP)
            elif isinstance(item, dict) and "text" in item:
                parts.append(str(item["text"]))
            else:
                raise TemplateError("Unexpected item type in content.")
        return "".join(parts)
    raise TemplateError("Unexpected content type.")


# Images (Qwen3.5 is multimodal): the template writes IMAGE_MARKUP per image part and the
# server expands <|image_pad|> to one token per 32x32 pixels of the resized image
# (Qwen2-VL image processor: patch 16, merge 2, 65,536..16,777,216 pixels).
IMAGE_MARKUP = "<|vision_start|><|image_pad|><|vision_end|>"
IMAGE_FACTOR = 32


def is_image_part(item: dict[str, Any]) -> bool:
    """An image item as the template recognises one."""
    return "image" in item or "image_url" in item or item.get("type") in ("image", "image_url")


def image_part_size(item: dict[str, Any]) -> tuple[int, int]:
    """(width, height) of a ``data:image/png;base64,...`` image part; TemplateError otherwise."""
    ref = item.get("image_url", item.get("image"))
    url = ref.get("url") if isinstance(ref, dict) else ref
    if not isinstance(url, str) or not url.startswith("data:image/png;base64,"):
        raise TemplateError("The test server only reads PNG images sent as data URLs.")
    try:
        head = base64.b64decode(url.split(",", 1)[1][:44])
    except ValueError as exc:
        raise TemplateError(f"Bad base64 image data: {exc}") from exc
    if not head.startswith(b"\x89PNG\r\n\x1a\n") or head[12:16] != b"IHDR":
        raise TemplateError("The image is not a PNG.")
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def image_tokens(width: int, height: int) -> int:
    """Qwen's smart_resize to multiples of 32 within the pixel bounds; one token per 32x32."""
    f, low, high = IMAGE_FACTOR, 65_536, 16_777_216
    h_bar, w_bar = max(f, round(height / f) * f), max(f, round(width / f) * f)
    if h_bar * w_bar > high:
        beta = math.sqrt(height * width / high)
        h_bar = max(f, math.floor(height / beta / f) * f)
        w_bar = max(f, math.floor(width / beta / f) * f)
    elif h_bar * w_bar < low:
        beta = math.sqrt(low / (height * width))
        h_bar, w_bar = math.ceil(height * beta / f) * f, math.ceil(width * beta / f) * f
    return (h_bar // f) * (w_bar // f)


def message_images(messages: Any) -> list[dict[str, Any]]:
    """Every image part of the messages, in order."""
    found: list[dict[str, Any]] = []
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            found.extend(i for i in content if isinstance(i, dict) and is_image_part(i))
    return found


def expand_images(prompt_ids: list[int], images: list[dict[str, Any]]) -> list[int]:
    """Each ``<|image_pad|>`` replaced by its image's tokens, valued by a hash of the data."""
    # SGLang, too, fills the pads with a hash of the image: the same image hits the prefix
    # cache, another image of the same size does not.
    pad = qwen_encoding().encode("<|image_pad|>", allowed_special="all")[0]
    out: list[int] = []
    queue = list(images)
    for token in prompt_ids:
        if token != pad or not queue:
            out.append(token)
            continue
        item = queue.pop(0)
        width, height = image_part_size(item)
        value = 1_000_000 + zlib.crc32(json.dumps(item, sort_keys=True).encode()) % 1_000_000
        out.extend([value] * image_tokens(width, height))
    return out


def render_chat(
    messages: Any, enable_thinking: bool = True, add_generation_prompt: bool = True
) -> str:
    """Render text-only system/user/assistant messages like Qwen3.5's template.

    Contents are trimmed (the template's ``|trim``); assistant turns before the last user query
    lose their reasoning; later ones are rendered as ``<think>\\n{reasoning}\\n</think>\\n\\n``.
    """
    if not isinstance(messages, list) or not messages:
        raise TemplateError("No messages provided.")
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise TemplateError("Each message needs a role.")
    out: list[str] = []
    if messages[0]["role"] == "system":
        system = content_text(messages[0].get("content"), system=True).strip()
        out.append(f"{IM_START}system\n{system}{IM_END}\n")
    last_query = -1
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] == "user":
            text = content_text(message.get("content")).strip()
            if not (text.startswith("<tool_response>") and text.endswith("</tool_response>")):
                last_query = index
                break
    if last_query < 0:
        raise TemplateError("No user query found in messages.")
    for index, message in enumerate(messages):
        role = message["role"]
        content = content_text(message.get("content")).strip()
        if role == "system":
            if index != 0:
                raise TemplateError("System message must be at the beginning.")
        elif role == "user":
            out.append(f"{IM_START}user\n{content}{IM_END}\n")
        elif role == "assistant":
            reasoning = message.get("reasoning_content")
            if not isinstance(reasoning, str):
                reasoning = ""
                if "</think>" in content:
                    before, _, _ = content.partition("</think>")
                    reasoning = before.rstrip("\n").split("<think>")[-1].lstrip("\n")
                    content = content.split("</think>")[-1].lstrip("\n")
            reasoning = reasoning.strip()
            if index > last_query:
                out.append(f"{IM_START}assistant\n<think>\n{reasoning}\n</think>\n\n{content}")
            else:
                out.append(f"{IM_START}assistant\n{content}")
            out.append(f"{IM_END}\n")
        elif role == "tool":
            previous = messages[index - 1]["role"] if index > 0 else None
            if previous != "tool":
                out.append(f"{IM_START}user")
            out.append(f"\n<tool_response>\n{content}\n</tool_response>")
            following = messages[index + 1]["role"] if index + 1 < len(messages) else None
            if following != "tool":
                out.append(f"{IM_END}\n")
        else:
            raise TemplateError("Unexpected message role.")
    if add_generation_prompt:
        out.append(f"{IM_START}assistant\n")
        out.append("<think>\n" if enable_thinking else "<think>\n\n</think>\n\n")
    return "".join(out)


def thinking_enabled(body: dict[str, Any]) -> bool:
    """SGLang's Qwen3 rule: thinking is on unless explicitly switched off."""
    kwargs = body.get("chat_template_kwargs")
    if isinstance(kwargs, dict) and kwargs.get("enable_thinking") is False:
        return False
    return body.get("reasoning_effort") != "none"
