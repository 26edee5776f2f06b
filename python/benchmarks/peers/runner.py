"""`python -m benchmarks.peers`: offload-mlir against the other ways of
training a model whose activations do not fit, side by side in one run.

    python -m benchmarks.peers --config bf16x8 --out docs/benchmarks/peers-bf16x8
    python -m benchmarks.peers --config fp32x9 --rows compile,offload-mlir
    python -m benchmarks.peers --rows compile,offload-mlir --repeat 3 --no-profile
    python -m benchmarks.peers --plot-from docs/benchmarks/peers-bf16x8.json
    python -m benchmarks.peers --merge a.json b.json --out docs/benchmarks/peers-bf16x8
    python -m benchmarks.peers --config bf16x8 --rows frontier,peers --out frontier-bf16x8

The model is `offload_mlir.models.LlamaLM` with Llama-3-8B shapes (hidden
4096, MLP 14336, 32 heads, 8 KV heads, vocab 128256), 8 x 1024 tokens: the
whole step is forward, cross-entropy and backward (`--optimizer adamw` adds
an AdamW step). `--config bf16x8` has 8 bf16 layers, `fp32x9` 9 fp32 layers.

Each row runs in its own process (so each peak is its own), from the same
seed, parameters and data, with `torch.use_deterministic_algorithms(True)`
unless `--no-deterministic`. Rows (`--rows`, comma-separated, where the
name of a row set stands for its rows, below):

    eager                  no offloading, eager
    compile                no offloading, torch.compile (Inductor)
    checkpoint             per-layer torch.utils.checkpoint (non-reentrant), eager
    checkpoint-compile     the same under torch.compile
    sac-compile            selective activation checkpointing under torch.compile:
                           each layer in torch.utils.checkpoint (non-reentrant)
                           with context_fn=create_selective_checkpoint_contexts
                           and a policy that saves the outputs of aten.mm, addmm,
                           bmm and the scaled-dot-product-attention ops
                           (MUST_SAVE, SAC_SAVED_OPS) and recomputes every other
                           op (PREFER_RECOMPUTE)
    torch-offload          PyTorch's compiler-level offloading
                           (torch._functorch.config.enable_activation_offloading,
                           every node marked should_offload), synchronous
    torch-offload-stream   the same on a separate stream, with wait sinking;
                           `:prefetch=1` adds reload prefetch, whose reordering
                           benchmarks kernels, which Inductor refuses in
                           deterministic mode: that row runs non-deterministic
    torchtune              torchtune's OffloadActivations with streams, output
                           head opted out, loss outside (as its recipes do), eager
    layer-group[=K]        a layer-group offloader in the manner of Megatron-Core
                           and Transformer Engine (below), offloading layers
                           0..K-1 (default: all but the last), eager
    offload-mlir[:k=v...]  torch.compile(backend=offload_mlir.backend(...)), with
                           `plan=`, `budget=`, `schedule=`, `min_bytes=`,
                           `load_lead=` passed to the backend, `profile=PATH`
                           as its device_profile (default: the packaged one
                           for this GPU), `reuse_freed_buffers=1` (Inductor's
                           buffer reuse on, and planned with), and
                           `amb=` setting Inductor's recompute budget
                           (activation_memory_budget); `checkpoint=1` runs the
                           per-layer checkpointed model of checkpoint-compile
                           through it, `checkpoint=sac` sac-compile's
    compile:amb=X          torch.compile with that recompute budget alone (also
                           checkpoint-compile:amb=X, sac-compile:amb=X)
    ...:partition.NAME=V   (compile, checkpoint-compile, sac-compile and offload-mlir
                           rows) torch._functorch.config.NAME for the row's
                           partitioner, e.g.
                           partition.ban_recompute_materialized_backward=0
    ...:inductor.NAME=V    (the same rows) torch._inductor.config.NAME for the
                           row's code generation, e.g. inductor.allow_buffer_reuse=0

The peers from their own packages (python/benchmarks/peer_wheels.sh downloads
them and what they need beside the GPU machine's packages into .whl/; install
them there with `pip install --no-index --no-deps --target DIR .whl/*.whl` and
put DIR on PYTHONPATH). Each runs the LlamaLM on one device in this process,
with no distributed launcher; where it cannot run, it fails saying why:

    deepspeed-cpu-ckpt     DeepSpeed 0.19's activation checkpointing with CPU
                           checkpointing, eager: deepspeed.checkpointing.configure(
                           None, checkpoint_in_cpu=True) and each layer through
                           deepspeed.checkpointing.checkpoint (reentrant); each
                           layer's input is copied to pinned host memory on a side
                           stream (but the last layer's) and recomputed from in
                           backward. A gloo group of this one process stands for
                           the launcher's (deepspeed.init_distributed). On a CPU
                           device it fails: DeepSpeed's synchronous path empties
                           the input it meant to copy. `:partition=1` adds
                           partition_activations (all of each input with one
                           process), whose copy is a blocking .cpu()
    megatron-offload       Megatron-Core 0.19's fine-grained activation offloading
                           (FineGrainedActivationOffloadingInterface), each layer
                           one offload group, eager. Fails: its offload context
                           needs Transformer Engine, whose PyTorch extension is
                           published only as source for a CUDA build against the
                           installed torch (its CUDA 13 library alone is a 276 MB
                           wheel); the in-house layer-group row stands in for it
    thunder-offload        Lightning Thunder's CPUOffloading transform,
                           thunder.jit(model, transforms=[CPUOffloading()]),
                           compared with compile. Fails: lightning-thunder 0.2.6
                           ships no such transform (at tag 0.2.6 it is only the
                           tutorial notebook writing_a_trace_transform_cpu_offloading)

Row sets (ROW_SETS): `frontier` is compile, compile:amb=0.8, 0.6, 0.4, 0.2,
checkpoint-compile, sac-compile, offload-mlir, offload-mlir:budget=0.9, 0.75,
0.6 and offload-mlir:checkpoint=1; `peers` is eager, checkpoint,
deepspeed-cpu-ckpt, deepspeed-cpu-ckpt:partition=1, megatron-offload and
thunder-offload.

Eager rows are compared with `eager` and compiled rows with `compile`, each
for step time, peak memory and gradients (bit for bit, through a position-
weighted checksum of every gradient's bits, and every loss); an offload-mlir
row's gradients with the row that runs the same model through Inductor with
the same settings and no offloading (Row.grad_baseline): `compile`, or
`compile:amb=X` and the like, and with `checkpoint=1` (`sac`)
`checkpoint-compile` (`sac-compile`), since checkpointing changes the kernels
Inductor generates. Figures per row:
median step time after `--warmup` steps, peak allocated GPU memory
(`torch.cuda.max_memory_allocated`), pinned host bytes, peak host RSS, bytes
moved each way and the exposed copy time, both from a torch.profiler trace of
one more step (copy time during which no kernel ran), and for offload-mlir
rows the planner's predicted step time and peak. The planner sees forward
and backward, not an optimizer: with `--optimizer adamw` each row also times
forward and backward on their own (CUDA events) and takes their peak, and
the table sets the prediction beside those, the peak less the optimizer's
state (resident throughout, outside the graphs).

A ratio from one pair of processes moves by a few percent between runs on
the H100 (three pairs in a row: 1.024x, 1.041x, 1.034x). `--repeat N` runs
the whole row list N times in turn, each round compared within itself, and
the table adds each row's ratio to its baseline per round: median, min, max.

`--paired A,B` times two compiled rows in one process instead: both models
(the same weights) compiled, then their steps interleaved A B B A A B ...,
so drift and periodic slow phases of the machine fall on both alike. It
gives the ratio of each B step to the A steps next to it (median, quartiles,
and the ratio of the medians) and each row's step times; no peak memory
(both models are resident), no profile. On CUDA it also gives, per stretch
(forward, backward), the compute stream's device time from CUDA events and
the host's time. One process's median still moves by about ±0.5% on the
H100 (compile against compile: 1.001x); with `--repeat N` the pairs run in
N processes, and the table gives each process's median and all the pairs
pooled.

Writes `<out>.json` (every figure, rewritten after each row so a cut-off run
keeps what finished), `<out>.md` (the table) and `<out>.png` (peak memory
against step time, a point for every measured row and in its key the rows
that failed, with why; needs matplotlib, else `--plot-from` draws it later).
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import dataclasses
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, NamedTuple

GiB = 2**30
MiB = 2**20

# Llama-3-8B's shapes, and the two configurations of the benchmark.
CONFIGS = {
    "bf16x8": {"dtype": "bf16", "layers": 8},
    "fp32x9": {"dtype": "f32", "layers": 9},
    # A toy of the same structure, for the CPU test of the benchmark itself.
    "tiny": {"dtype": "f32", "layers": 3, "hidden": 64, "heads": 4, "kv_heads": 2,
             "ffn": 128, "vocab": 512, "batch": 2, "seq": 32},
}
MODEL_DEFAULTS = {"hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336,
                  "vocab": 128256, "batch": 8, "seq": 1024}

DEFAULT_ROWS = ("eager,compile,checkpoint,checkpoint-compile,torch-offload,"
                "torch-offload-stream,torchtune,layer-group,offload-mlir,"
                "offload-mlir:plan=all,offload-mlir:budget=0.9,offload-mlir:budget=0.75,"
                "offload-mlir:budget=0.6,compile:amb=0.5,offload-mlir:amb=0.5")


# ---------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class Row:
    name: str
    family: str  # a key of _FAMILIES
    compiled: bool
    options: dict[str, str]
    needs_cuda: bool = False

    @property
    def baseline(self) -> str:
        return "compile" if self.compiled else "eager"

    @property
    def compiler_options(self) -> dict[str, str]:
        """What changes the partition or the generated code, so which kernels
        run: `amb=` and the `partition.NAME=` and `inductor.NAME=` settings,
        as given."""
        return {k: v for k, v in self.options.items()
                if k == "amb" or k.startswith(CONFIG_PREFIXES)}

    @property
    def checkpointing(self) -> str | None:
        """How the row's model checkpoints its decoder layers: "layer" (each
        layer in torch.utils.checkpoint), "sac" (the same with the selective
        policy, SAC_SAVED_OPS saved), or None."""
        if self.family in ("checkpoint", "checkpoint-compile"):
            return "layer"
        if self.family == "sac-compile":
            return "sac"
        if self.family == "offload-mlir":
            return CHECKPOINT_OPTION[self.options.get("checkpoint", "0")]
        return None

    @property
    def grad_baseline(self) -> str:
        """The row whose gradients this one must match bit for bit: the
        baseline; for an offload-mlir row the plain Inductor row of the same
        model and compiler settings, without offloading (recompute changes
        which kernels run): `compile`, or with a recompute budget or
        partitioner settings `compile` with the same ones, and with
        `checkpoint=` the checkpointed model's row (`checkpoint-compile` or
        `sac-compile`) with them."""
        if self.family == "offload-mlir":
            base = CHECKPOINTED_COMPILE_ROW[self.checkpointing]
            return ":".join([base] + [f"{k}={v}" for k, v in self.compiler_options.items()])
        return self.baseline


# A row option `partition.NAME=VALUE` sets torch._functorch.config.NAME for
# the row's partitioner, and `inductor.NAME=VALUE` torch._inductor.config.NAME
# for its code generation (compile and offload-mlir rows).
PARTITION_PREFIX = "partition."
INDUCTOR_PREFIX = "inductor."
CONFIG_PREFIXES = (PARTITION_PREFIX, INDUCTOR_PREFIX)

# offload-mlir's `checkpoint=` values: how its model checkpoints (Row.checkpointing).
CHECKPOINT_OPTION = {"0": None, "1": "layer", "layer": "layer", "sac": "sac"}
# The plain Inductor row of a model checkpointed so (offload-mlir's grad baseline).
CHECKPOINTED_COMPILE_ROW = {None: "compile", "layer": "checkpoint-compile",
                            "sac": "sac-compile"}
# The compiled rows that run Inductor alone: their recompute budget and
# config settings are torch's process-wide settings.
INDUCTOR_FAMILIES = ("compile", "checkpoint-compile", "sac-compile")


_FAMILIES = {
    # name: (compiled, needs CUDA, options it takes)
    "eager": (False, False, ()),
    "compile": (True, False, ("amb",)),
    "checkpoint": (False, False, ()),
    "checkpoint-compile": (True, False, ("amb",)),
    "sac-compile": (True, False, ("amb",)),
    "torch-offload": (True, True, ()),
    "torch-offload-stream": (True, True, ("prefetch",)),
    "torchtune": (False, True, ()),
    "layer-group": (False, False, ("layers", "min_bytes")),
    "offload-mlir": (True, False, ("plan", "budget", "schedule", "min_bytes", "amb",
                                   "load_lead", "profile", "reuse_freed_buffers",
                                   "checkpoint")),
    # The peers' own packages (python/benchmarks/peer_wheels.sh); each row
    # says itself why where it cannot run.
    "deepspeed-cpu-ckpt": (False, False, ("partition",)),
    "megatron-offload": (False, False, ()),
    "thunder-offload": (True, False, ()),
}

# Named row lists for --rows, each expanded where it stands in the list.
ROW_SETS = {
    # Issue 30's frontier: Inductor's recompute budgets, checkpointing whole
    # layers and selectively, offload-mlir's budgets at their peaks, and a
    # checkpointed model through offload-mlir.
    "frontier": ("compile,compile:amb=0.8,compile:amb=0.6,compile:amb=0.4,compile:amb=0.2,"
                 "checkpoint-compile,sac-compile,offload-mlir,offload-mlir:budget=0.9,"
                 "offload-mlir:budget=0.75,offload-mlir:budget=0.6,offload-mlir:checkpoint=1"),
    # The peers from their own packages, with the eager rows they compare with.
    "peers": ("eager,checkpoint,deepspeed-cpu-ckpt,deepspeed-cpu-ckpt:partition=1,"
              "megatron-offload,thunder-offload"),
}


def expand_rows(spec: str) -> list[str]:
    """The row specs of `--rows`: comma-separated rows and names of ROW_SETS."""
    out = []
    for item in (s.strip() for s in spec.split(",")):
        if item:
            out.extend(expand_rows(ROW_SETS[item]) if item in ROW_SETS else [item])
    return out


def parse_row(spec: str) -> Row:
    """`family[:key=value...]`, or `layer-group=K`."""
    spec = spec.strip()
    family, *opts = spec.split(":")
    options: dict[str, str] = {}
    if family.startswith("layer-group="):
        family, options["layers"] = family.split("=", 1)
    if family not in _FAMILIES:
        raise ValueError(f"unknown row {spec!r}; rows: {', '.join(_FAMILIES)}")
    compiled, needs_cuda, allowed = _FAMILIES[family]
    for opt in opts:
        key, eq, value = opt.partition("=")
        if key.startswith(CONFIG_PREFIXES) and family in (*INDUCTOR_FAMILIES, "offload-mlir"):
            config_setting(key, value)  # checks it
        elif not eq or key not in allowed:
            raise ValueError(f"row {spec!r}: {family} takes "
                             f"{', '.join(k + '=' for k in allowed) or 'no options'}")
        elif key == "profile" and not os.path.isfile(value):
            raise ValueError(f"row {spec!r}: no device profile at {value!r}")
        elif key == "checkpoint" and value not in CHECKPOINT_OPTION:
            raise ValueError(f"row {spec!r}: checkpoint= takes "
                             f"{', '.join(CHECKPOINT_OPTION)}, not {value!r}")
        elif key == "partition" and value.lower() not in ("0", "1", "true", "false"):
            raise ValueError(f"row {spec!r}: partition= takes 0 or 1, not {value!r}")
        options[key] = value
    return Row(spec, family, compiled, options, needs_cuda)


def _compiled_backend(row: Row):
    return _offload_mlir_backend(row) if row.family == "offload-mlir" else "inductor"


def _config_module(prefix: str):
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    return {PARTITION_PREFIX: functorch_config, INDUCTOR_PREFIX: inductor_config}[prefix]


def config_setting(key: str, value: str) -> Any:
    """The value of the row option `partition.NAME=VALUE` for
    torch._functorch.config.NAME, or of `inductor.NAME=VALUE` for
    torch._inductor.config.NAME, of that setting's type; ValueError if there
    is none or VALUE does not parse as one."""
    prefix = next(p for p in CONFIG_PREFIXES if key.startswith(p))
    name, config = key[len(prefix):], _config_module(prefix)
    if name.startswith("_") or not hasattr(config, name):
        raise ValueError(f"{key}: {config.__name__} has no {name!r}")
    current = getattr(config, name)
    try:
        if isinstance(current, bool):
            return {"1": True, "true": True, "0": False, "false": False}[value.lower()]
        if isinstance(current, (int, float)):
            return type(current)(value)
    except (KeyError, ValueError):
        raise ValueError(f"{key}={value}: not a {type(current).__name__}") from None
    if isinstance(current, str):
        return value
    raise ValueError(f"{key}: a {type(current).__name__} setting; "
                     "rows set only booleans, numbers and strings")


def _row_config(row: Row, prefix: str) -> dict[str, Any]:
    """The row's settings of one config module, by name, parsed."""
    return {k[len(prefix):]: config_setting(k, v)
            for k, v in row.options.items() if k.startswith(prefix)}


