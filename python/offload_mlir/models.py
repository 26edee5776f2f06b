"""Plain-PyTorch models used to produce the shipped examples.

`LlamaBlock` is a Llama-3-style decoder layer: RMSNorm, grouped-query
attention with rotary embeddings and causal
`torch.nn.functional.scaled_dot_product_attention`, a SwiGLU MLP, and two
residual connections. `LlamaStack` chains `n_layers` of them and owns the
rotary tables (non-persistent buffers), so one module traces a whole step.

`TitanLM` is the same model with torchtitan's (and Meta's reference
Llama's) rotary embedding: a complex `freqs_cis` table, applied with
`view_as_complex` / `view_as_real`, sliced to each batch's length, so one
model takes any length up to its table's.

Presets: `llama-block` is Llama-3-8B's layer shape (hidden 4096, 32 query
heads, 8 key/value heads, head dim 128, MLP 14336); `tiny-block` is a
64-wide toy of the same structure for fast tests.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = [
    "LlamaConfig",
    "RMSNorm",
    "Attention",
    "MLP",
    "LlamaBlock",
    "LlamaStack",
    "LlamaLM",
    "TitanLM",
    "precompute_freqs_cis",
    "apply_rotary_emb",
    "preset",
    "preset_shape",
]


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    hidden: int = 4096
    heads: int = 32
    kv_heads: int = 8
    head_dim: int | None = None  # default hidden // heads
    ffn: int = 14336
    rope_theta: float = 500000.0
    eps: float = 1e-5

    @property
    def head_dim_(self) -> int:
        return self.head_dim if self.head_dim is not None else self.hidden // self.heads


_PRESETS = {
    "llama-block": LlamaConfig(),
    "tiny-block": LlamaConfig(hidden=64, heads=4, kv_heads=2, ffn=128, rope_theta=10000.0),
}
_SHAPES = {
    "llama-block": {"batch": 8, "seq": 1024, "dtype": torch.bfloat16},
    "tiny-block": {"batch": 2, "seq": 16, "dtype": torch.float32},
}


def preset(name: str) -> LlamaConfig:
    return _PRESETS[name]


def preset_shape(name: str) -> dict:
    return dict(_SHAPES[name])


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, device=device, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


def rope_tables(seq: int, head_dim: int, theta: float, device=None, dtype=None):
    """cos and sin tables, [seq, head_dim], in Llama's half-split layout."""
    inv_freq = 1.0 / (
        theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    )
    pos = torch.arange(seq, device=device, dtype=torch.float32)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return x * cos + rotate_half(x) * sin


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[B, KV, S, D] -> [B, KV * n_rep, S, D], as in Hugging Face's Llama."""
    if n_rep == 1:
        return x
    b, kv, s, d = x.shape
    return x[:, :, None, :, :].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig, device=None, dtype=None):
        super().__init__()
        self.heads = cfg.heads
        self.kv_heads = cfg.kv_heads
        self.head_dim = cfg.head_dim_
        kw = dict(bias=False, device=device, dtype=dtype)
        self.q_proj = nn.Linear(cfg.hidden, cfg.heads * self.head_dim, **kw)
        self.k_proj = nn.Linear(cfg.hidden, cfg.kv_heads * self.head_dim, **kw)
        self.v_proj = nn.Linear(cfg.hidden, cfg.kv_heads * self.head_dim, **kw)
        self.o_proj = nn.Linear(cfg.heads * self.head_dim, cfg.hidden, **kw)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        n_rep = self.heads // self.kv_heads
        k = repeat_kv(k, n_rep)
        v = repeat_kv(v, n_rep)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o = o.transpose(1, 2).reshape(b, s, self.heads * self.head_dim)
        return self.o_proj(o)


