"""A tiny Llama checkpoint with seeded random weights, written at test time.

The weights are drawn from a seeded normal distribution (std 0.05 for every matrix, 1.0 for
the RMSNorm scales), so the model's outputs depend strongly on every token it attends to: a
cache that hands back the wrong KV shows up as different greedy tokens and logprobs.
SGLang's ``load_format="dummy"`` is not used on purpose: its near-zero weights make the
model nearly blind to its KV, and a broken cache would go unnoticed.

Only ``config.json`` and ``model.safetensors`` are written; engines run with
``skip_tokenizer_init=True`` and take prompts as token ids (all below ``VOCAB_SIZE``).
"""

from __future__ import annotations

import sys
from pathlib import Path

VOCAB_SIZE = 512
MATRIX_STD = 0.05
MIN_STD = 0.02

CONFIG = dict(
    vocab_size=VOCAB_SIZE,
    hidden_size=256,
    intermediate_size=512,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=64,
    max_position_embeddings=2048,
    rms_norm_eps=1e-5,
    rope_theta=10000.0,
    tie_word_embeddings=False,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
    dtype="float32",
)


def write_checkpoint(directory: str | Path, seed: int = 0,
                     vocab_size: int = VOCAB_SIZE) -> Path:
    """Write the tiny seeded Llama to ``directory`` (created if missing) and return it.

    Deterministic for a given ``seed`` (and ``vocab_size``): the same bytes of weights every
    time. ``vocab_size`` defaults to ``VOCAB_SIZE``; a larger one (e.g. 32000 for SGLang's
    radix-attention stress kit, whose token ids go up to 31999) changes only the embedding
    and LM-head shapes.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    config = LlamaConfig(**{**CONFIG, "vocab_size": vocab_size})
    with torch.device("cpu"):
        model = LlamaForCausalLM(config).to(torch.float32)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _name, param in sorted(model.named_parameters()):
            if param.ndim >= 2:
                values = torch.randn(param.shape, generator=generator, dtype=torch.float32)
                param.copy_(values * MATRIX_STD)
            else:  # RMSNorm scales
                param.fill_(1.0)
        for name, param in model.named_parameters():
            if param.ndim >= 2:
                std = float(param.std())
                assert std >= MIN_STD, f"{name}: weight std {std:.4f} < {MIN_STD}"
    model.save_pretrained(out, safe_serialization=True)
    assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
    return out


if __name__ == "__main__":  # python tests/engines/checkpoint.py DIR [SEED]
    print(write_checkpoint(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0))