def _set_process_compiler_config(torch, row: Row) -> None:
    """A compile row's (or checkpoint-compile's, sac-compile's) `amb=`,
    `partition.NAME=` and `inductor.NAME=` are torch's process-wide settings
    (offload-mlir rows give theirs to the backend, as `recompute_budget`,
    `partitioner_config` and `inductor_config`)."""
    if row.family not in INDUCTOR_FAMILIES:
        return
    if "amb" in row.options:
        torch._functorch.config.activation_memory_budget = float(row.options["amb"])
    for prefix in CONFIG_PREFIXES:
        for name, value in _row_config(row, prefix).items():
            setattr(_config_module(prefix), name, value)


# The ops whose outputs selective checkpointing saves (MUST_SAVE); it
# recomputes every other op of a layer in backward (PREFER_RECOMPUTE): the
# matrix products and attention, not the cheap ops between them.
SAC_SAVED_OPS = ("mm", "addmm", "bmm", "_scaled_dot_product_flash_attention",
                 "_scaled_dot_product_efficient_attention",
                 "_scaled_dot_product_cudnn_attention",
                 "_scaled_dot_product_flash_attention_for_cpu")


def sac_policy():
    """The selective checkpointing policy of the `sac` rows, for
    torch.utils.checkpoint.create_selective_checkpoint_contexts."""
    import torch
    from torch.utils.checkpoint import CheckpointPolicy

    saved = {getattr(torch.ops.aten, name) for name in SAC_SAVED_OPS
             if hasattr(torch.ops.aten, name)}

    def policy(ctx, op, *args, **kwargs):
        packet = getattr(op, "overloadpacket", op)
        return (CheckpointPolicy.MUST_SAVE if packet in saved
                else CheckpointPolicy.PREFER_RECOMPUTE)

    return policy


def checkpoint_layers(model, how: str | None) -> None:
    """Wraps each decoder layer of the benchmark's Llama in
    torch.utils.checkpoint (non-reentrant): the whole layer recomputed in
    backward ("layer"), or with the selective policy of sac_policy ("sac");
    nothing for None."""
    if how is None:
        return
    import functools

    from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

    kw: dict[str, Any] = {"use_reentrant": False}
    if how == "sac":
        kw["context_fn"] = functools.partial(create_selective_checkpoint_contexts,
                                             sac_policy())
    for layer in model.stack.layers:
        layer.forward = (lambda f: lambda *a: checkpoint(f, *a, **kw))(layer.forward)


def _offload_mlir_backend(row: Row):
    import offload_mlir

    kw: dict[str, Any] = {}
    for key in ("plan", "min_bytes", "schedule", "budget", "load_lead",
                "reuse_freed_buffers"):
        if key not in row.options:
            continue
        value: Any = row.options[key]
        if key == "min_bytes":
            value = int(value)
        elif key == "load_lead":
            value = float(value)
        elif key in ("schedule", "reuse_freed_buffers"):
            value = value.lower() in ("1", "true", "yes")
        elif key == "budget":
            try:
                value = float(value) if "." in value else int(value)
            except ValueError:
                pass  # a size string such as "20GiB"
        kw[key] = value
    if "profile" in row.options:
        kw["device_profile"] = row.options["profile"]
    if "amb" in row.options:
        kw["recompute_budget"] = float(row.options["amb"])
    if config := _row_config(row, PARTITION_PREFIX):
        kw["partitioner_config"] = config
    if config := _row_config(row, INDUCTOR_PREFIX):
        kw["inductor_config"] = config
    return offload_mlir.backend(**kw)


def compiled_cuda_rows(config: str, rows: list[Row]):
    """The benchmark's Llama on CUDA for tools that time or record compiled
    rows outside `run_row` (python/benchmarks/kernel_interference.py,
    peak_snapshot.py): deterministic algorithms, no TF32, each row's
    partitioner settings process-wide, then per row the model (seed 0, so
    every row has the same weights, checkpointed as the row says) and
    torch.compile of it with the row's backend; and one batch of tokens. Returns ([(model, compiled)], tokens)."""
    import torch

    from offload_mlir import models

    cfg = dict(MODEL_DEFAULTS) | CONFIGS[config]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.use_deterministic_algorithms(True)
    for row in rows:
        _set_process_compiler_config(torch, row)
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[cfg["dtype"]]
    llama = models.LlamaConfig(hidden=cfg["hidden"], heads=cfg["heads"],
                               kv_heads=cfg["kv_heads"], ffn=cfg["ffn"])
    compiled = []
    for row in rows:
        torch.manual_seed(0)
        model = models.LlamaLM(llama, cfg["layers"], cfg["seq"], cfg["vocab"], device="cuda",
                               dtype=dtype)
        checkpoint_layers(model, row.checkpointing)
        compiled.append((model, torch.compile(model, backend=_compiled_backend(row),
                                              dynamic=False)))
    tokens = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"] + 1),
                           generator=torch.Generator().manual_seed(1)).cuda()
    return compiled, tokens


def _mark_all_for_offload(graph) -> None:
    # PyTorch's compiler-level offloading moves the saved values whose nodes
    # are marked; it decides itself which of those it can move.
    for node in graph.nodes:
        if node.op == "call_function":
            node.meta["should_offload"] = True


# ---------------------------------------------------------------------------
# The layer-group offloader: the strongest hand-written peer
# ---------------------------------------------------------------------------


