"""A vLLM request's tokens and radixkv namespace.

Read from vLLM 0.32's ``vllm.v1.request.Request`` by attribute (no vLLM import):
``all_token_ids`` (prompt then outputs), ``lora_request`` (its ``lora_name``), ``cache_salt``.
Only token-id prompts are cached: a request with prompt embeddings or multimodal inputs has
KV that its token ids do not determine, so it is neither matched nor saved.
"""

from __future__ import annotations

from typing import Any

__all__ = ["cacheable", "namespace_of"]

Namespace = tuple[object, object]


def namespace_of(request: Any) -> Namespace | None:
    """``(LoRA adapter name, cache salt)``; ``None`` for the default namespace. Prefixes are
    never shared across namespaces, as vLLM's own block hashes keep adapters and salts
    apart."""
    lora = getattr(request, "lora_request", None)
    adapter = None if lora is None else getattr(lora, "lora_name", None) or str(lora)
    salt = getattr(request, "cache_salt", None) or None
    if adapter is None and salt is None:
        return None
    return (adapter, salt)


def cacheable(request: Any) -> bool:
    """Whether the request's KV is a function of its token ids alone."""
    if getattr(request, "prompt_token_ids", None) is None:
        return False  # prompt embeddings
    if getattr(request, "prompt_embeds", None) is not None:
        return False
    return not getattr(request, "mm_features", None)
