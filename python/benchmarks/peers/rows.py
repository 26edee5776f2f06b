"""The rows of the peers benchmark: the model configurations, the row
grammar (`name[:key=value...]`, row sets), and how each compiled row sets up
its compiler (partitioner and Inductor settings, selective checkpointing,
the offload-mlir backend)."""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any


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
        run: `amb=`, `per-layer=` and the `partition.NAME=` and
        `inductor.NAME=` settings, as given."""
        return {k: v for k, v in self.options.items()
                if k in ("amb", "per-layer") or k.startswith(CONFIG_PREFIXES)}

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
    "compile": (True, False, ("amb", "per-layer")),
    "checkpoint": (False, False, ()),
    "checkpoint-compile": (True, False, ("amb",)),
    "sac-compile": (True, False, ("amb",)),
    "torch-offload": (True, True, ()),
    "torch-offload-stream": (True, True, ("prefetch",)),
    "torchtune": (False, True, ()),
    "layer-group": (False, False, ("layers", "min_bytes")),
    "offload-mlir": (True, False, ("plan", "budget", "schedule", "min_bytes", "amb",
                                   "load_lead", "profile", "reuse_freed_buffers",
                                   "checkpoint", "per-layer", "across", "donate",
                                   "instances", "max_recompute", "drop_peak_neutral")),
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


def is_instance_count(value: str) -> bool:
    """Whether `value` spells a row's `instances=` (backend(saved_instances=)):
    a count >= 1."""
    return value.isdigit() and int(value) >= 1


def is_recompute_fraction(value: str) -> bool:
    """Whether `value` spells a row's `max_recompute=` (backend(max_recompute=)):
    a fraction in [0, 1)."""
    return re.fullmatch(r"0?\.[0-9]+|0", value) is not None


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
        elif key == "max_recompute" and not is_recompute_fraction(value):
            raise ValueError(f"row {spec!r}: max_recompute= takes a fraction in [0, 1), "
                             f"not {value!r}")
        elif key == "instances" and not is_instance_count(value):
            raise ValueError(f"row {spec!r}: instances= takes a count >= 1, not {value!r}")
        elif key in ("partition", "per-layer", "across", "donate",
                     "drop_peak_neutral") and value.lower() not in (
                "0", "1", "true", "false"):
            raise ValueError(f"row {spec!r}: {key}= takes 0 or 1, not {value!r}")
        options[key] = value
    return Row(spec, family, compiled, options, needs_cuda)


def _compiled_backend(row: Row):
    return _offload_mlir_backend(row) if row.family == "offload-mlir" else "inductor"


def _flag(row: Row, key: str, default: str = "0") -> bool:
    return row.options.get(key, default).lower() in ("1", "true")


def compile_model(torch, model, row: Row):
    """torch.compile of the row's LlamaLM with the row's backend: the whole
    model, or with `per-layer=1` each decoder layer on its own (as torchtitan
    compiles; the embedding, final norm, head and loss stay eager). Returns
    what a step calls with (tokens, targets)."""
    backend = _compiled_backend(row)
    if not _flag(row, "per-layer"):
        return torch.compile(model, backend=backend, dynamic=False)
    layers = model.stack.layers
    for i, layer in enumerate(layers):
        layers[i] = torch.compile(layer, backend=backend, dynamic=False)
    return model


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
    if _flag(row, "per-layer"):
        # Each layer's first loads start during the backward of the layer
        # after it (across=0: each layer's graph planned alone).
        kw["prefetch"] = _flag(row, "across", "1")
    # donate=1: graph inputs that are activations may be offloaded
    # (backend(donate_activations=True)).
    kw["donate_activations"] = _flag(row, "donate")
    # instances=N: the layer graph's saved values are counted N times
    # (backend(saved_instances=N)), as N layers hold them together.
    if "instances" in row.options:
        kw["saved_instances"] = int(row.options["instances"])
    # max_recompute=X: the joint plan's step-time allowance (backend(max_recompute=X)).
    if "max_recompute" in row.options:
        kw["max_recompute"] = float(row.options["max_recompute"])
    # drop_peak_neutral=0|1: backend(drop_peak_neutral=); left out, the
    # backend decides per graph.
    if "drop_peak_neutral" in row.options:
        kw["drop_peak_neutral"] = _flag(row, "drop_peak_neutral")
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
        compiled.append((model, compile_model(torch, model, row)))
    tokens = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"] + 1),
                           generator=torch.Generator().manual_seed(1)).cuda()
    return compiled, tokens


def _mark_all_for_offload(graph) -> None:
    # PyTorch's compiler-level offloading moves the saved values whose nodes
    # are marked; it decides itself which of those it can move.
    for node in graph.nodes:
        if node.op == "call_function":
            node.meta["should_offload"] = True