class LayerGroupOffloader:
    """Offloads each decoder layer's saved tensors as a group, in the manner
    of Megatron-Core's and Transformer Engine's CPU offloading:

    * a layer's saved tensors (not parameters, not under `min_bytes`) are
      copied to pinned host memory on a D2H stream as they are saved; the
      compute stream goes on, and the allocator gets each source back once
      its copy is done (`record_stream`);
    * the pinned buffers are a pool reused from step to step;
    * the last layer's tensors stay on the GPU, since backward needs them
      first;
    * backward prefetches one layer ahead: when it reaches layer i, the
      copies of layer i-1 start on an H2D stream (after that layer's D2H
      copies end), into memory allocated on the compute stream, which waits
      for each copy only where it is used.

    On a CPU device the copies are plain copies into host tensors, so the
    bookkeeping is exercised without a GPU.
    """

    def __init__(self, model, offload_layers: int | None = None, min_bytes: int = 1 << 20):
        import torch

        self.torch = torch
        layers = list(model.stack.layers)
        n = len(layers) - 1 if offload_layers is None else offload_layers
        self.offloaded_layers = set(range(max(0, min(n, len(layers)))))
        self.min_bytes = min_bytes
        self.param_storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.cuda = next(model.parameters()).is_cuda
        if self.cuda:
            self.d2h = torch.cuda.Stream()
            self.h2d = torch.cuda.Stream()
        self.pool: dict[tuple[int, int], Any] = {}
        self.current: int | None = None
        self.counts: dict[int, int] = {}
        self.loaded: dict[tuple[int, int], tuple[Any, Any]] = {}
        self.offloaded_events: dict[tuple[int, int], Any] = {}
        self.prefetched: set[int] = set()
        self.d2h_bytes = self.h2d_bytes = 0
        for i, layer in enumerate(layers):
            layer.register_forward_pre_hook(lambda m, a, i=i: self._enter(i))
            layer.register_forward_hook(lambda m, a, o: self._leave(), always_call=True)
        self.hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    def _enter(self, i: int) -> None:
        if i == 0:  # a new step
            self.counts.clear()
            self.prefetched.clear()
            self.loaded.clear()
        self.current = i

    def _leave(self) -> None:
        self.current = None

    def _pack(self, t):
        i = self.current
        if i is None:
            return (None, t)
        if (i not in self.offloaded_layers or t.device.type == "meta"
                or t.untyped_storage().data_ptr() in self.param_storages
                or t.numel() * t.element_size() < self.min_bytes):
            return (i, t)  # kept, but it tells backward which layer it is in
        slot = (i, self.counts.get(i, 0))
        self.counts[i] = slot[1] + 1
        torch = self.torch
        buf = self.pool.get(slot)
        if buf is None or buf.shape != t.shape or buf.stride() != t.stride() or buf.dtype != t.dtype:
            buf = torch.empty_like(t, device="cpu", pin_memory=self.cuda)
            self.pool[slot] = buf
        if self.cuda:
            self.d2h.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.d2h):
                buf.copy_(t, non_blocking=True)
                # Its load must not read the pinned buffer before this copy
                # ends: with everything but one layer offloaded, the D2H
                # stream runs far behind forward.
                self.offloaded_events[slot] = torch.cuda.Event()
                self.offloaded_events[slot].record()
            t.record_stream(self.d2h)
        else:
            buf.copy_(t)
        self.d2h_bytes += t.numel() * t.element_size()
        return (i, slot)

    def _load_layer(self, i: int) -> None:
        if i in self.prefetched or i not in self.offloaded_layers:
            return
        self.prefetched.add(i)
        torch = self.torch
        for k in range(self.counts.get(i, 0)):
            buf = self.pool[(i, k)]
            dev = torch.empty_like(buf, device="cuda" if self.cuda else "cpu")
            event = None
            if self.cuda:
                self.h2d.wait_stream(torch.cuda.current_stream())
                self.h2d.wait_event(self.offloaded_events.pop((i, k)))
                with torch.cuda.stream(self.h2d):
                    dev.copy_(buf, non_blocking=True)
                    event = torch.cuda.Event()
                    event.record()
                # Freed unread (not in this model), it still waits for its copy.
                dev.record_stream(self.h2d)
            else:
                dev.copy_(buf)
            self.h2d_bytes += buf.numel() * buf.element_size()
            self.loaded[(i, k)] = (dev, event)

    def _unpack(self, packed):
        i, payload = packed
        if i is None:
            return payload
        # Backward reached layer i: its own copies (normally started one
        # layer earlier) and the next layer's.
        self._load_layer(i)
        self._load_layer(i - 1)
        if not isinstance(payload, tuple):
            return payload
        dev, event = self.loaded.pop(payload)
        if event is not None:
            self.torch.cuda.current_stream().wait_event(event)
        return dev


def _torchtune_offloader(model):
    """torchtune's `OffloadActivations` and `NoOpManager`, from torchtune's
    wheel (`OFFLOAD_MLIR_TORCHTUNE`, a .whl or a directory holding
    `torchtune/`). The module's code runs unchanged; only its imports that
    the GPU machine cannot satisfy without a package registry (torchao for an
    NF4 type check, torchtune.modules, torchtune.utils' logger, and psutil if
    absent) are stood in for."""
    import importlib.util
    import logging
    import types
    import zipfile

    source = os.environ.get("OFFLOAD_MLIR_TORCHTUNE", "")
    member = "torchtune/training/_activation_offloading.py"
    if source.endswith(".whl"):
        with zipfile.ZipFile(source) as z:
            code = z.read(member).decode()
    elif source:
        with open(os.path.join(source, member)) as f:
            code = f.read()
    else:
        raise RuntimeError("set OFFLOAD_MLIR_TORCHTUNE to torchtune's wheel "
                           "(scripts/fetch-bench-deps.sh downloads it)")

    stubs = {}

    def stub(name, **attrs):
        if name in sys.modules:
            return
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        stubs[name] = mod

    class _NoNF4:  # torchao's NF4Tensor: never matches a plain tensor
        pass

    class _NoTiedLinear:
        pass

    stub("torchao")
    stub("torchao.dtypes")
    stub("torchao.dtypes.nf4tensor", NF4Tensor=_NoNF4)
    stub("torchtune")
    stub("torchtune.modules", TiedLinear=_NoTiedLinear)
    stub("torchtune.utils", get_logger=lambda level="INFO": logging.getLogger("torchtune"))
    try:
        import psutil  # noqa: F401
    except ImportError:
        def virtual_memory():
            info = {}
            with open("/proc/meminfo") as f:
                for line in f:
                    k, v = line.split(":", 1)
                    info[k] = int(v.split()[0])
            used = 1 - info["MemAvailable"] / info["MemTotal"]
            return types.SimpleNamespace(percent=100 * used)

        stub("psutil", virtual_memory=virtual_memory)
    sys.modules.update(stubs)
    mod = types.ModuleType("torchtune_activation_offloading")
    exec(compile(code, f"{source}/{member}", "exec"), mod.__dict__)
    ctx = mod.OffloadActivations(use_streams=True)
    # torchtune's get_act_offloading_ctx_manager opts the output head out.
    noop = mod.NoOpManager()
    model.head.register_forward_pre_hook(lambda *a: noop.__enter__())
    model.head.register_forward_hook(lambda *a: noop.__exit__(), always_call=True)
    return ctx


# ---------------------------------------------------------------------------
# The peers from their own packages (python/benchmarks/peer_wheels.sh)
# ---------------------------------------------------------------------------

PEER_WHEELS = ("python/benchmarks/peer_wheels.sh downloads it into .whl/: pip install "
               "--no-index --no-deps --target DIR .whl/*.whl, with DIR on PYTHONPATH")


