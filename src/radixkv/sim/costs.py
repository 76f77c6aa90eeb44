"""The cost model: how long one engine step takes, from named parameters.

A step runs a batch: prefill chunks (``n`` new tokens after ``p`` already computed) and one
token for each decoding request (context ``c`` tokens). Its time is

    overhead + max(weights, tokens * linear)                      (matmuls: memory or compute bound)
    + full_layers * (Σ_chunks n·(p + (n+1)/2) · attn_pair + Σ_decodes c · kv_read)
    + swa_layers  * (the same with p and c capped at the window)
    + ssm_layers  * (Σ_chunks n · ssm_token + decodes · ssm_state)

``weights`` is reading every weight once (the floor of a small decode step), ``linear`` the
matmul time of one token, ``attn_pair`` one query-key pair of one attention layer in prefill,
``kv_read`` reading one cached token's K and V in one layer during decode, ``ssm_token`` one
token of a state-space scan in prefill, ``ssm_state`` reading and writing one request's state
in decode. ``host_bandwidth`` (tokens of KV per second, every layer's K and V of a token)
is the copy speed between device and host memory, each way: a simulated engine with a host
tier spends ``tokens / host_bandwidth`` seconds on each backup or load-back
(:class:`~radixkv.sim.copies.SimCopyEngine`); ``None``: copies take no time.
``storage_bandwidth`` is the storage tier's, which radixkv does not have yet (unused). All
times are seconds.

The presets are **assumptions** (rough roofline numbers for a kind of model on a kind of
GPU), not measurements; see docs/simulator.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class CostModel:
    name: str
    full_layers: int
    swa_layers: int = 0
    ssm_layers: int = 0
    window: int = 4096
    overhead: float = 2e-3
    weights: float = 6e-3
    linear: float = 4e-5
    attn_pair: float = 4e-11
    kv_read: float = 1.6e-9
    ssm_token: float = 2e-8
    ssm_state: float = 1.5e-6
    host_bandwidth: float | None = None
    storage_bandwidth: float | None = None

    def with_layers(self, components: tuple[str, ...], window: int | None) -> CostModel:
        """The same model with its layers re-mixed for a cache's components: FULL+SWA turns
        three of every four layers into window layers, FULL+MAMBA into SSM layers (the
        1:3 mixes of recent hybrid models); FULL+SWA+MAMBA splits them between both."""
        total = self.full_layers + self.swa_layers + self.ssm_layers
        full = max(1, total // 4) if len(components) > 1 else total
        rest = total - full
        swa = rest if components == ("full", "swa") else 0
        ssm = rest if components == ("full", "mamba") else 0
        if components == ("full", "swa", "mamba"):
            swa, ssm = rest // 2, rest - rest // 2
        return replace(self, full_layers=full, swa_layers=swa, ssm_layers=ssm,
                       window=self.window if window is None else window)

    def prefill(self, new: int, past: int) -> float:
        """Attention and scan time of a chunk of ``new`` tokens after ``past`` (no matmuls)."""
        mean_context = past + (new + 1) / 2
        cost = self.full_layers * new * mean_context * self.attn_pair
        if self.swa_layers:
            cost += self.swa_layers * new * min(mean_context, self.window) * self.attn_pair
        return cost + self.ssm_layers * new * self.ssm_token

    def decode(self, requests: int, context: float, windowed: float) -> float:
        """Attention and state time of one decode token for each of ``requests`` requests
        whose contexts add up to ``context`` (``windowed``: the same capped at the window)."""
        return (self.full_layers * context + self.swa_layers * windowed) * self.kv_read + (
            self.ssm_layers * requests * self.ssm_state)

    def matmuls(self, tokens: int) -> float:
        """Per-step overhead plus the matmuls of a batch of ``tokens`` tokens."""
        return self.overhead + max(self.weights, tokens * self.linear)


PRESETS = {
    # an 8B dense model (32 layers, GQA with 8 KV heads) on one H100-class GPU: 16 GB of
    # weights at ~2.6 TB/s, ~400 TFLOP/s sustained, 4 KiB of KV per token and layer
    # (128 KiB of KV per token); host copies over PCIe 5.0 x16 at ~50 GB/s each way
    "8b-h100": CostModel("8b-h100", full_layers=32, overhead=2e-3, weights=6.2e-3,
                         linear=4e-5, attn_pair=4.1e-11, kv_read=1.6e-9,
                         host_bandwidth=3.8e5),
    # a 70B dense model (80 layers) with tensor parallelism over 8 such GPUs: each holds an
    # eighth of the weights and of the KV heads; all-reduces add to the overhead; each GPU
    # copies its 40 KiB per token of KV over its own ~50 GB/s link, all eight at once
    "70b-8xh100": CostModel("70b-8xh100", full_layers=80, overhead=4e-3, weights=6.7e-3,
                            linear=4.4e-5, attn_pair=1.0e-11, kv_read=2.0e-10,
                            host_bandwidth=1.2e6),
    # a small 1B model on a 24 GB inference card: cheap matmuls, overhead-bound decode;
    # 32 KiB of KV per token over PCIe 4.0 x16 at ~25 GB/s
    "1b-l4": CostModel("1b-l4", full_layers=16, overhead=1.5e-3, weights=8e-3,
                       linear=2.5e-5, attn_pair=6e-11, kv_read=1.5e-9,
                       host_bandwidth=7.6e5),
}
DEFAULT_PRESET = "8b-h100"
