#!/usr/bin/env python3
"""Which gradients a recompute budget changes, and why: Inductor's own
`activation_memory_budget` against the backend under the same budget.

Trains one step of a GPT-NeoX-style decoder (Pythia's layout: LayerNorm,
parallel attention and GELU MLP, partial rotary embedding) under each
variant below, in one process, deterministic (use_deterministic_algorithms,
TORCHINDUCTOR_DETERMINISTIC=1, the FX graph cache off), from the same seed,
parameters and tokens, and compares every gradient bit for bit:

    compile               plain torch.compile (run twice: the control)
    compile:amb           Inductor with activation_memory_budget=--amb
    offload:amb:nocopies  backend(recompute_budget=--amb, recompute=False,
                          min_bytes=2**62): the bridge's partition and
                          rebuild, nothing offloaded
    offload:amb           backend(recompute_budget=--amb, recompute=False)
    offload:amb:joint     backend(recompute_budget=--amb) (the joint plan on
                          top of Inductor's budget)
    offload               backend() at Inductor's default budget

For each pair of variants that differ, it says whether the graphs Inductor
compiled hold the same computation (the multiset of compute ops, the
offload copies left out) and, on a GPU, whether the same kernels ran (the
profiler's kernel names, their numbering left out): the same computation
in other kernels is a kernel-choice difference; other ops are a real one.

    python3 python/benchmarks/recompute_identity.py --device cuda --out identity.json
    python3 python/benchmarks/recompute_identity.py --device cpu --layers 2 --seq 128 \\
        --hidden 128 --heads 4 --ffn 512 --batch 2 --dtype fp32
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys

os.environ.setdefault("TORCHINDUCTOR_DETERMINISTIC", "1")
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE)))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class NeoXLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, rotary_pct: float):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.rot = int(self.head_dim * rotary_pct) // 2 * 2
        self.ln_attn = nn.LayerNorm(hidden)
        self.ln_mlp = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.dense = nn.Linear(hidden, hidden)
        self.up = nn.Linear(hidden, ffn)
        self.down = nn.Linear(ffn, hidden)

    def rotary(self, x, cos, sin):
        r, p = x[..., :self.rot], x[..., self.rot:]
        r1, r2 = r.chunk(2, dim=-1)
        r = r * cos + torch.cat((-r2, r1), dim=-1) * sin
        return torch.cat((r, p), dim=-1)

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln_attn(x)).view(b, s, self.heads, 3 * self.head_dim) \
            .transpose(1, 2).chunk(3, dim=-1)
        q, k = self.rotary(q, cos, sin), self.rotary(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        attn = self.dense(a.transpose(1, 2).reshape(b, s, h))
        mlp = self.down(F.gelu(self.up(self.ln_mlp(x))))
        return x + attn + mlp


class NeoXLM(nn.Module):
    def __init__(self, layers, hidden, heads, ffn, vocab, seq, rotary_pct=0.25):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(NeoXLayer(hidden, heads, ffn, rotary_pct)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
        rot = self.layers[0].rot
        inv = 1.0 / (10000 ** (torch.arange(0, rot, 2).float() / rot))
        freqs = torch.outer(torch.arange(seq).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, tokens, targets):
        x = self.embed(tokens)
        cos, sin = self.cos.to(x.dtype), self.sin.to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        logits = self.head(self.norm(x)).float()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def compute_ops(graph) -> collections.Counter:
    """The compute ops of an FX graph, offload copies left out."""
    ops = collections.Counter()
    for node in graph.nodes:
        if node.op == "call_function" and not str(node.target).startswith("offload."):
            ops[str(node.target)] += 1
    return ops


class GraphRecorder:
    """Inductor's post-grad custom pass: keeps the compute ops of each graph
    Inductor compiles, as it compiles them (after its own decompositions)."""

    def __init__(self):
        self.graphs = []

    def __call__(self, graph):
        self.graphs.append(compute_ops(graph))


def variants(amb: float):
    import offload_mlir
    return [
        ("compile", "inductor", None),
        ("compile (control)", "inductor", None),
        (f"compile:amb={amb}", "inductor", amb),
        (f"offload:amb={amb}:nocopies",
         offload_mlir.backend(recompute_budget=amb, recompute=False, min_bytes=2**62), None),
        (f"offload:amb={amb}", offload_mlir.backend(recompute_budget=amb, recompute=False), None),
        (f"offload:amb={amb}:joint", offload_mlir.backend(recompute_budget=amb), None),
        ("offload", offload_mlir.backend(), None),
    ]


def train_once(args, backend, amb):
    torch._dynamo.reset()
    torch.manual_seed(0)
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    model = NeoXLM(args.layers, args.hidden, args.heads, args.ffn, args.vocab, args.seq) \
        .to(device=args.device, dtype=dtype)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1),
                           generator=torch.Generator().manual_seed(1)).to(args.device)
    recorder = GraphRecorder()
    patch = {} if amb is None else {"activation_memory_budget": amb}
    kernels = collections.Counter()
    step = torch.compile(model, backend=backend, dynamic=False)
    with torch._inductor.config.patch(fx_graph_cache=False,
                                      post_grad_custom_post_pass=recorder), \
            torch._functorch.config.patch(patch):
        loss = step(tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())
        loss.backward()
        if args.device == "cuda":
            torch.cuda.synchronize()
            model.zero_grad(set_to_none=True)
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                loss = step(tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())
                loss.backward()
                torch.cuda.synchronize()
            for e in prof.events():
                if e.device_type == torch.autograd.DeviceType.CUDA:
                    kernels[re.sub(r"_\d+$", "", e.name)] += 1
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    return loss.detach().clone(), grads, recorder.graphs, kernels


def differences(a, b) -> dict:
    differing = [n for n in a[1] if not torch.equal(a[1][n], b[1][n])]
    ops_a = sum(a[2], collections.Counter())
    ops_b = sum(b[2], collections.Counter())
    # Inductor lowers these to copies and layout changes; the bridge's
    # rebuild and Inductor's own partition may differ in them alone.
    ignore = re.compile(r"aten\.(view|_unsafe_view|reshape|t|permute|transpose|expand|"
                        r"clone|alias|detach|squeeze|unsqueeze)\b|getitem")
    only_a = {k: v for k, v in (ops_a - ops_b).items() if not ignore.search(k)}
    only_b = {k: v for k, v in (ops_b - ops_a).items() if not ignore.search(k)}
    out = {
        "loss_identical": bool(torch.equal(a[0], b[0])),
        "grads_differing": differing,
        "compute_ops_only_in_first": only_a,
        "compute_ops_only_in_second": only_b,
    }
    if a[3] or b[3]:
        out["kernels_only_in_first"] = dict(a[3] - b[3])
        out["kernels_only_in_second"] = dict(b[3] - a[3])
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=2560)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--ffn", type=int, default=10240)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--amb", type=float, default=0.8)
    p.add_argument("--out", help="write the comparisons here as JSON")
    args = p.parse_args(argv)
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False

    results = {}
    for name, backend, amb in variants(args.amb):
        results[name] = train_once(args, backend, amb)
        print(f"{name}: loss {results[name][0].item():.6f}", flush=True)
    names = list(results)
    pairs = [("compile", "compile (control)"), ("compile", f"compile:amb={args.amb}")]
    pairs += [(f"compile:amb={args.amb}", n) for n in names[3:6]]
    pairs += [("compile", "offload")]
    report = {"args": vars(args), "comparisons": []}
    for first, second in pairs:
        d = differences(results[first], results[second])
        d.update(first=first, second=second)
        report["comparisons"].append(d)
        same = not d["grads_differing"] and d["loss_identical"]
        print(f"{first} vs {second}: {'identical' if same else 'DIFFER'} "
              f"({len(d['grads_differing'])} gradients differ); compute ops only in "
              f"first {d['compute_ops_only_in_first']}, only in second "
              f"{d['compute_ops_only_in_second']}")
        if not same and "kernels_only_in_first" in d:
            print(f"  kernels only in first: {d['kernels_only_in_first']}")
            print(f"  kernels only in second: {d['kernels_only_in_second']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
    control = report["comparisons"][0]
    return 0 if not control["grads_differing"] and control["loss_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