def _import_peer(module: str, row: str, package: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise RuntimeError(f"{row}: {package} is not installed ({e}); {PEER_WHEELS}") from e


def _single_process_env() -> None:
    """The environment of torch.distributed's env:// initialisation for a
    group of this one process (rank 0 of 1, a free local port), where no
    launcher set it: DeepSpeed and Megatron-Core ask the group for ranks,
    and with one process nothing is communicated."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"),
                       ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", str(port))):
        os.environ.setdefault(key, value)


def _deepspeed_cpu_checkpointing(model, partition: bool):
    """DeepSpeed's activation checkpointing with CPU checkpointing, from
    deepspeed 0.19: `deepspeed.checkpointing.configure(None,
    partition_activations=partition, checkpoint_in_cpu=True)` and each
    decoder layer run through `deepspeed.checkpointing.checkpoint` (its
    reentrant CheckpointFunction), as Megatron-DeepSpeed's layers do. Only
    the layer's input goes through the checkpoint: it saves nothing of the
    layer but that input, which it copies to pinned host memory (without
    `partition`, on a side stream, all but the last layer's; with it,
    `.cpu()` of the input's partition, all of it with one process) and
    empties on the GPU; the rope tables, the model's buffers that every
    layer reads, stay out of it (they are closed over). DeepSpeed's
    communication backend is a gloo group of this one process, set up
    here (deepspeed.init_distributed): no launcher. On a CPU device only
    `partition` runs (the other path empties the input it meant to copy).
    Returns a function giving the row's DeepSpeed figures."""
    deepspeed = _import_peer("deepspeed", "deepspeed-cpu-ckpt", "deepspeed 0.19")
    from deepspeed.runtime.activation_checkpointing import checkpointing as ds_checkpointing

    if not partition and not next(model.parameters()).is_cuda:
        # Its synchronous path copies the input "to the CPU" with .to(), the
        # same tensor on a CPU device, whose storage it then empties.
        raise RuntimeError(
            "deepspeed-cpu-ckpt: on a CPU device DeepSpeed's checkpoint_in_cpu without "
            "partition_activations empties the checkpointed input itself (its copy to the "
            "CPU, .to('cpu'), is the same tensor): run it on CUDA, or with partition=1")
    _single_process_env()
    deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False, verbose=False)
    deepspeed.checkpointing.configure(None, partition_activations=partition,
                                      checkpoint_in_cpu=True)
    checkpoint = deepspeed.checkpointing.checkpoint
    for layer in model.stack.layers:
        layer.forward = (lambda f: lambda x, cos, sin: checkpoint(
            lambda h: f(h, cos, sin), x))(layer.forward)

    def figures() -> dict:
        engine = ds_checkpointing._cpu_offload_engine
        return {"package": f"deepspeed {deepspeed.__version__}",
                "cpu_checkpointing": ds_checkpointing.CPU_CHECKPOINT,
                "partition_activations": ds_checkpointing.PARTITION_ACTIVATIONS,
                # The asynchronous engine (CUDA, without partitioning); None
                # where DeepSpeed copies synchronously.
                "offload_engine": None if engine is None else dataclasses.asdict(engine.stats)}
    return figures


def _megatron_fine_grained_offloading(model):
    """Megatron-Core's fine-grained activation offloading, from megatron-core
    0.19 (megatron.core.pipeline_parallel.fine_grained_activation_offload):
    each decoder layer one offload group, as TransformerLayer opens one per
    offloaded module (`with FineGrainedActivationOffloadingInterface(...)`,
    then `group_offload` of its output), a chunk handler per step as
    GPTModel.preprocess_for_fine_grained_offloading makes it (the default
    1M-element minimum and offload fraction 1), and reset() between steps
    as Megatron's schedules call it; torch.distributed is a gloo group of
    this one process (its offload summary gathers over the group).

    Its offload context (PipelineOffloadManager.__enter__) needs Transformer
    Engine, and raises "TE CPU offload is not available" without it: the
    row checks that first, through the same module megatron-core reads it
    from, and fails saying so. Transformer Engine's PyTorch extension
    (transformer-engine-torch 2.20) is published only as source, built with
    CUDA against the installed torch, beside a 276 MB library wheel
    (transformer-engine-cu13): neither is carried, so the code past that
    check has not run anywhere."""
    import importlib.metadata

    import torch

    fgao = _import_peer("megatron.core.pipeline_parallel.fine_grained_activation_offload",
                        "megatron-offload", "megatron-core 0.19")
    te_ext = _import_peer("megatron.core.extensions.transformer_engine", "megatron-offload",
                          "megatron-core 0.19")
    version = importlib.metadata.version("megatron-core")
    if te_ext.cpu_offload is None:
        raise RuntimeError(
            f"megatron-offload: megatron-core {version}'s fine-grained activation offloading "
            "needs Transformer Engine, not installed ('TE CPU offload is not available': "
            "PipelineOffloadManager.__enter__ sets transformer_engine.pytorch.cpu_offload."
            "CPUOffloadEnabled); TE's PyTorch extension is source-only (a CUDA build against "
            "the installed torch) and its CUDA 13 library a 276 MB wheel: neither is carried")
    _single_process_env()
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group("gloo")
    interface = fgao.FineGrainedActivationOffloadingInterface
    interface.reset_instance()

    def new_step(module, args):
        interface.reset()
        interface.init_chunk_handler(pp_rank=0, vp_size=None, vp_stage=None,
                                     min_offloaded_tensor_size=1024 * 1024,
                                     delta_offload_bytes_across_pp_ranks=0,
                                     activation_offload_fraction=1.0)

    model.stack.register_forward_pre_hook(new_step)

    def offloaded(f):
        def forward(x, cos, sin):
            group = interface(True, x, "decoder_layer")
            with group as x:
                out = f(x, cos, sin)
            return group.group_offload(out)
        return forward

    for layer in model.stack.layers:
        layer.forward = offloaded(layer.forward)

    def figures() -> dict:
        manager = fgao.PipelineOffloadManager.get_instance()
        return {"package": f"megatron-core {version}",
                "offload_summary_bytes": getattr(manager, "_offload_summary_bytes", None)}
    return figures


# Where a Thunder release would have its CPUOffloading transform.
THUNDER_OFFLOAD_MODULES = ("thunder.transforms.cpu_offloading", "thunder.transforms.cpu_offload")


def _thunder_cpu_offloading(model):
    """`thunder.jit(model, transforms=[CPUOffloading()])`, Lightning
    Thunder's CPU offloading transform, from lightning-thunder's package.
    lightning-thunder 0.2.6 (the latest release) has none: in Thunder's
    repository at tag 0.2.6 the transform is the tutorial notebook
    notebooks/writing_a_trace_transform_cpu_offloading.ipynb, not a module
    of the package. The row fails saying so, unless the installed Thunder
    has it in one of THUNDER_OFFLOAD_MODULES."""
    import importlib

    thunder = _import_peer("thunder", "thunder-offload", "lightning-thunder 0.2.6")
    for name in THUNDER_OFFLOAD_MODULES:
        try:
            transform = importlib.import_module(name).CPUOffloading
            break
        except (ImportError, AttributeError):
            continue
    else:
        raise RuntimeError(
            f"thunder-offload: lightning-thunder {thunder.__version__} has no CPUOffloading "
            "transform (no thunder.transforms.cpu_offloading): at tag 0.2.6 it is only the "
            "tutorial notebook notebooks/writing_a_trace_transform_cpu_offloading.ipynb, "
            "not part of the package")
    return thunder.jit(model, transforms=[transform()])


# ---------------------------------------------------------------------------
# One row, in its own process
# ---------------------------------------------------------------------------


def _grad_checksum(torch, t) -> list:
    """Position-weighted sum of the gradient's bits, and its float64 sum:
    equal checksums mean equal bits (up to a collision)."""
    flat = t.detach().reshape(-1)
    bits = flat.view({1: torch.int8, 2: torch.int16, 4: torch.int32,
                      8: torch.int64}[flat.element_size()])
    total, chunk = 0, 1 << 24
    for start in range(0, bits.numel(), chunk):
        part = bits[start:start + chunk].to(torch.int64)
        weight = torch.arange(start, start + part.numel(), device=part.device,
                              dtype=torch.int64) % 1000003 + 1
        total += int((part * weight).sum().item())
    return [total & 0xFFFFFFFFFFFFFFFF, float(flat.double().sum().item())]


def _peak_rss_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Trace(NamedTuple):
    """The complete events of a torch.profiler chrome trace, in microseconds."""
    kernels: list    # kernels and memsets: (start, end, name), sorted by start
    copies: list     # host-to-device and device-to-host copies: (start,
                     # end, "H2D" or "D2H", bytes), in trace order
    host: list       # host ops and CUDA runtime calls: (start, end, name)
    launched: list   # per kernel, when the host call that launched it
                     # returned (None if the trace does not say)


def read_trace(path: str) -> Trace:
    """The kernels, copies and host events of a torch.profiler chrome trace."""
    with open(path) as f:
        events = json.load(f).get("traceEvents", [])
    kernels, copies, host, launch_end = [], [], [], {}
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, name = e.get("cat", ""), e.get("name", "")
        start, dur = float(e.get("ts", 0)), float(e.get("dur", 0))
        correlation = (e.get("args") or {}).get("correlation")
        if cat in ("cpu_op", "cuda_runtime", "python_function", "user_annotation"):
            host.append((start, start + dur, name))
        if cat in ("cuda_runtime", "cuda_driver") and correlation is not None:
            launch_end[correlation] = start + dur
        if cat in ("kernel", "gpu_memset"):
            # A memset occupies its stream as a kernel does: the device is
            # not idle while one runs.
            kernels.append((start, start + dur, name, correlation))
        elif cat == "gpu_memcpy" and ("DtoH" in name or "HtoD" in name):
            n = int((e.get("args") or {}).get("bytes", 0))
            copies.append((start, start + dur, "D2H" if "DtoH" in name else "H2D", n))
    kernels.sort(key=lambda k: k[:3])
    return Trace([k[:3] for k in kernels], copies, host,
                 [launch_end.get(k[3]) for k in kernels])


def stream_waits(host: list) -> list:
    """Host start times of the cudaStreamWaitEvent calls among `host`."""
    return [a for a, _, name in host if name == "cudaStreamWaitEvent"]


# CUDA runtime calls that put work other than a kernel on a stream: the
# copy ops' events, waits and copies (and any other such call).
_STREAM_WORK = ("EventRecord", "StreamWaitEvent", "Memcpy", "Memset")


def stream_calls(host: list) -> list:
    """(host start, name) of the CUDA calls among `host` that enqueue stream
    work other than a kernel (_STREAM_WORK), sorted by start."""
    return sorted((a, name) for a, _, name in host
                  if name.startswith("cu") and any(w in name for w in _STREAM_WORK))


# A kernel that starts this soon after a copy ended, with the device idle
# since before that end, waited for the copy (a wait's event fires with it).
COPY_END_SLACK_US = 20.0


def _queued_gaps(kernels: list, launched: list):
    """Each gap with no kernel running (between the first kernel and the
    last) before a kernel whose launch the trace has: (gap start, kernel
    start, its launch's end, the previous launch's end or -inf, host-late
    microseconds). Gaps before a kernel of unknown launch come as a launch
    of None."""
    busy_until = None
    previous_launch = float("-inf")
    for (start, end, _), launch in zip(kernels, launched):
        if busy_until is not None and start > busy_until:
            late = None if launch is None else min(start - busy_until,
                                                   max(0.0, launch - busy_until))
            yield busy_until, start, launch, previous_launch, late
        busy_until = end if busy_until is None else max(busy_until, end)
        if launch is not None:
            previous_launch = launch


def _copy_ended(ends: list, gap_start: float, start: float):
    """Index into `ends` (sorted copy end times) of a copy that ended in the
    gap's last COPY_END_SLACK_US, i.e. that the kernel starting at `start`
    waited for; None if there is none."""
    j = bisect.bisect_left(ends, max(gap_start, start - COPY_END_SLACK_US))
    return j if j < len(ends) and ends[j] <= start else None


def idle_causes(kernels: list, launched: list, wait_calls: list = (),
                copy_ends: list = ()) -> dict:
    """Microseconds of the device's idle time (no kernel running, between
    its first kernel and its last) by cause: `host_late`, the part before
    the next kernel's launch call returned (the host had not asked for it
    yet); `queued`, the rest, with the kernel already launched (waiting on
    another stream's event, or the launch's own latency); `unknown`, gaps
    before a kernel whose launch the trace lacks. `queued_at_stream_wait`
    is the part of `queued` before kernels whose launch came after a
    cudaStreamWaitEvent call (host start times in `wait_calls`, on any
    stream) that followed the previous kernel's launch: the gaps at the
    copies' waits and events. `queued_until_copy_end` is the part of
    `queued` whose kernel started within COPY_END_SLACK_US of the end of a
    copy (end times in `copy_ends`) that ended during the gap: compute
    stalled on a copy, not on the cost of the wait itself."""
    out = {"host_late_us": 0.0, "queued_us": 0.0, "unknown_us": 0.0,
           "queued_at_stream_wait_us": 0.0, "queued_until_copy_end_us": 0.0}
    waits, ends = sorted(wait_calls), sorted(copy_ends)
    for gap_start, start, launch, previous_launch, late in _queued_gaps(kernels, launched):
        gap = start - gap_start
        if launch is None:
            out["unknown_us"] += gap
            continue
        out["host_late_us"] += late
        out["queued_us"] += gap - late
        i = bisect.bisect_right(waits, previous_launch)
        if i < len(waits) and waits[i] < launch:
            out["queued_at_stream_wait_us"] += gap - late
        if _copy_ended(ends, gap_start, start) is not None:
            out["queued_until_copy_end_us"] += gap - late
    return out


def queued_by_calls(kernels: list, launched: list, calls: list, copies: list = ()) -> dict:
    """The queued idle time (as idle_causes counts it) by the stream work
    the host enqueued between the previous kernel's launch and the gap's
    kernel's: `calls` is stream_calls' (host start, name) list; a gap's key
    names each call with its count ("cudaEventRecord x2 +
    cudaStreamWaitEvent"), "none" where there was none (a kernel's own
    launch latency), and ends in ", until a D2H copy ended" (or H2D) where
    the gap ended as a copy did (`copies` as read_trace gives them, or
    (start, end) spans: "a copy"): a stall on that copy, not the calls' own
    cost. Per key: [queued microseconds, gaps]. An offload (event, wait on
    the copy stream, copy, event), a load (event, two waits, copy, event)
    and a wait (one cudaStreamWaitEvent) each leave their own key."""
    out: dict[str, list] = {}
    starts = [a for a, _ in calls]
    ended = sorted((c[1], f"a {c[2]} copy" if len(c) > 2 else "a copy") for c in copies)
    ends = [e for e, _ in ended]
    for gap_start, start, launch, previous_launch, late in _queued_gaps(kernels, launched):
        if launch is None:
            continue
        names: dict[str, int] = {}
        for _, name in calls[bisect.bisect_right(starts, previous_launch):
                             bisect.bisect_left(starts, launch)]:
            names[name] = names.get(name, 0) + 1
        key = " + ".join(n if c == 1 else f"{n} x{c}" for n, c in sorted(names.items())) \
            or "none"
        j = _copy_ended(ends, gap_start, start)
        if j is not None:
            key += f", until {ended[j][1]} ended"
        entry = out.setdefault(key, [0.0, 0])
        entry[0] += start - gap_start - late
        entry[1] += 1
    return out


def _trace_figures(path: str, worst: int = 12) -> dict:
    """Bytes copied each way and the copy time no kernel overlapped, from a
    torch.profiler chrome trace of one step; and the `worst` longest exposed
    intervals, each with the copy under it and the kernel that ran next (for
    placing them against the planner's timeline)."""
    kernels, copies, host, launched = read_trace(path)
    d2h = sum(n for *_, d, n in copies if d == "D2H")
    h2d = sum(n for *_, d, n in copies if d == "H2D")
    spans = [(a, b) for a, b, *_ in copies]
    cover = [(a, b) for a, b, _ in kernels]
    t0 = min([a for a, _ in spans + cover], default=0.0)
    gaps = []
    for a, b in _uncovered_intervals(spans, cover):
        under = [c for c in copies if c[0] < b and c[1] > a]
        after = next((k[2] for k in kernels if k[0] >= b), "")
        gaps.append({"at_ms": (a - t0) * 1e-3, "ms": (b - a) * 1e-3,
                     "copies": sorted({f"{c[2]} {c[3] / MiB:.0f} MiB" for c in under}),
                     "next_kernel": after[:80]})
    gaps.sort(key=lambda g: -g["ms"])
    # Each copy in issue order (the runtime issues them in the IR's order),
    # with the part of it no kernel overlapped: to set against the
    # planner's per-value prediction (predicted_copies).
    timeline = [{"dir": d, "mib": round(n / MiB, 3), "start_ms": round((a - t0) * 1e-3, 3),
                 "end_ms": round((b - t0) * 1e-3, 3),
                 "exposed_ms": round(_uncovered_length([(a, b)], cover) * 1e-3, 4)}
                for a, b, d, n in sorted(copies)]
    # The device idle with no copy under it either: the host was behind.
    # Each gap with the host ops running when it ended (whose launch ended
    # it), innermost first, for a slower step whose kernels are not.
    gpu = spans + cover
    gpu_end = max([b for _, b in gpu], default=t0)
    host_gaps = []
    for a, b in _uncovered_intervals([(t0, gpu_end)], gpu):
        if b - a < 20:
            continue
        running = sorted((y - x, n) for x, y, n in host if x <= b <= y)
        names = list(dict.fromkeys(n[:80] for _, n in running))
        host_gaps.append({"at_ms": round((a - t0) * 1e-3, 3), "ms": round((b - a) * 1e-3, 3),
                          "host_ops": names[:6]})
    host_gaps.sort(key=lambda g: -g["ms"])
    host_start = min([a for a, _, _ in host], default=t0)
    host_end = max([b for _, b, _ in host], default=gpu_end)
    return {"d2h_bytes": d2h, "h2d_bytes": h2d,
            # The host's part of the step outside the device's: before its
            # first kernel or copy, and after its last one.
            "host_before_ms": max(0.0, t0 - host_start) * 1e-3,
            "host_after_ms": max(0.0, host_end - gpu_end) * 1e-3,
            "device_idle_ms": _uncovered_length([(t0, gpu_end)], gpu) * 1e-3,
            # No kernel running (copies or not), by whether the host had
            # launched the next kernel yet.
            "kernel_idle_ms": {k.removesuffix("_us"): v * 1e-3
                               for k, v in idle_causes(kernels, launched, stream_waits(host),
                                                       [b for _, b, *_ in copies]).items()},
            # Its queued part by the stream work enqueued before each gap
            # and the copy it stalled on: [ms, gaps] (queued_by_calls).
            "kernel_queued_by_calls": {
                k: [us * 1e-3, n] for k, (us, n) in queued_by_calls(
                    kernels, launched, stream_calls(host), copies).items()},
            "device_idle_worst": host_gaps[:worst],
            "copy_seconds": _union_length(spans) * 1e-6,
            "exposed_copy_seconds": _uncovered_length(spans, cover) * 1e-6,
            "step_trace_ms": (max([b for _, b in spans + cover], default=t0) - t0) * 1e-3,
            # Against another row's: a slower step is either longer kernels
            # (copies contending for memory) or more idle time (waits).
            "kernel_busy_ms": _union_length(cover) * 1e-3,
            "worst_exposed": gaps[:worst], "copies": timeline}


def predicted_copies(step: dict) -> list[dict]:
    """The planner's per-value figures for the offloaded values of one
    step's report, in forward order: bytes, predicted exposed copy time, and
    the ops the offload follows and the load starts at and precedes."""
    def where(pos):
        return (pos or {}).get("op", "")[:60]

    rows = [s for s in step.get("saved") or [] if s.get("offloaded")]
    rows.sort(key=lambda s: (s.get("offload_after") or {}).get("index", 0))
    return [{"mib": round(s["bytes"] / MiB, 3),
             "exposed_ms": round(s.get("exposed_seconds", 0.0) * 1e3, 4),
             "offload_after": where(s.get("offload_after")),
             "load_start": where(s.get("load_start")),
             "load_before": where(s.get("load_before"))} for s in rows]


def _merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _union_length(intervals) -> float:
    return sum(b - a for a, b in _merge(intervals))


def _uncovered_intervals(intervals, cover) -> list[tuple[float, float]]:
    """The parts of the union of `intervals` outside the union of `cover`."""
    cover = _merge(cover)
    out, j = [], 0
    for a, b in _merge(intervals):
        while j < len(cover) and cover[j][1] <= a:
            j += 1
        k, at = j, a
        while k < len(cover) and cover[k][0] < b:
            if cover[k][0] > at:
                out.append((at, cover[k][0]))
            at = max(at, cover[k][1])
            k += 1
        if at < b:
            out.append((at, b))
    return out


def _uncovered_length(intervals, cover) -> float:
    """Length of the union of `intervals` not inside the union of `cover`."""
    return sum(b - a for a, b in _uncovered_intervals(intervals, cover))


def run_row(args: argparse.Namespace, row: Row) -> dict:
    import torch

    from offload_mlir import models

    device = args.device
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    # torch-offload-stream's prefetch benchmarks kernels while compiling,
    # which deterministic Inductor refuses.
    deterministic = args.deterministic and "prefetch" not in row.options
    if deterministic:
        torch.use_deterministic_algorithms(True)
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[args.dtype]
    cfg = models.LlamaConfig(hidden=args.hidden, heads=args.heads, kv_heads=args.kv_heads,
                             ffn=args.ffn)
    torch.manual_seed(0)
    model = models.LlamaLM(cfg, args.layers, args.seq, args.vocab, device=device, dtype=dtype)
    opt = (torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
           if args.optimizer == "adamw" else None)

    fam, o = row.family, row.options
    checkpoint_layers(model, row.checkpointing)
    _set_process_compiler_config(torch, row)
    if fam.startswith("torch-offload"):
        torch._functorch.config.enable_activation_offloading = True
        torch._inductor.config.joint_custom_post_pass = _mark_all_for_offload
        if fam == "torch-offload-stream":
            torch._functorch.config.activation_offload_separate_stream = True
            torch._functorch.config.activation_offload_sink_wait = True
            torch._functorch.config.activation_reload_prefetch = "prefetch" in o

    hooks: Any = contextlib.nullcontext()
    offloader = None
    if fam == "layer-group":
        offloader = LayerGroupOffloader(model, int(o["layers"]) if "layers" in o else None,
                                        int(o.get("min_bytes", 1 << 20)))
        hooks = offloader.hooks
    elif fam == "torchtune":
        hooks = _torchtune_offloader(model)
    peer_figures = None
    if fam == "deepspeed-cpu-ckpt":
        peer_figures = _deepspeed_cpu_checkpointing(
            model, o.get("partition", "0").lower() in ("1", "true"))
    elif fam == "megatron-offload":
        peer_figures = _megatron_fine_grained_offloading(model)

    if fam == "thunder-offload":
        jitted = _thunder_cpu_offloading(model)

        def forward(tokens, targets):
            return jitted(tokens, targets)
    elif row.compiled:
        compiled = torch.compile(model, backend=_compiled_backend(row), dynamic=False)

        def forward(tokens, targets):
            return compiled(tokens, targets)
    else:
        def forward(tokens, targets):
            with hooks:
                logits = model.logits(tokens)
            return model.loss(logits, targets)

    if fam == "offload-mlir":
        import offload_mlir

    g = torch.Generator().manual_seed(1)
    data = [torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g).to(device)
            for _ in range(2)]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    # With an optimizer, forward and backward are also measured on their own:
    # the planner predicts them, not the optimizer's step. Their time comes
    # from CUDA events (no synchronisation added before the optimizer), their
    # peak from the allocator's books when backward returns (it allocates on
    # the host's side, so the device need not have caught up).
    events = opt is not None and device == "cuda"

    def step(i: int):
        tokens = data[i % 2]
        for p in model.parameters():
            p.grad = None
        sync()
        t0 = time.perf_counter()
        if events:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
        loss = forward(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        fwd_bwd = None  # (seconds, peak bytes or None) of forward and backward
        if opt is not None:
            if events:
                end.record()
                peak_at_backward = torch.cuda.max_memory_allocated()
            else:
                fwd_bwd = (time.perf_counter() - t0, None)
            opt.step()
        sync()
        dt = time.perf_counter() - t0
        if events:
            fwd_bwd = (begin.elapsed_time(end) / 1e3, peak_at_backward)
        return dt, loss, fwd_bwd

    times, losses, first_step_s = [], [], 0.0
    fwd_bwd_times, fwd_bwd_peak = [], 0
    peak = 0
    for i in range(args.warmup + args.steps):
        if i == args.warmup and fam == "offload-mlir":
            offload_mlir.reset_runtime_stats()
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        dt, loss, fwd_bwd = step(i)
        losses.append(loss.item())
        if i == 0:
            first_step_s = dt
        if i >= args.warmup:
            times.append(dt)
            if device == "cuda":
                peak = max(peak, torch.cuda.max_memory_allocated())
            if fwd_bwd is not None:
                fwd_bwd_times.append(fwd_bwd[0])
                fwd_bwd_peak = max(fwd_bwd_peak, fwd_bwd[1] or 0)
    result: dict[str, Any] = {
        "row": row.name, "family": fam, "compiled": row.compiled, "baseline": row.baseline,
        "grad_baseline": row.grad_baseline,
        "step_s_median": statistics.median(times), "step_s_all": times,
        "first_step_s": first_step_s, "peak_allocated_bytes": peak, "losses": losses,
        "deterministic": deterministic,
        "grad_checksums": {n: _grad_checksum(torch, p.grad)
                           for n, p in model.named_parameters() if p.grad is not None},
    }
    if opt is not None:
        # The optimizer's state stays resident through forward and backward,
        # outside the graphs the planner sees: subtracted from their peak, it
        # leaves what the planner's predicted peak is comparable with.
        state_bytes = sum(t.numel() * t.element_size() for st in opt.state.values()
                          for t in st.values() if torch.is_tensor(t) and t.device.type == device)
        result["forward_backward"] = {
            "step_s_median": statistics.median(fwd_bwd_times),
            "peak_allocated_bytes": fwd_bwd_peak if device == "cuda" else None,
            "optimizer_state_bytes": state_bytes}
    if fam == "offload-mlir":
        rt = offload_mlir.runtime_stats()
        n = args.steps
        result["runtime_per_step"] = {
            "d2h_bytes": rt["d2h_bytes"] / n, "h2d_bytes": rt["h2d_bytes"] / n,
            # None unless OFFLOAD_RT_TIMING=1: the profiled step's trace
            # gives the exposed copy time instead.
            "exposed_wait_seconds": (None if rt["exposed_wait_seconds"] is None
                                     else rt["exposed_wait_seconds"] / n),
            "pinned_peak_bytes": rt["pinned_peak_bytes"]}
        rep = offload_mlir.last_report() or {}
        result["fallback"] = rep.get("fallback")
        result["offloaded"] = len(rep.get("offloaded") or [])
        # The saved values the joint plan computes again in backward (the
        # partitioner carried them out), with the forward nodes each repeats.
        result["recomputed"] = rep.get("recomputed") or {}
        joint = ((rep.get("joint_plan") or {}).get("steps")) or []
        if joint:
            result["joint_planned"] = joint[0].get("planned")
        steps = ((rep.get("pipeline") or {}).get("steps")) or []
        if steps:
            result["predicted"] = steps[0].get("predicted")
            result["predicted_copies"] = predicted_copies(steps[0])
    if offloader is not None:
        result["runtime_per_step"] = {
            "d2h_bytes": offloader.d2h_bytes / (args.warmup + args.steps),
            "h2d_bytes": offloader.h2d_bytes / (args.warmup + args.steps)}
    if peer_figures is not None:
        # The package's own counts, over every step so far (the profiled
        # step's trace has the bytes copied).
        result["peer"] = peer_figures()

    # One more step under the profiler, for the copies and what hid them.
    if device == "cuda" and not args.no_profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step(args.warmup + args.steps)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            result["trace"] = _trace_figures(path)
    pinned = (result.get("runtime_per_step") or {}).get("pinned_peak_bytes", 0)
    if device == "cuda":
        stats = torch.cuda.host_memory_stats()
        host_peak = max((v for k, v in stats.items()
                         if "allocated_bytes" in k and "peak" in k), default=0)
        pinned = max(pinned, host_peak, sum(b.numel() * b.element_size()
                                            for b in (offloader.pool.values() if offloader else [])))
    result["pinned_bytes"] = pinned
    result["host_rss_peak_bytes"] = _peak_rss_bytes()
    return result


# ---------------------------------------------------------------------------
# The parent: one process per row, comparison, outputs
# ---------------------------------------------------------------------------


def paired_rows(spec: str, option: str = "--paired") -> tuple[Row, Row]:
    """The two rows of `--paired A,B` (or of another tool's `option` that
    takes the same pair); ValueError naming `option` if they cannot be
    paired."""
    names = spec.split(",")
    if len(names) != 2:
        raise ValueError(f"{option} takes two rows, A,B, not {spec!r}")
    row_a, row_b = (parse_row(s) for s in names)
    for row in (row_a, row_b):
        if row.family not in (*INDUCTOR_FAMILIES, "offload-mlir"):
            raise ValueError(f"{option} takes compile and offload-mlir rows (and "
                             f"checkpoint-compile, sac-compile), not {row.name}")
    # A compile row's recompute budget, partitioner and Inductor settings are
    # torch's process-wide settings, which an offload-mlir row without its
    # own would inherit.
    for row, other in ((row_a, row_b), (row_b, row_a)):
        for key, value in row.compiler_options.items():
            if row.family in INDUCTOR_FAMILIES and other.options.get(key) != value:
                raise ValueError(f"{option}: a compile row's {key}= applies to both rows; "
                                 f"give the other row the same {key}=")
    return row_a, row_b


def run_paired(args: argparse.Namespace, row_a: Row, row_b: Row) -> dict:
    """Two compiled rows (from paired_rows) in one process, their steps
    interleaved."""
    import torch

    from offload_mlir import models

    device = args.device
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if args.deterministic:
        torch.use_deterministic_algorithms(True)
    for row in (row_a, row_b):
        _set_process_compiler_config(torch, row)
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[args.dtype]
    cfg = models.LlamaConfig(hidden=args.hidden, heads=args.heads, kv_heads=args.kv_heads,
                             ffn=args.ffn)
    steps = []
    for row in (row_a, row_b):
        torch.manual_seed(0)
        model = models.LlamaLM(cfg, args.layers, args.seq, args.vocab, device=device,
                               dtype=dtype)
        checkpoint_layers(model, row.checkpointing)
        opt = (torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
               if args.optimizer == "adamw" else None)
        steps.append((model, torch.compile(model, backend=_compiled_backend(row),
                                           dynamic=False), opt))
    g = torch.Generator().manual_seed(1)
    data = [torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g).to(device)
            for _ in range(2)]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    # On CUDA, events on the compute stream split each step in two: from its
    # start to the end of forward's work there, and from that to the end of
    # backward's (and the optimizer's). A cost that a paired wall-clock
    # ratio cannot place shows in one stretch or the other.
    cuda = device == "cuda"

    def step(which: int, i: int) -> tuple[float, float, float, float, float]:
        """(wall seconds, forward and rest device seconds (0 off CUDA), and
        the host's seconds in the forward call and in the rest)."""
        model, compiled, opt = steps[which]
        tokens = data[i % 2]
        for p in model.parameters():
            p.grad = None
        sync()
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(3)] if cuda else []
        t0 = time.perf_counter()
        if cuda:
            marks[0].record()
        loss = compiled(tokens[:, :-1], tokens[:, 1:])
        t1 = time.perf_counter()
        if cuda:
            marks[1].record()
        loss.backward()
        if opt is not None:
            opt.step()
        t2 = time.perf_counter()
        if cuda:
            marks[2].record()
        sync()
        wall = time.perf_counter() - t0
        if not cuda:
            return wall, 0.0, 0.0, t1 - t0, t2 - t1
        return (wall, marks[0].elapsed_time(marks[1]) * 1e-3,
                marks[1].elapsed_time(marks[2]) * 1e-3, t1 - t0, t2 - t1)

    for i in range(args.warmup):
        step(0, i)
        step(1, i)
    times: list[list[float]] = [[], []]
    device_times: list[list[tuple[float, float]]] = [[], []]
    host_times: list[list[tuple[float, float]]] = [[], []]
    ratios = []
    for i in range(args.steps):
        # A B, then B A: each row goes first as often as the other.
        order = (0, 1) if i % 2 == 0 else (1, 0)
        got = {}
        for which in order:
            wall, fwd, rest, host_fwd, host_rest = step(which, args.warmup + i)
            got[which] = wall
            times[which].append(wall)
            device_times[which].append((fwd, rest))
            host_times[which].append((host_fwd, host_rest))
        ratios.append(got[1] / got[0])
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
    stretches = {}
    if cuda:
        # Per stretch, the median over pairs of B's device time over A's.
        # And the host's time in the same stretch (the forward call's, and
        # backward's with the optimizer's): near the device's, the host
        # sets the pace, and whatever it does more shows in the step.
        for name, pick in (("forward", lambda t: t[0]), ("backward", lambda t: t[1]),
                           ("step", lambda t: t[0] + t[1])):
            per_pair = [pick(b) / pick(a) for a, b in zip(*device_times) if pick(a) > 0]
            stretches[name] = {
                "median_s": [statistics.median(pick(t) for t in ts) for ts in device_times],
                "ratio_median": statistics.median(per_pair) if per_pair else None,
                "host_median_s": [statistics.median(pick(t) for t in ts)
                                  for ts in host_times]}
    return {
        # Device time on the compute stream, from CUDA events: forward (the
        # compiled call), backward (with the optimizer, if any) and both.
        "device": stretches or None,
        "rows": [row_a.name, row_b.name],
        "steps": args.steps,
        "step_s_all": times,
        "step_s_median": [statistics.median(t) for t in times],
        "ratio_all": ratios,
        "ratio_median": statistics.median(ratios),
        "ratio_q1": q[0], "ratio_q3": q[2],
        "ratio_of_medians": statistics.median(times[1]) / statistics.median(times[0]),
        "pairs_b_not_slower": sum(r <= 1 for r in ratios),
    }