class MLP(nn.Module):
    def __init__(self, cfg: LlamaConfig, device=None, dtype=None):
        super().__init__()
        kw = dict(bias=False, device=device, dtype=dtype)
        self.gate_proj = nn.Linear(cfg.hidden, cfg.ffn, **kw)
        self.up_proj = nn.Linear(cfg.hidden, cfg.ffn, **kw)
        self.down_proj = nn.Linear(cfg.ffn, cfg.hidden, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self, cfg: LlamaConfig, device=None, dtype=None):
        super().__init__()
        self.input_norm = RMSNorm(cfg.hidden, cfg.eps, device=device, dtype=dtype)
        self.attn = Attention(cfg, device=device, dtype=dtype)
        self.post_attn_norm = RMSNorm(cfg.hidden, cfg.eps, device=device, dtype=dtype)
        self.mlp = MLP(cfg, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        h = x + self.attn(self.input_norm(x), cos, sin)
        return h + self.mlp(self.post_attn_norm(h))


class LlamaStack(nn.Module):
    """`n_layers` Llama blocks over a [batch, seq, hidden] activation.

    With `loss=True` the step ends in `out.float().pow(2).mean()` (a scalar,
    so backward starts from a scalar tangent); otherwise it returns the
    hidden states, as a slice of a larger model would.
    """

    def __init__(
        self,
        cfg: LlamaConfig,
        n_layers: int,
        seq: int,
        device=None,
        dtype=None,
        loss: bool = False,
    ):
        super().__init__()
        self.layers = nn.ModuleList(
            LlamaBlock(cfg, device=device, dtype=dtype) for _ in range(n_layers)
        )
        cos, sin = rope_tables(seq, cfg.head_dim_, cfg.rope_theta, device=device, dtype=dtype)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.loss = loss

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, self.rope_cos, self.rope_sin)
        if self.loss:
            return x.float().pow(2).mean()
        return x


class LlamaLM(nn.Module):
    """A whole Llama-style causal language model: token embedding, `n_layers`
    blocks, a final RMSNorm and an output head, with cross-entropy loss.

    `tie_embeddings=True` shares the embedding matrix with the head (as small
    Llama-style models do), so one parameter gets gradients from both ends.
    `forward(tokens, targets)` returns the mean loss.
    """

    def __init__(
        self,
        cfg: LlamaConfig,
        n_layers: int,
        seq: int,
        vocab: int,
        device=None,
        dtype=None,
        tie_embeddings: bool = False,
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab, cfg.hidden, device=device, dtype=dtype)
        self.stack = LlamaStack(cfg, n_layers, seq, device=device, dtype=dtype)
        self.norm = RMSNorm(cfg.hidden, cfg.eps, device=device, dtype=dtype)
        self.head = nn.Linear(cfg.hidden, vocab, bias=False, device=device, dtype=dtype)
        if tie_embeddings:
            self.head.weight = self.embed.weight

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.stack(self.embed(tokens))))

    @staticmethod
    def loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1)
        )

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        # Split in two so that a caller can wrap only the model, not the loss,
        # in a saved-tensor hook (as torchtune's recipes do).
        return self.loss(self.logits(tokens), targets)


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    """torchtitan's rotary table: complex64 [end, dim // 2], e^(i t f)."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq: torch.Tensor, xk: torch.Tensor,
                     freqs_cis: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """torchtitan's rotary embedding of [batch, seq, heads, head_dim] queries
    and keys: pairs of features as complex numbers, times `freqs_cis[:seq]`."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    seq = xq_.shape[1]
    freqs = freqs_cis[0:seq].view(1, seq, 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * freqs).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class _TitanAttention(Attention):
    def forward(self, x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim)
        q, k = apply_rotary_emb(q, k, freqs_cis)
        n_rep = self.heads // self.kv_heads
        q, k, v = q.transpose(1, 2), repeat_kv(k.transpose(1, 2), n_rep), \
            repeat_kv(v.transpose(1, 2), n_rep)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(o.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))


class _TitanBlock(LlamaBlock):
    def __init__(self, cfg: LlamaConfig, device=None, dtype=None):
        super().__init__(cfg, device=device, dtype=dtype)
        self.attn = _TitanAttention(cfg, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
        h = x + self.attn(self.input_norm(x), freqs_cis)
        return h + self.mlp(self.post_attn_norm(h))


class TitanLM(nn.Module):
    """`LlamaLM` with torchtitan's complex rotary embedding (`freqs_cis`, a
    non-persistent complex64 buffer of `max_seq` positions), taking token
    batches of any length up to `max_seq`."""

    def __init__(self, cfg: LlamaConfig, n_layers: int, max_seq: int, vocab: int,
                 device=None, dtype=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, cfg.hidden, device=device, dtype=dtype)
        self.layers = nn.ModuleList(
            _TitanBlock(cfg, device=device, dtype=dtype) for _ in range(n_layers))
        self.norm = RMSNorm(cfg.hidden, cfg.eps, device=device, dtype=dtype)
        self.head = nn.Linear(cfg.hidden, vocab, bias=False, device=device, dtype=dtype)
        self.register_buffer(
            "freqs_cis", precompute_freqs_cis(cfg.head_dim_, max_seq, cfg.rope_theta).to(device),
            persistent=False)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)
        for layer in self.layers:
            h = layer(h, self.freqs_cis)
        return LlamaLM.loss(self.head(self.norm(h)), targets)
