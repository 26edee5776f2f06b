"""The peers that offload by hand: the in-house layer-group offloader
(Megatron-Core and Transformer Engine style), torchtune's
OffloadActivations, and the peers from their own packages (DeepSpeed,
Megatron-Core, Thunder; python/benchmarks/peer_wheels.sh)."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any


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