def pool_paired(runs: list[dict]) -> dict:
    """The pairs of several processes (one run_paired result each) together:
    the median and quartiles of all their ratios, and each process's own
    median, whose spread is what one process's figure is worth."""
    ratios = [x for r in runs for x in r["ratio_all"]]
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
    medians = [r["ratio_median"] for r in runs]
    return {"rows": runs[0]["rows"], "processes": len(runs), "steps": len(ratios),
            "ratio_median": statistics.median(ratios), "ratio_q1": q[0], "ratio_q3": q[2],
            "process_ratio_medians": medians,
            "median_of_process_medians": statistics.median(medians),
            "pairs_b_not_slower": sum(x <= 1 for x in ratios)}


def _paired_line(label: str, r: dict) -> str:
    ma, mb = (x * 1e3 for x in r["step_s_median"])
    return (f"| {label} | {ma:.1f} ms | {mb:.1f} ms | {r['ratio_median']:.3f}x | "
            f"{r['ratio_q1']:.3f}x–{r['ratio_q3']:.3f}x | {r['ratio_of_medians']:.3f}x | "
            f"{r['pairs_b_not_slower']} of {r['steps']} |\n")


def paired_table(doc: dict) -> str:
    runs = doc.get("paired_runs")
    r = runs[0] if runs else doc["paired"]
    a, b = r["rows"]
    head = (f"| pair | {a} (median) | {b} (median) | {b} / {a}: median of pairs | "
            "quartiles | ratio of medians | pairs with B not slower |\n"
            "| --- | --- | --- | --- | --- | --- | --- |\n")
    if not runs:
        return head + _paired_line(f"{r['steps']} pairs", r) + _paired_device_table(r)
    pooled = doc["paired"]
    lines = [_paired_line(f"process {i}, {run['steps']} pairs", run)
             for i, run in enumerate(runs, 1)]
    lines.append(f"| all {pooled['steps']} pairs of {pooled['processes']} processes | | | "
                 f"{pooled['ratio_median']:.3f}x | {pooled['ratio_q1']:.3f}x–"
                 f"{pooled['ratio_q3']:.3f}x | | {pooled['pairs_b_not_slower']} of "
                 f"{pooled['steps']} |\n")
    spread = pooled["process_ratio_medians"]
    return (head + "".join(lines)
            + f"\nThe processes' medians: {min(spread):.3f}x to {max(spread):.3f}x "
              f"(their median {pooled['median_of_process_medians']:.3f}x).\n"
            + "".join(_paired_device_table(run) for run in runs))


def _paired_device_table(r: dict) -> str:
    """The device time of the compute stream per stretch, if measured."""
    device = r.get("device")
    if not device:
        return ""
    a, b = r["rows"]
    lines = ["", f"| device time (CUDA events) | {a} (median) | {b} (median) | "
             f"{b} / {a}: median of pairs | host time, {a} / {b} (median) |",
             "| --- | --- | --- | --- | --- |"]
    for name in ("forward", "backward", "step"):
        d = device[name]
        ma, mb = (x * 1e3 for x in d["median_s"])
        ratio = d["ratio_median"]
        host = d.get("host_median_s")
        lines.append(f"| {name} | {ma:.1f} ms | {mb:.1f} ms | "
                     f"{'' if ratio is None else f'{ratio:.4f}x'} | "
                     + ("" if host is None else
                        f"{host[0] * 1e3:.1f} / {host[1] * 1e3:.1f} ms") + " |")
    return "\n".join(lines) + "\n"


def baseline_of(results: list[dict], r: dict, other_runs: bool = False,
                key: str = "baseline"):
    """The first measured row of `results` named by r's `key` ("baseline",
    or "grad_baseline" for the gradient check), in r's run (the rows of one
    run carry no run number), or with `other_runs` in another run if r's has
    none. Returns it, or None, and whether it is from r's run."""
    name = r.get(key) or r.get("baseline")
    ok = [b for b in results if b["row"] == name and "error" not in b]
    same = [b for b in ok if b.get("run") == r.get("run")]
    if same or not other_runs:
        return (same or [None])[0], True
    return (ok or [None])[0], False


def child_args(argv: list[str], dropped: tuple[str, ...]) -> list[str]:
    """`argv` without the options in `dropped` and their values: what the
    parent passes on to each child process."""
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in dropped:
            skip = True
        elif not a.startswith(tuple(d + "=" for d in dropped)):
            kept.append(a)
    return kept


def compare_all(results: list[dict]) -> None:
    """Each row's gradient check against its grad baseline in the same run,
    wherever in the run that one is."""
    for r in results:
        r.pop("vs_baseline", None)
        base, _ = baseline_of(results, r, key="grad_baseline")
        if "error" not in r and base is not None and base is not r:
            r["vs_baseline"] = compare(base, r)


def compare(base: dict, other: dict) -> dict:
    if len(base["losses"]) != len(other["losses"]):
        # The checksums are of the last step's gradients, so of other data.
        return {"comparable": False, "reason": "different step counts"}
    a, b = base["grad_checksums"], other["grad_checksums"]
    differ = sorted(n for n in a if a[n] != b.get(n))
    return {"losses_identical": base["losses"] == other["losses"],
            "grads_identical": not differ and set(a) == set(b),
            "grads_differing": differ[:8], "num_grads": len(a)}


def _failure_reason(stderr: str) -> str:
    """The exception's own line, not the traceback's closing advice."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    errors = [l for l in lines if "Error:" in l or "Exception:" in l]
    return (errors or lines or ["no output"])[-1][:300]


def _fmt_bytes(n: float | None) -> str:
    if n is None:
        return ""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


def _moved(r: dict) -> tuple[float, float]:
    t = r.get("trace") or {}
    rt = r.get("runtime_per_step") or {}
    return (t.get("d2h_bytes", rt.get("d2h_bytes", 0)), t.get("h2d_bytes", rt.get("h2d_bytes", 0)))


def ratio_spread(results: list[dict]) -> dict[str, list[float]]:
    """Per row, its step-time ratio to its baseline in each run (round) that
    has both: what one process-to-process comparison is worth."""
    out: dict[str, list[float]] = {}
    for r in results:
        if "error" in r:
            continue
        base, same_run = baseline_of(results, r)
        if base is not None and base is not r and same_run:
            out.setdefault(r["row"], []).append(r["step_s_median"] / base["step_s_median"])
    return out


def table(doc: dict) -> str:
    results = doc["results"]
    merged = "merged_from" in doc or doc.get("repeat", 1) > 1

    lines = [
        "| row | step (median) | vs baseline | peak allocated | vs baseline | pinned host | "
        "host RSS peak | D2H / H2D per step | exposed copy | gradients | predicted step / peak |"
        + (" run |" if merged else ""),
        "| --- " * (12 if merged else 11) + "|"]
    other_run = False
    for r in results:
        run = f" {r.get('run', '')} |" if merged else ""
        if "error" in r:
            reason = (_failure_reason(r["stderr_tail"]) if r.get("stderr_tail")
                      else r.get("reason", ""))
            lines.append(f"| {r['row']} | {r.get('status', 'failed')}: "
                         f"{reason[:160].replace('|', '/')} |" + " |" * 9 + run)
            continue
        base, same_run = baseline_of(results, r, other_runs=True)
        ratio = dmem = ""
        if base and base is not r:
            mark = "" if same_run else "*"
            other_run = other_run or not same_run
            ratio = f"{r['step_s_median'] / base['step_s_median']:.3f}x{mark}"
            delta = r["peak_allocated_bytes"] - base["peak_allocated_bytes"]
            dmem = ("+" if delta >= 0 else "-") + _fmt_bytes(abs(delta)) + mark
        cmp_ = r.get("vs_baseline")
        gbase, _ = baseline_of(results, r, key="grad_baseline")
        if cmp_ is None:
            grads = ("" if base is r or not base else
                     f"not compared (no {r.get('grad_baseline') or r['baseline']} row in this run)")
        elif not cmp_.get("comparable", True):
            grads = f"not compared ({cmp_['reason']})"
        elif cmp_["losses_identical"] and cmp_["grads_identical"]:
            grads = "identical" + ("" if gbase is base else f" to {gbase['row']}")
        else:
            grads = (f"DIFFER ({len(cmp_['grads_differing'])}+ tensors"
                     f"{', loss differs' if not cmp_['losses_identical'] else ''})")
        d2h, h2d = _moved(r)
        exposed = (r.get("trace") or {}).get("exposed_copy_seconds")
        pred = r.get("predicted") or {}
        pred_s = ""
        if pred:
            pred_s = (f"{pred['step_seconds_after'] * 1e3:.1f} ms / "
                      f"{_fmt_bytes(pred['peak_bytes_after'])}")
            fb = r.get("forward_backward")
            if fb:
                # The prediction covers forward and backward: set beside them.
                fb_peak = fb["peak_allocated_bytes"]
                pred_s += (f" (measured forward and backward: {fb['step_s_median'] * 1e3:.1f} ms"
                           + ("" if fb_peak is None else
                              f" / {_fmt_bytes(fb_peak - fb['optimizer_state_bytes'])} without "
                              f"the optimizer's {_fmt_bytes(fb['optimizer_state_bytes'])}")
                           + ")")
        if r.get("fallback"):
            why = r["fallback"].split("error: ", 1)[-1].splitlines()[0]
            pred_s += f"fallback, untransformed: {why[:160]}"
        lines.append(
            f"| {r['row']} | {r['step_s_median'] * 1e3:.1f} ms | {ratio} | "
            f"{_fmt_bytes(r['peak_allocated_bytes'])} | {dmem} | "
            f"{_fmt_bytes(r.get('pinned_bytes'))} | {_fmt_bytes(r.get('host_rss_peak_bytes'))} | "
            f"{_fmt_bytes(d2h)} / {_fmt_bytes(h2d)} | "
            f"{'' if exposed is None else f'{exposed * 1e3:.1f} ms'} | {grads} | {pred_s} |{run}")
    a = doc["args"]
    head = (f"{a['config']}: {a['layers']} layers, {a['dtype']}, batch {a['batch']} x "
            f"{a['seq']}, optimizer {a['optimizer']}, deterministic {a['deterministic']}, "
            f"{doc.get('device_name', a['device'])}, torch {doc.get('torch', '')}\n\n")
    foot = ("\n\\* against the baseline of another run (same machine kind, another "
            "process).\n" if other_run else "")
    spread = {row: v for row, v in ratio_spread(results).items() if len(v) > 1}
    if spread:
        foot += ("\nStep time against the baseline, per run (each its own processes):\n\n"
                 "| row | runs | median | min | max |\n| --- | --- | --- | --- | --- |\n")
        for row, v in spread.items():
            foot += (f"| {row} | {len(v)} | {statistics.median(v):.3f}x | {min(v):.3f}x | "
                     f"{max(v):.3f}x |\n")
    return head + "\n".join(lines) + "\n" + foot


# Point colours of the plot by kind of row, in the order of its legend.
PLOT_KINDS = (
    ("offload-mlir", "tab:red"),
    ("Inductor's recompute budget, checkpointing", "tab:blue"),
    ("peers' own packages", "tab:green"),
    ("other rows", "tab:gray"),
)


def plot_kind(r: dict) -> str:
    """The kind of row a result is, for its colour (PLOT_KINDS)."""
    family = r.get("family") or r["row"].split(":")[0]
    if family == "offload-mlir":
        return "offload-mlir"
    if (family in ("checkpoint", "checkpoint-compile", "sac-compile")
            or (family == "compile" and ":amb=" in r["row"])):
        return "Inductor's recompute budget, checkpointing"
    if family in ("deepspeed-cpu-ckpt", "megatron-offload", "thunder-offload", "torchtune"):
        return "peers' own packages"
    return "other rows"


def plot_rows(doc: dict) -> tuple[list, list]:
    """What the plot shows: the measured rows, numbered from 1 ([(number,
    result)]: one per row name, the first run's, unless a later run
    superseded it, as marked in the data), fallback rows among them (they
    ran untransformed, and the plot marks them so); and the rows with no
    figures ([(row, why)]: failed or skipped), which its key lists."""
    measured, failed, seen = [], [], set()
    for r in doc["results"]:
        if r.get("superseded") or r["row"] in seen:
            continue
        seen.add(r["row"])
        if "error" in r:
            reason = (_failure_reason(r["stderr_tail"]) if r.get("stderr_tail")
                      else r.get("reason", ""))
            failed.append((r["row"], f"{r.get('status', 'failed')}: {reason}"))
        else:
            measured.append(r)
    return list(enumerate(measured, 1)), failed


def plot_figure(doc: dict):
    """Peak allocated memory against step time, one point per measured row
    (plot_rows), with offload-mlir's rows joined as a frontier: every row on
    a time axis (logarithmic where the rows span more than 3x), and beside
    it the compiled rows within 1.15x of their run's `compile`, against that
    ratio (where the compiled peers and the targets lie, and where their
    labels would otherwise overprint). Points carry numbers; the key names
    their rows, then the rows that have no figures and why. Colours tell the
    kind of row (PLOT_KINDS), squares eager rows from compiled circles, and
    a cross a fallback row (untransformed: offload-mlir's plan did not
    apply). The matplotlib figure, or None if matplotlib is absent."""
    try:
        import matplotlib
        import matplotlib.ticker

        matplotlib.use("Agg")
        import matplotlib.lines
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    numbered, failed = plot_rows(doc)
    ok = [r for _, r in numbered]
    near = []
    for i, r in numbered:
        base, _ = baseline_of(doc["results"], r)
        if r["compiled"] and base is not None:
            ratio = r["step_s_median"] / base["step_s_median"]
            if ratio <= 1.15:
                near.append((i, r, ratio))
    colours = dict(PLOT_KINDS)

    fig, (ax_all, ax_near, ax_key) = plt.subplots(
        1, 3, figsize=(15, 5.5), gridspec_kw={"width_ratios": [1, 1, 0.75]})
    panels = ((ax_all, [(i, r, r["step_s_median"] * 1e3) for i, r in numbered]),
              (ax_near, near))
    for ax, points in panels:
        placed: list[tuple[float, float]] = []
        xs = [x for _, _, x in points] or [1.0]
        ys = [r["peak_allocated_bytes"] / GiB for _, r, _ in points] or [1.0]
        # The x distance that counts as near: a fraction of the panel's
        # range, in logarithms on the left (a ratio of 1 would give none).
        dx = max(max(xs) / min(xs), 1.0 + 1e-9) if ax is ax_all else (max(xs) - min(xs)) or 1.0
        dy = (max(ys) - min(ys)) or 1.0
        for i, r, x in points:
            y = r["peak_allocated_bytes"] / GiB
            ax.scatter(x, y, marker="x" if r.get("fallback") else
                       ("o" if r["compiled"] else "s"),
                       color=colours[plot_kind(r)], zorder=3)
            # Numbers of points that nearly coincide are stacked, not overprinted.
            stacked = sum(
                1 for px, py in placed
                if (abs(math.log(px / x)) < 0.05 * math.log(dx) if ax is ax_all
                    else abs(px - x) < 0.05 * dx) and abs(py - y) < 0.04 * dy)
            placed.append((x, y))
            ax.annotate(str(i), (x, y), fontsize=7, xytext=(4, 2 - 8 * stacked),
                        textcoords="offset points")
        ours = sorted((x, r["peak_allocated_bytes"] / GiB) for _, r, x in points
                      if r["family"] == "offload-mlir" and not r.get("fallback"))
        frontier, best = [], float("inf")
        for x, y in ours:  # the points no other offload-mlir point beats on both axes
            if y < best:
                frontier.append((x, y))
                best = y
        if len(frontier) > 1:
            ax.plot(*zip(*frontier), color="tab:red", zorder=2, label="offload-mlir frontier")
            ax.legend(loc="upper right", fontsize=8)
        ax.set_ylabel("peak allocated GPU memory (GiB)")
        ax.grid(True, which="both", alpha=0.3)
    times = [r["step_s_median"] for r in ok] or [1.0]
    if max(times) > 3 * min(times):  # eager peers up to several times the baseline
        ax_all.set_xscale("log")
        ax_all.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax_all.xaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
        ax_all.tick_params(axis="x", which="minor", labelsize=7)
        ax_all.set_xlabel("median step time (ms, logarithmic)")
    else:
        ax_all.set_xlabel("median step time (ms)")
    ax_all.set_title("every row; squares eager, circles compiled, x fallback", fontsize=9)
    ax_near.set_xlabel("median step time / compile's in the same run")
    ax_near.set_title("compiled rows within 1.15x of compile", fontsize=9)
    ax_key.axis("off")
    key = [f"{i:>2}  {r['row']}" + ("  (fallback, untransformed)" if r.get("fallback") else "")
           for i, r in numbered]
    if failed:
        import textwrap

        key += ["", "no figures:"]
        for row, why in failed:
            # "failed: RuntimeError: ROW: what" -> "failed: what", in lines.
            status, _, what = why.partition(": ")
            what = what.split(": ", 1)[-1] if ("Error: " in what or "Exception: " in what) else what
            what = what.removeprefix(f"{row}: ")
            lines = textwrap.wrap(what, 52) or [""]
            key.append(f"  {row}: {status}")
            key += [f"      {line}" for line in lines[:3]]
            if len(lines) > 3:
                key[-1] += " ..."
    ax_key.text(0, 1, "\n".join(key), va="top", ha="left", fontsize=6.5, family="monospace",
                transform=ax_key.transAxes)
    kinds = [k for k, _ in PLOT_KINDS if any(plot_kind(r) == k for r in ok)]
    ax_key.legend(handles=[matplotlib.lines.Line2D([], [], marker="o", linestyle="",
                                                   color=colours[k], label=k) for k in kinds],
                  loc="lower left", fontsize=7, frameon=False)
    a = doc["args"]
    fig.suptitle(f"{a['config']} ({a['layers']} layers, {a['dtype']}), "
                 f"{doc.get('device_name', a['device'])}", fontsize=10)
    fig.tight_layout()
    return fig


def plot(doc: dict, path: str) -> bool:
    """plot_figure's figure, written to `path`; False if matplotlib is absent."""
    fig = plot_figure(doc)
    if fig is None:
        return False
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _write(doc: dict, out: str | None) -> None:
    if not out:
        return
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    with open(out + ".md", "w") as f:
        f.write(table(doc))


def _machine(args) -> dict:
    import torch

    info = {"torch": torch.__version__, "python": sys.version.split()[0]}
    if args.device == "cuda" and torch.cuda.is_available():
        info["device_name"] = torch.cuda.get_device_name()
    return info


def _child_env() -> dict:
    """The environment of a child process of the benchmark: python/ (this
    benchmark and offload_mlir) on its path, and cuBLAS's workspace fixed
    for deterministic algorithms."""
    env = dict(os.environ)
    env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    python_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([python_dir, env.get("PYTHONPATH", "")])
    return env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.peers",
                                description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="bf16x8", choices=sorted(CONFIGS))
    for key in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "batch", "seq"):
        p.add_argument("--" + key.replace("_", "-"), type=int, default=None,
                       help="override the configuration's value")
    p.add_argument("--dtype", choices=["bf16", "f32"], default=None)
    p.add_argument("--optimizer", choices=["none", "adamw"], default="none")
    p.add_argument("--rows", default=DEFAULT_ROWS,
                   help="comma-separated rows, and names of row sets: "
                        + ", ".join(ROW_SETS))
    p.add_argument("--steps", type=int, default=5, help="timed steps (after warm-up)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--no-deterministic", dest="deterministic", action="store_false")
    p.add_argument("--no-profile", action="store_true",
                   help="skip the profiled step (no copy bytes or exposed copy time)")
    p.add_argument("--row-timeout-s", type=float, default=600)
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run the rows N times, in turn (each round a run of its own, "
                        "compared within itself): a ratio's spread across processes; "
                        "with --paired, N processes of pairs, pooled")
    p.add_argument("--paired", metavar="A,B",
                   help="time two compiled rows in one process, steps interleaved")
    p.add_argument("--out", default=None, help="path prefix for .json, .md and .png")
    p.add_argument("--plot-from", default=None, metavar="JSON",
                   help="only draw the PNG (next to JSON) from an earlier run")
    p.add_argument("--merge", nargs="+", metavar="JSON",
                   help="merge the rows of earlier runs into --out (.json, .md, .png); "
                        "a row in several files is taken from the first")
    p.add_argument("--row", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.merge:
        # Rows of several runs of one configuration (the GPU machine limits a
        # command to 10 minutes), compared again with the merged baselines.
        docs = []
        for path in args.merge:
            with open(path) as f:
                docs.append(json.load(f))
        doc = dict(docs[0], results=[], merged_from=[os.path.basename(x) for x in args.merge])
        for run, d in enumerate(docs, 1):
            # The rounds of a --repeat run stay apart: run 4.2 is round 2 of
            # the fourth file.
            doc["results"].extend(
                dict(r, run=f"{run}.{r['run']}" if d.get("repeat", 1) > 1 and "run" in r
                     else run) for r in d["results"])
        for r in doc["results"]:
            # Runs from before rows named their gradient baseline.
            try:
                r.setdefault("grad_baseline", parse_row(r["row"]).grad_baseline)
            except ValueError:
                pass  # a renamed row keeps its plain baseline
        compare_all(doc["results"])
        _write(doc, args.out)
        args.plot_from = (args.out + ".json") if args.out else None
        if not args.out:
            print(table(doc))
            return 0
    if args.plot_from:
        with open(args.plot_from) as f:
            doc = json.load(f)
        prefix = os.path.splitext(args.plot_from)[0]
        with open(prefix + ".md", "w") as f:
            f.write(table(doc))
        if not plot(doc, prefix + ".png"):
            print("matplotlib is not installed: pip install matplotlib", file=sys.stderr)
            return 1
        print(f"wrote {prefix}.md and {prefix}.png")
        return 0

    config = dict(MODEL_DEFAULTS, **CONFIGS[args.config])
    for key, value in config.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)

    if args.row:
        result = run_row(args, parse_row(args.row))
        print("RESULT " + json.dumps(result), flush=True)
        return 0

    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    if args.paired:
        try:
            row_a, row_b = paired_rows(args.paired)
        except ValueError as e:
            p.error(str(e))
        if args.repeat == 1:
            paired = {"paired": run_paired(args, row_a, row_b)}
        else:
            # Each its own process: a process's median moves by more than the
            # costs a pair resolves (docs/benchmarks/peers.md, run 28).
            runs = []
            clean = child_args(argv if argv is not None else sys.argv[1:], ("--out", "--repeat"))
            for i in range(1, args.repeat + 1):
                with tempfile.TemporaryDirectory() as tmp:
                    out = os.path.join(tmp, "paired")
                    proc = subprocess.run(
                        [sys.executable, "-m", "benchmarks.peers", *clean, "--out", out],
                        capture_output=True, text=True, env=_child_env())
                    if proc.returncode != 0:
                        print(proc.stdout[-2000:] + proc.stderr[-4000:], file=sys.stderr)
                        p.error(f"--paired, process {i} of {args.repeat}: "
                                f"exit {proc.returncode}")
                    with open(out + ".json") as f:
                        runs.append(json.load(f)["paired"])
                print(f"== process {i}: {runs[-1]['ratio_median']:.3f}x", flush=True)
            paired = {"paired": pool_paired(runs), "paired_runs": runs}
        doc = {"args": vars(args), **_machine(args), **paired}
        text = paired_table(doc)
        print(text)
        if args.out:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out + ".json", "w") as f:
                json.dump(doc, f, indent=1)
            with open(args.out + ".md", "w") as f:
                f.write(text)
        return 0

    try:
        rows = [parse_row(s) for s in expand_rows(args.rows)]
    except ValueError as e:
        p.error(str(e))
    clean = child_args(argv if argv is not None else sys.argv[1:], ("--rows", "--out"))
    doc: dict[str, Any] = {"args": vars(args), **_machine(args), "results": []}
    env = _child_env()
    doc["repeat"] = args.repeat
    # Rounds in turn rather than each row N times in a row: drift over the
    # run (clocks, temperature) then falls on every row alike.
    for round_, row in ((i, row) for i in range(1, args.repeat + 1) for row in rows):
        t0 = time.perf_counter()
        if row.needs_cuda and args.device != "cuda":
            if round_ == 1:
                doc["results"].append({"row": row.name, "error": True, "status": "skipped",
                                       "reason": "needs a CUDA device"})
            continue
        cmd = [sys.executable, "-m", "benchmarks.peers", *clean, "--row", row.name]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                  timeout=args.row_timeout_s)
            stdout, stderr, rc = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:
            stdout = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            stderr = (e.stderr or b"").decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            rc = "timeout"
        line = [l for l in stdout.splitlines() if l.startswith("RESULT ")]
        if rc != 0 or not line:
            reason = _failure_reason(stderr) if stderr.strip() else f"exit {rc}"
            print(f"== {row.name}: failed ({rc}): {reason}\n{stderr[-4000:]}", flush=True)
            doc["results"].append({"row": row.name, "error": True, "status": "failed",
                                   "reason": reason, "stderr_tail": stderr[-3000:]})
            _write(doc, args.out)
            continue
        r = json.loads(line[0][len("RESULT "):])
        r["process_s"] = time.perf_counter() - t0
        if args.repeat > 1:
            r["run"] = round_
        r["warnings"] = [l for l in stderr.splitlines()
                         if "offload_mlir" in l or "Warning" in l][:10]
        doc["results"].append(r)
        compare_all(doc["results"])  # its baseline may have run after it
        print(f"== {row.name}: {r['step_s_median'] * 1e3:.1f} ms/step, peak "
              f"{r['peak_allocated_bytes'] / GiB:.2f} GiB, "
              f"{r.get('vs_baseline', {})} ({r['process_s']:.0f} s)", flush=True)
        _write(doc, args.out)
    _write(doc, args.out)
    print(table(doc))
    if args.out and not plot(doc, args.out + ".png"):
        print(f"(no plot: matplotlib is not installed; run "
              f"python -m benchmarks.peers --plot-from {args.out}.json where it is)")
    return 0 if all(r.get("status") != "failed" for r in doc["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
