"""Export a PyTorch training step (AOTAutograd forward + backward FX graphs)
as MLIR text in the `trace` dialect.

The IR contract (docs/architecture.md, "The contracts"):

* one `func.func @forward` and one `func.func @backward`;
* forward carries `offload.backward = @backward` and
  `offload.num_outputs = N : i64`; its results past the first N are the values
  saved for backward, and they arrive in the same order and with the same
  types as the leading arguments of backward;
* every FX `call_function` node becomes one `trace.op "<target>"` (or
  `trace.view "<target>"` for ops whose schema says the single result aliases
  the single tensor operand), with attributes `node` (FX node name), `args`
  and `kwargs` (non-tensor arguments as attributes, tensor operands as
  `#trace.operand<i>`), `mutates` (operands written in place, from the
  schema), for multi-result ops, `result_names` / `result_indices`, and
  `recomputed` on a backward op that computes a forward node's value again
  (the partitioner's recomputation: same node name and target in both),
  and `rng` on an op that draws random numbers (tagged
  `nondeterministic_seeded`, or one of the rng higher-order ops below);
* activation checkpointing's rng higher-order ops (RNG_HOPS) become
  `trace.op "higher_order.<name>"` with the wrapped ATen op as their first
  argument (`#trace.py<"torch.ops.aten.native_dropout.default">`) and
  their results flattened (run_and_save_rng_state's nests the op's tuple
  in its own; `result_indices` count in the flattened tuple); a
  `torch.Generator` placeholder becomes a `!trace.generator` argument; the
  generator state run_and_save_rng_state returns is typed by its real size
  and its producer carries `offload.keep`, and backward's placeholder for
  it (`rng_state_output_<k>`) is matched to it by the wrapped call;
* a forward placeholder the bridge found to be an activation the caller
  drops (meta DONATED_META) carries `offload.donated`;

Tracing runs under FakeTensorMode, so no device memory is allocated: a
Llama-3-8B layer at 8x1024 tokens in bf16 traces on any machine that can
create fake tensors for the chosen device.

CLI::

    python -m offload_mlir.fx_export --model llama-block --layers 1 \
        --batch 8 --seq 1024 --dtype bf16 -o llama_block.mlir

Python::

    from offload_mlir.fx_export import export_training_step
    text = export_training_step(module, [x])
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import operator
import sys
import time
from typing import Any, Callable, Iterable, Sequence

import torch
import torch.fx as fx

from .mlir_text import dict_key, mlir_float, mlir_int, mlir_string, ssa_name

# The placeholder meta key that marks a forward input its caller donates
# (set by the bridge's partitioner); the argument carries `offload.donated`.
DONATED_META = "offload_donated"

__all__ = [
    "TracedStep",
    "ExportError",
    "trace_training_step",
    "emit_mlir",
    "export_training_step",
    "summarize",
    "mlir_tensor_type",
    "size_hint",
    "size_hints",
    "is_view_op",
]


class ExportError(RuntimeError):
    """The graph uses something the trace-dialect exporter cannot express."""


# ---------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------

_DTYPES: dict[torch.dtype, str] = {
    torch.bfloat16: "bf16",
    torch.float16: "f16",
    torch.float32: "f32",
    torch.float64: "f64",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "ui8",
    torch.bool: "i1",
    torch.complex64: "complex<f32>",
    torch.complex128: "complex<f64>",
}
for _name, _mlir in (
    ("uint16", "ui16"),
    ("uint32", "ui32"),
    ("uint64", "ui64"),
    ("float8_e4m3fn", "f8E4M3FN"),
    ("float8_e5m2", "f8E5M2"),
    ("float8_e4m3fnuz", "f8E4M3FNUZ"),
    ("float8_e5m2fnuz", "f8E5M2FNUZ"),
):
    if hasattr(torch, _name):
        _DTYPES[getattr(torch, _name)] = _mlir



def _i64_array(values: list[int]) -> str:
    """A dense i64 array attribute (`array<i64>` when empty)."""
    if not values:
        return "array<i64>"
    return "array<i64: " + ", ".join(map(str, values)) + ">"

def mlir_element_type(dtype: torch.dtype) -> str:
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise ExportError(f"no MLIR element type for {dtype}") from None


def size_hint(d: Any) -> int:
    """A size as the IR spells it: an int, or a symbolic size's hint (the
    value it had when the graph was traced, the one Inductor autotunes at).
    The plan is made at the hints; the rebuilt FX graphs keep the symbols."""
    if isinstance(d, int):
        return d
    hint = d.node.hint if isinstance(d, torch.SymInt) else None
    if not isinstance(hint, int):
        raise ExportError(f"size {d} has no hint (a data-dependent size)")
    return hint


def size_hints(gm: fx.GraphModule) -> dict[str, int]:
    """The size symbols of `gm`'s inputs (tensor sizes and symbolic scalars)
    with their hints, by name (`{"s27": 24}`); empty for a static graph."""
    hints: dict[str, int] = {}
    for n in gm.graph.find_nodes(op="placeholder"):
        val = n.meta.get("val")
        sizes = list(val.shape) if isinstance(val, torch.Tensor) else [val]
        for d in sizes:
            if isinstance(d, torch.SymInt) and d.node.expr.is_Symbol:
                hints[str(d.node.expr)] = size_hint(d)
    return dict(sorted(hints.items()))


def mlir_tensor_type(t: torch.Tensor) -> str:
    """`tensor<8x1024xbf16>`, symbolic sizes at their hints, 0-d as
    `tensor<f32>`."""
    dims = [str(size_hint(d)) for d in t.shape]
    elem = mlir_element_type(t.dtype)
    return "tensor<" + "".join(d + "x" for d in dims) + elem + ">"


def _scalar_type(v: Any) -> str | None:
    """MLIR type of a symbolic scalar value, or None for anything else."""
    if isinstance(v, torch.SymBool):
        return "i1"
    if isinstance(v, torch.SymInt):
        return "index"
    if isinstance(v, torch.SymFloat):
        return "f64"
    return None


GENERATOR_TYPE = "!trace.generator"


def _value_type(v: Any) -> str | None:
    """MLIR type of a value that becomes an SSA value, or None if it does not."""
    if isinstance(v, torch.Tensor):
        return mlir_tensor_type(v)
    if isinstance(v, torch.Generator):
        return GENERATOR_TYPE
    return _scalar_type(v)


def _node_val(node: fx.Node) -> Any:
    if "val" in node.meta:
        return node.meta["val"]
    tm = node.meta.get("tensor_meta")
    if tm is not None and hasattr(tm, "shape") and hasattr(tm, "dtype"):
        # A TensorMetadata: good enough for the type.
        return torch.empty(tuple(tm.shape), dtype=tm.dtype, device="meta")
    raise ExportError(f"node {node.name!r} has no meta['val']; cannot type it")


def _tensor_bytes(t: torch.Tensor) -> int:
    n = 1
    for d in t.shape:
        n *= size_hint(d)
    return n * t.element_size()


# ---------------------------------------------------------------------------
# Op classification from schemas
# ---------------------------------------------------------------------------

# Ops whose schema carries no alias annotation although the result shares the
# input's storage (`_unsafe_view` is a view whose schema drops the alias so
# autograd treats the result as fresh). Everything else is decided from the
# schema.
_UNANNOTATED_VIEWS = frozenset({"aten::_unsafe_view"})


def _schema(target: Any):
    return getattr(target, "_schema", None)


def target_name(target: Any) -> str:
    """`aten.mm.default` for an OpOverload; a dotted path for other callables."""
    if isinstance(target, str):
        return target
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(target)
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order.{target.name()}"
    mod = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if name is None:
        return str(target)
    mod = {"_operator": "operator", "builtins": "builtins"}.get(mod, mod)
    return f"{mod}.{name}" if mod else name


def is_view_op(target: Any) -> bool:
    """True if the schema says the single Tensor result aliases the first
    argument without writing to it (`Tensor(a) self -> Tensor(a)`)."""
    schema = _schema(target)
    if schema is None:
        return False
    if len(schema.returns) != 1 or str(schema.returns[0].type) != "Tensor":
        return False
    if schema.name in _UNANNOTATED_VIEWS:
        return True
    ret_alias = schema.returns[0].alias_info
    if ret_alias is None or ret_alias.is_write:
        return False
    if not schema.arguments:
        return False
    arg_alias = schema.arguments[0].alias_info
    if arg_alias is None or arg_alias.is_write:
        return False
    return bool(set(ret_alias.before_set) & set(arg_alias.before_set))


def _written_arguments(target: Any) -> list[int]:
    schema = _schema(target)
    if schema is None:
        return []
    return [
        i
        for i, a in enumerate(schema.arguments)
        if a.alias_info is not None and a.alias_info.is_write
    ]


# ---------------------------------------------------------------------------
# Random ops
# ---------------------------------------------------------------------------

# The higher-order ops AOTAutograd's partitioner wraps a random op in when it
# recomputes the op in backward (activation checkpointing: the op is in a
# must-recompute region), so that backward draws the same numbers as forward
# (torch/_functorch/partitioners.py, functionalize_rng_ops):
#   state, out = run_and_save_rng_state(op, *args)   forward: the global
#                                                    generator's state, saved
#   out = run_with_rng_state(state, op, *args)       backward: op drawn from it
#   out = graphsafe_run_with_rng_state(op, *args, rng_state=gen)
#                                       CUDA, both graphs: op drawn from the
#                                       torch.Generator placeholder `gen`
RNG_HOPS = frozenset({"run_and_save_rng_state", "run_with_rng_state",
                      "graphsafe_run_with_rng_state"})


@dataclasses.dataclass
class RngCall:
    """A call of one of RNG_HOPS, unwrapped: the random op it runs and how."""

    hop: str
    op: Any  # the wrapped OpOverload
    args: tuple
    kwargs: dict
    state: Any  # run_with_rng_state's saved state, graphsafe's generator; else None


def rng_hop_name(node: fx.Node) -> str | None:
    """The name of the rng higher-order op `node` calls, or None."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.HigherOrderOperator):
        return None
    name = node.target.name()
    return name if name in RNG_HOPS else None


def rng_call(node: fx.Node) -> RngCall | None:
    """`node` unwrapped, if it calls one of RNG_HOPS; None otherwise."""
    hop = rng_hop_name(node)
    if hop is None:
        return None
    args, kwargs, state = tuple(node.args), dict(node.kwargs), None
    if hop == "run_with_rng_state":
        state, args = args[0], args[1:]
    elif hop == "graphsafe_run_with_rng_state":
        state = kwargs.pop("rng_state", None)
    return RngCall(hop, args[0] if args else None, args[1:], kwargs, state)


def unsupported_rng_call(node: fx.Node) -> str | None:
    """Why an rng higher-order op call cannot be carried, or None if it can:
    it must wrap a functional ATen op (no subgraph, no in-place write)."""
    call = rng_call(node)
    if call is None:
        return "not an rng higher-order op"
    if not isinstance(call.op, torch._ops.OpOverload):
        return f"{call.hop} wraps {call.op!r}, not an ATen op"
    if call.op._schema.is_mutable:
        return f"{call.hop} wraps {call.op}, which writes in place"
    if call.hop != "run_and_save_rng_state" and not isinstance(call.state, fx.Node):
        return f"{call.hop} has no state or generator operand"
    return None


def draws_random_numbers(node: fx.Node) -> bool:
    """Whether the call reads and advances random-number state: an rng
    higher-order op, or an ATen op PyTorch tags `nondeterministic_seeded`
    (dropout, rand, the fused attention kernels)."""
    if node.op != "call_function":
        return False
    if rng_hop_name(node) is not None:
        return True
    tags = getattr(node.target, "tags", ())
    return torch.Tag.nondeterministic_seeded in tags


def _rng_call_key(call: RngCall) -> str:
    """The wrapped call, with graph values by name: forward and its
    recomputation in backward read values of the same names (the
    partitioner's joint names, or the saved values' placeholders)."""
    named = torch.fx.node.map_aggregate(
        (call.args, call.kwargs), lambda a: f"%{a.name}" if isinstance(a, fx.Node) else a)
    return f"{call.op}{named!r}"


def saved_placeholder_names(forward: fx.Graph, backward: fx.Graph,
                            saved: Sequence[fx.Node]) -> list[str]:
    """The backward placeholder each saved forward value arrives as.

    The partitioner names them after the saved forward nodes, except the
    generator states run_and_save_rng_state saves: backward reads those as
    `rng_state_output_<k>`. Each is matched to the run_with_rng_state that
    reads it by the random call both wrap (same op, same values by name)."""
    placeholders = {n.name for n in backward.nodes if n.op == "placeholder"}
    state_of_call = {}
    for n in backward.nodes:
        call = rng_call(n)
        if call is not None and call.hop == "run_with_rng_state":
            state_of_call[_rng_call_key(call)] = call.state
    names = []
    for s in saved:
        if s.name in placeholders:
            names.append(s.name)
            continue
        hop = s.args[0] if (s.op == "call_function" and s.target is operator.getitem
                            and s.args[1] == 0 and isinstance(s.args[0], fx.Node)) else None
        call = rng_call(hop) if hop is not None else None
        state = None
        if call is not None and call.hop == "run_and_save_rng_state":
            state = state_of_call.get(_rng_call_key(call))
        if not isinstance(state, fx.Node) or state.op != "placeholder":
            raise ExportError(f"saved forward value {s.name!r} is not a backward placeholder")
        names.append(state.name)
    return names


def _fake_value_of_rng_call(node: fx.Node) -> Any:
    """The value of an rng higher-order op call, which the partitioner
    leaves without `meta['val']`: the wrapped op's result on the fake
    inputs (what the op's FakeTensorMode rule computes), each element
    replaced by its getitem's recorded value where there is one; for
    run_and_save_rng_state, (state, result)."""
    from torch._guards import detect_fake_mode

    call = rng_call(node)
    vals = []
    fake_args = torch.fx.node.map_arg((call.args, call.kwargs),
                                      lambda a: a.meta.get("val"))
    torch.fx.node.map_aggregate(fake_args, lambda v: vals.append(v))
    mode = detect_fake_mode([v for v in vals if isinstance(v, torch.Tensor)])
    if mode is None:
        raise ExportError(f"{node.name}: no fake tensors to compute its value with")
    with mode:
        out = call.op(*fake_args[0], **fake_args[1])

    def recorded(parent: fx.Node, value: Any) -> Any:
        if not isinstance(value, (tuple, list)):
            return value
        elems = list(value)
        for u in parent.users:
            if u.op == "call_function" and u.target is operator.getitem \
                    and isinstance(u.args[1], int) and u.args[1] < len(elems):
                i = u.args[1]
                elems[i] = recorded(u, u.meta.get("val", elems[i])) \
                    if isinstance(elems[i], (tuple, list)) else u.meta.get("val", elems[i])
        return tuple(elems)

    if call.hop == "run_and_save_rng_state":
        state = next((u.meta.get("val") for u in node.users
                      if u.op == "call_function" and u.target is operator.getitem
                      and u.args[1] == 0), None)
        if not isinstance(state, torch.Tensor):
            raise ExportError(f"{node.name}: the saved generator state has no value")
        return recorded(node, (state, out))
    return recorded(node, out)


# ---------------------------------------------------------------------------
# Tracing
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class TracedStep:
    """Forward and backward graphs of one training step, as AOTAutograd made them."""

    forward: fx.GraphModule
    backward: fx.GraphModule
    num_fwd_outputs: int
    partition: str = "default"
    description: str = ""
    removed_dead: list[str] = dataclasses.field(default_factory=list)


def _partitioner(name: str) -> Callable:
    from torch._functorch import partitioners

    if name in ("default", "default_partition"):
        return partitioners.default_partition
    if name in ("min-cut", "min_cut", "min_cut_rematerialization_partition"):
        return partitioners.min_cut_rematerialization_partition
    raise ValueError(f"unknown partitioner {name!r} (use 'default' or 'min-cut')")


def _boxed(fn: Callable) -> Callable:
    try:
        from torch._functorch.aot_autograd import make_boxed_func
    except ImportError:  # pragma: no cover - older layouts
        from functorch.compile import make_boxed_func
    return make_boxed_func(fn)


class _TupleOutputs(torch.nn.Module):
    """aot_module_simplified wants a module that returns a tuple."""

    def __init__(self, inner: torch.nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, *args):
        out = self.inner(*args)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def trace_training_step(
    module: torch.nn.Module,
    example_inputs: Sequence[Any],
    *,
    partition: str = "default",
    decompositions: dict | None = None,
    dce: bool = True,
) -> TracedStep:
    """Run AOTAutograd on `module(*example_inputs)` and capture the
    partitioned forward and backward graphs.

    Parameters and buffers are lifted to graph inputs (`primals_*`). Use fake
    tensors (create the module and inputs under one
    `torch._subclasses.FakeTensorMode`) to trace without allocating memory.
    At least one input or parameter must require grad.
    """
    from torch._functorch.aot_autograd import aot_module_simplified

    partition_impl = _partitioner(partition)
    captured: dict[str, Any] = {}

    def partition_fn(joint_module, joint_inputs, **kwargs):
        if "num_fwd_outputs" not in kwargs:
            raise ExportError(
                "AOTAutograd did not pass num_fwd_outputs to the partitioner"
            )
        fw, bw = partition_impl(joint_module, joint_inputs, **kwargs)
        captured["fw"] = fw
        captured["bw"] = bw
        captured["num_fwd_outputs"] = int(kwargs["num_fwd_outputs"])
        return fw, bw

    def fw_compiler(gm, _example_inputs):
        captured["fw_final"] = gm
        return _boxed(gm.forward)

    def bw_compiler(gm, _example_inputs):
        captured["bw_final"] = gm
        return _boxed(gm.forward)

    def inference_compiler(gm, _example_inputs):
        captured["inference"] = gm
        return _boxed(gm.forward)

    cfg = torch._functorch.config
    patches = {}
    for key, value in (("enable_autograd_cache", False),):
        if hasattr(cfg, key):
            patches[key] = value
    with cfg.patch(**patches):
        aot_module_simplified(
            _TupleOutputs(module),
            list(example_inputs),
            fw_compiler=fw_compiler,
            bw_compiler=bw_compiler,
            partition_fn=partition_fn,
            decompositions=decompositions or {},
            inference_compiler=inference_compiler,
        )
    if "fw" not in captured:
        if "inference" in captured:
            raise ExportError(
                "AOTAutograd traced an inference graph: nothing requires grad "
                "(give a parameter or input requires_grad=True)"
            )
        raise ExportError("AOTAutograd never called the partitioner")
    removed: list[str] = []
    # The forward compiler sees the forward graph after AOTAutograd's last
    # rewrites (they happen in place on the partitioner's graph module);
    # prefer what it saw.
    fw = captured.get("fw_final", captured["fw"])
    bw = captured.get("bw_final", captured["bw"])
    if dce:
        removed = remove_dead_ops(fw.graph) + remove_dead_ops(bw.graph)
    step = TracedStep(fw, bw, captured["num_fwd_outputs"], partition=partition)
    step.removed_dead = removed
    return step


def remove_dead_ops(graph: fx.Graph) -> list[str]:
    """Erase call nodes whose results nobody uses and that write nothing.

    FX keeps unused ops tagged `nondeterministic_seeded` (the fused attention
    kernels, for their dropout), so AOTAutograd's backward can hold a dead
    re-run of the forward attention; in the traced IR it would look like a
    real consumer of saved activations. Returns the erased node names.
    """
    removed = []
    changed = True
    while changed:
        changed = False
        for node in reversed(list(graph.nodes)):
            if node.op != "call_function" or node.users:
                continue
            if node.target is not operator.getitem:
                schema = _schema(node.target)
                if schema is None or schema.is_mutable:
                    continue
            removed.append(node.name)
            graph.erase_node(node)
            changed = True
    return removed


# ---------------------------------------------------------------------------
# Emission
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class _Value:
    ref: str  # "%name" or "%name#3"
    type: str


@dataclasses.dataclass
class _Const:
    value: Any  # a concrete Python value, inlined as an attribute


@dataclasses.dataclass
class _OpRecord:
    """One emitted op; rendered at the end so getitem names can be filled in."""

    node: fx.Node
    kind: str  # "op" or "view"
    target: str
    results: list[str]  # SSA names (without %) of results; [] if none
    result_base: str | None
    result_types: list[str]
    operands: list[_Value]
    args: str | None
    kwargs: str | None
    mutates: list[int]
    result_names: list[str] | None = None
    result_indices: list[int] | None = None
    rng: bool = False  # draws random numbers (reads and advances rng state)
    keep: bool = False  # offload.keep: its results stay on the device


@dataclasses.dataclass
class _Multi:
    record: _OpRecord
    # FX tuple index -> MLIR result number, or the nested tuple's own _Multi
    # (an rng op's result nests the wrapped op's tuple in its own).
    pos: dict[int, "int | _Multi"]
    elems: list[Any]


class _ArgEncoder:
    """Encodes one call's arguments, collecting tensor operands."""

    def __init__(self, fn: "_FunctionEmitter", node: fx.Node):
        self.fn = fn
        self.node = node
        self.operands: list[_Value] = []
        self._index: dict[str, int] = {}
        self.touched: list[int] = []

    def operand(self, value: _Value) -> str:
        i = self._index.get(value.ref)
        if i is None:
            i = len(self.operands)
            self._index[value.ref] = i
            self.operands.append(value)
        self.touched.append(i)
        return f"#trace.operand<{i}>"

    def encode(self, v: Any) -> str:
        if isinstance(v, fx.Node):
            info = self.fn.lookup(v)
            if isinstance(info, _Const):
                return self.encode(info.value)
            if isinstance(info, _Multi):
                raise ExportError(
                    f"node {self.node.name!r} uses multi-result node {v.name!r} "
                    "directly (expected operator.getitem)"
                )
            return self.operand(info)
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            try:
                return mlir_int(v)
            except OverflowError:
                self.fn.note(f"{self.node.name}: integer {v} kept as #trace.py")
                return f"#trace.py<{mlir_string(str(v))}>"
        if isinstance(v, float):
            return mlir_float(v) + " : f64"
        if isinstance(v, str):
            return mlir_string(v)
        if v is None:
            return "unit"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(self.encode(x) for x in v) + "]"
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            hint = v.node.maybe_as_int() if isinstance(v, torch.SymInt) else None
            if hint is not None:
                return mlir_int(hint)
            raise ExportError(
                f"{self.node.name}: symbolic scalar {v} is not a graph value"
            )
        return f"#trace.py<{mlir_string(py_repr(v))}>"


def py_repr(v: Any) -> str:
    """Source spelling of a framework constant (dtype, device, layout, ...)."""
    if isinstance(v, torch.device):
        return f"torch.device({str(v)!r})"
    if isinstance(v, (torch.dtype, torch.layout, torch.memory_format)):
        return repr(v)  # torch.bfloat16, torch.strided, torch.contiguous_format
    if isinstance(v, torch._ops.OpOverload):
        return f"torch.ops.{v}"  # torch.ops.aten.native_dropout.default
    return repr(v)


class _FunctionEmitter:
    def __init__(self, graph: fx.Graph, func_name: str, generic: bool):
        self.graph = graph
        self.func_name = func_name
        self.generic = generic
        self.values: dict[fx.Node, Any] = {}
        self.used_names: set[str] = set()
        self.records: list[_OpRecord] = []
        self.notes: list[str] = []
        self.arg_lines: list[str] = []
        self.arg_types: list[str] = []
        self.return_refs: list[_Value] = []
        self.return_indices: list[int] = []
        self.num_fx_returns = 0
        # Names of the nodes that compute a forward value again (backward).
        self.recomputed: set[str] = set()

    def note(self, msg: str) -> None:
        self.notes.append(msg)

    def lookup(self, node: fx.Node) -> Any:
        try:
            return self.values[node]
        except KeyError:
            raise ExportError(
                f"{self.func_name}: node {node.name!r} used before definition"
            ) from None

    # -- arguments --------------------------------------------------------
    def add_argument(self, node: fx.Node) -> str:
        val = _node_val(node)
        ty = _value_type(val)
        if ty is None:
            raise ExportError(
                f"{self.func_name}: placeholder {node.name!r} is neither a tensor "
                f"nor a symbolic scalar ({type(val).__name__})"
            )
        name = ssa_name(node.name, self.used_names)
        self.values[node] = _Value("%" + name, ty)
        self.arg_types.append(ty)
        donated = ", offload.donated" if node.meta.get(DONATED_META) \
            and ty.startswith("tensor<") else ""
        self.arg_lines.append(
            f"%{name}: {ty} {{trace.name = {mlir_string(node.name)}{donated}}} "
            f"loc({mlir_string(node.name)})"
        )
        return ty

    # -- body ---------------------------------------------------------------
    def emit_node(self, node: fx.Node) -> None:
        if node.op == "call_function" and node.target is operator.getitem:
            self._emit_getitem(node)
        elif node.op in ("call_function", "call_method", "call_module", "get_attr"):
            self._emit_call(node)
        else:
            raise ExportError(f"unexpected FX node kind {node.op!r} ({node.name})")

    def _emit_getitem(self, node: fx.Node) -> None:
        src, idx = node.args
        info = self.lookup(src)
        if not isinstance(info, _Multi) or not isinstance(idx, int):
            raise ExportError(
                f"{node.name}: getitem on a value that is not a multi-result op"
            )
        rec = info.record
        if isinstance(info.pos.get(idx), _Multi):
            self.values[node] = info.pos[idx]
        elif idx in info.pos:
            pos = info.pos[idx]
            ref = rec.result_base if len(rec.results) == 1 else f"{rec.result_base}#{pos}"
            self.values[node] = _Value("%" + ref, rec.result_types[pos])
            if rec.result_names is not None and not rec.result_names[pos]:
                rec.result_names[pos] = node.name
        else:
            elem = info.elems[idx] if idx < len(info.elems) else None
            if isinstance(elem, torch.Tensor):
                raise ExportError(f"{node.name}: tensor element {idx} has no result")
            self.values[node] = _Const(elem)

    def _emit_call(self, node: fx.Node) -> None:
        if node.op == "call_function":
            tname = target_name(node.target)
        elif node.op == "get_attr":
            tname = "fx.get_attr"  # the attribute's name is args[0]
        else:
            tname = f"fx.{node.op}.{node.target}"
        enc = _ArgEncoder(self, node)
        schema = _schema(node.target) if node.op == "call_function" else None
        per_arg: dict[int, list[int]] = collections.defaultdict(list)

        if node.op == "get_attr":
            args_txt = "[" + mlir_string(str(node.target)) + "]"
            kwargs_txt = None
        else:
            pieces = []
            for j, a in enumerate(node.args):
                start = len(enc.touched)
                pieces.append(enc.encode(a))
                per_arg[j].extend(enc.touched[start:])
            args_txt = "[" + ", ".join(pieces) + "]"
            kw_pieces = []
            arg_pos = {}
            if schema is not None:
                arg_pos = {a.name: i for i, a in enumerate(schema.arguments)}
            for k, a in node.kwargs.items():
                start = len(enc.touched)
                kw_pieces.append(f"{dict_key(k)} = {enc.encode(a)}")
                if k in arg_pos:
                    per_arg[arg_pos[k]].extend(enc.touched[start:])
            kwargs_txt = "{" + ", ".join(kw_pieces) + "}" if kw_pieces else None

        mutates = sorted({i for j in _written_arguments(node.target) for i in per_arg.get(j, [])}) \
            if node.op == "call_function" else []

        rng_hop = rng_hop_name(node)
        if rng_hop is not None and "val" not in node.meta:
            val = _fake_value_of_rng_call(node)
        else:
            val = _node_val(node) if ("val" in node.meta or "tensor_meta" in node.meta) else None
        multi = isinstance(val, (tuple, list))
        nested: dict[int, Any] = {}
        if multi:
            elems = list(val)
            typed = []  # (index into the flattened tuple, type)
            flat = 0

            def flatten(values: list[Any], prefix: str) -> dict[int, Any]:
                nonlocal flat
                pos: dict[int, Any] = {}
                for i, e in enumerate(values):
                    if isinstance(e, (tuple, list)):
                        if rng_hop is None:
                            raise ExportError(f"{node.name}: nested multi-result values")
                        pos[i] = flatten(list(e), f"{prefix}{i}.")
                        continue
                    t = _value_type(e)
                    if t is not None:
                        pos[i] = len(typed)
                        typed.append((flat, t))
                    flat += 1
                return pos

            nested = flatten(elems, "")
        else:
            elems = [val]
            ty = _value_type(val) if val is not None else None
            typed = [(0, ty)] if ty is not None else []
            if val is not None and ty is None and not isinstance(
                val, (bool, int, float, type(None))
            ):
                raise ExportError(
                    f"{node.name}: cannot type result of {tname} "
                    f"({type(val).__name__})"
                )

        kind = "op"
        if (
            not multi
            and node.op == "call_function"
            and is_view_op(node.target)
            and len(enc.operands) == 1
            and len(typed) == 1
            and isinstance(val, torch.Tensor)
            and not mutates
        ):
            kind = "view"

        base = ssa_name(node.name, self.used_names) if typed else None
        rec = _OpRecord(
            node=node,
            kind=kind,
            target=tname,
            results=[base] * len(typed) if typed else [],
            result_base=base,
            result_types=[t for _, t in typed],
            operands=enc.operands,
            args=args_txt,
            kwargs=kwargs_txt,
            mutates=mutates,
        )
        if rng_hop is not None:
            rec.rng = True
            # The generator state it returns is host data of the generator
            # (a CPU tensor even on CUDA): never a copy's source.
            rec.keep = rng_hop == "run_and_save_rng_state"
        elif node.op == "call_function" and draws_random_numbers(node):
            rec.rng = True
        if multi:
            rec.result_names = [""] * len(typed)
            indices = [i for i, _ in typed]
            if indices != list(range(len(typed))):
                rec.result_indices = indices

            def multi_of(pos: dict[int, Any], values: list[Any]) -> _Multi:
                return _Multi(rec, {i: multi_of(p, list(values[i])) if isinstance(p, dict) else p
                                    for i, p in pos.items()}, values)

            self.values[node] = multi_of(nested, elems)
        elif typed:
            self.values[node] = _Value("%" + base, typed[0][1])
        else:
            # A call whose value is a concrete Python scalar or None: later
            # uses see the constant; the call itself is kept for its effects.
            self.values[node] = _Const(val)
            if val is not None:
                self.note(f"{node.name}: {tname} returned constant {val!r}; inlined at uses")
        self.records.append(rec)

    def set_return(self, out_args: Iterable[Any]) -> None:
        outs = list(out_args)
        self.num_fx_returns = len(outs)
        for i, o in enumerate(outs):
            if o is None:
                continue
            if not isinstance(o, fx.Node):
                raise ExportError(
                    f"{self.func_name}: output {i} is a constant ({o!r}), not a value"
                )
            info = self.lookup(o)
            if not isinstance(info, _Value):
                raise ExportError(
                    f"{self.func_name}: output {i} ({o.name}) is not a tensor or "
                    "symbolic scalar value"
                )
            self.return_refs.append(info)
            self.return_indices.append(i)

    # -- rendering ------------------------------------------------------------
    def render_op(self, rec: _OpRecord, indent: str) -> str:
        attrs = []
        if self.generic:
            attrs.append(f"target = {mlir_string(rec.target)}")
        attrs.append(f"node = {mlir_string(rec.node.name)}")
        attrs.append(f"args = {rec.args}")
        if rec.kwargs is not None:
            attrs.append(f"kwargs = {rec.kwargs}")
        if rec.mutates:
            attrs.append("mutates = array<i64: " + ", ".join(map(str, rec.mutates)) + ">")
        if rec.rng:
            attrs.append("rng")
        if rec.keep:
            attrs.append("offload.keep")
        if rec.kind == "op" and rec.node.name in self.recomputed:
            attrs.append("recomputed")
        if rec.result_names is not None:
            attrs.append(
                "result_names = [" + ", ".join(mlir_string(n) for n in rec.result_names) + "]"
            )
        if rec.result_indices is not None:
            attrs.append(
                "result_indices = " + _i64_array(rec.result_indices)
            )
        n = len(rec.result_types)
        if n == 0:
            lhs = ""
        elif n == 1:
            lhs = f"%{rec.result_base} = "
        else:
            lhs = f"%{rec.result_base}:{n} = "
        operands = ", ".join(v.ref for v in rec.operands)
        in_types = ", ".join(v.type for v in rec.operands)
        if n == 1:
            out_types = rec.result_types[0]
        else:
            out_types = "(" + ", ".join(rec.result_types) + ")"
        head = (
            f'"trace.{rec.kind}"({operands})'
            if self.generic
            else f"trace.{rec.kind} {mlir_string(rec.target)}({operands})"
        )
        return (
            f"{indent}{lhs}{head} {{{', '.join(attrs)}}} : ({in_types}) -> {out_types}"
            f" loc({mlir_string(rec.node.name)})"
        )

    def render(self, arg_order: list[str], attributes: str, indent: str = "  ") -> str:
        body_indent = indent + "  "
        args = (",\n" + indent + "    ").join(arg_order)
        ret_types = ", ".join(v.type for v in self.return_refs)
        lines = [
            f"{indent}func.func @{self.func_name}(\n{indent}    {args})\n"
            f"{indent}    -> ({ret_types})\n{indent}    attributes {{{attributes}}} {{"
            if attributes
            else f"{indent}func.func @{self.func_name}(\n{indent}    {args})\n"
            f"{indent}    -> ({ret_types}) {{"
        ]
        for rec in self.records:
            lines.append(self.render_op(rec, body_indent))
        if self.return_refs:
            lines.append(
                f"{body_indent}func.return "
                + ", ".join(v.ref for v in self.return_refs)
                + " : "
                + ret_types
            )
        else:
            lines.append(f"{body_indent}func.return")
        lines.append(f"{indent}}}")
        return "\n".join(lines)


def _output_args(graph: fx.Graph) -> list[Any]:
    out = [n for n in graph.nodes if n.op == "output"]
    if len(out) != 1:
        raise ExportError("graph has no single output node")
    a = out[0].args[0]
    return list(a) if isinstance(a, (tuple, list)) else [a]


def _ops_in(graph: fx.Graph) -> Iterable[fx.Node]:
    return (n for n in graph.nodes if n.op not in ("placeholder", "output"))


@dataclasses.dataclass
class _Emitted:
    text: str
    forward: _FunctionEmitter
    backward: _FunctionEmitter
    saved_names: list[str]


def _emit(
    step: TracedStep,
    *,
    forward_name: str = "forward",
    backward_name: str = "backward",
    generic: bool = False,
    header: Sequence[str] = (),
) -> _Emitted:
    fw_graph, bw_graph = step.forward.graph, step.backward.graph
    fw_outs = _output_args(fw_graph)
    nout = step.num_fwd_outputs
    if nout > len(fw_outs):
        raise ExportError(
            f"num_fwd_outputs={nout} but forward returns {len(fw_outs)} values"
        )
    saved = fw_outs[nout:]
    for i, s in enumerate(saved):
        if not isinstance(s, fx.Node):
            raise ExportError(f"saved value {i} is not an FX node: {s!r}")

    # Forward.
    fwd = _FunctionEmitter(fw_graph, forward_name, generic)
    for n in fw_graph.nodes:
        if n.op == "placeholder":
            fwd.add_argument(n)
    for n in _ops_in(fw_graph):
        fwd.emit_node(n)
    fwd.set_return(fw_outs)
    if len(fwd.return_refs) != len(fw_outs):
        raise ExportError("forward returns None among its outputs")

    # Backward: saved values first, in forward order, matched by name (the
    # partitioner names backward placeholders after the saved forward
    # nodes; AOTAutograd puts saved symints before saved tensors in
    # backward, so order is taken from forward, not from the placeholders).
    bwd = _FunctionEmitter(bw_graph, backward_name, generic)
    # The partitioner copies the joint graph's nodes into both graphs under
    # their joint names: a backward node with a forward node's name and
    # target computes that forward value again (recomputation).
    forward_targets = {n.name: n.target for n in _ops_in(fw_graph)
                       if n.op == "call_function"}
    bwd.recomputed = {n.name for n in _ops_in(bw_graph)
                      if n.op == "call_function"
                      and forward_targets.get(n.name, None) is n.target}
    # A random op the partitioner recomputes is wrapped in rng higher-order
    # ops of different names in the two graphs: matched by the call they wrap.
    forward_rng_calls = {_rng_call_key(c) for c in map(rng_call, _ops_in(fw_graph))
                         if c is not None}
    bwd.recomputed |= {n.name for n in _ops_in(bw_graph)
                       if (c := rng_call(n)) is not None
                       and _rng_call_key(c) in forward_rng_calls}
    placeholders = [n for n in bw_graph.nodes if n.op == "placeholder"]
    by_name = {n.name: n for n in placeholders}
    ordered: list[fx.Node] = []
    for s, name in zip(saved, saved_placeholder_names(fw_graph, bw_graph, saved)):
        p = by_name[name]
        if p in ordered:
            raise ExportError(f"saved value {s.name!r} returned twice")
        ordered.append(p)
    rest = [p for p in placeholders if p not in ordered]
    for p in ordered + rest:
        bwd.add_argument(p)
    for n in _ops_in(bw_graph):
        bwd.emit_node(n)
    bwd.set_return(_output_args(bw_graph))

    # Contract: saved types equal backward's leading argument types.
    fw_saved_types = [v.type for v in fwd.return_refs[nout:]]
    if fw_saved_types != bwd.arg_types[: len(saved)]:
        raise ExportError(
            "saved value types differ between forward and backward: "
            f"{fw_saved_types} vs {bwd.arg_types[: len(saved)]}"
        )

    fw_attrs = (
        f"offload.backward = @{backward_name}, offload.num_outputs = {nout} : i64"
    )
    bw_attrs = ""
    if bwd.return_indices != list(range(bwd.num_fx_returns)):
        # Gradients that are None (inputs that need none) are dropped from
        # the results; record where the remaining ones sit in FX's output.
        bw_attrs = (
            "trace.result_indices = " + _i64_array(bwd.return_indices)
            + f", trace.num_fx_results = {bwd.num_fx_returns} : i64"
        )
    lines = [f"// {h}" for h in header]
    lines.append("module {")
    lines.append(fwd.render(fwd.arg_lines, fw_attrs))
    lines.append(bwd.render(bwd.arg_lines, bw_attrs))
    lines.append("}")
    return _Emitted("\n".join(lines) + "\n", fwd, bwd, [s.name for s in saved])


def emit_mlir(
    step: TracedStep,
    *,
    forward_name: str = "forward",
    backward_name: str = "backward",
    generic: bool = False,
    header: Sequence[str] = (),
) -> str:
    """MLIR text for `step`. With `generic=True` the trace ops are printed in
    MLIR's generic form (`"trace.op"(...) {target = ...}`), which any
    `mlir-opt --allow-unregistered-dialect` parses (for syntax checks)."""
    return _emit(
        step,
        forward_name=forward_name,
        backward_name=backward_name,
        generic=generic,
        header=header,
    ).text


def export_training_step(
    module: torch.nn.Module,
    example_inputs: Sequence[Any],
    *,
    partition: str = "default",
    decompositions: dict | None = None,
    generic: bool = False,
) -> str:
    """Trace `module(*example_inputs)` with AOTAutograd and return the
    training step as trace-dialect MLIR text."""
    step = trace_training_step(
        module, example_inputs, partition=partition, decompositions=decompositions
    )
    return emit_mlir(step, generic=generic)


# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------


def view_root(node: fx.Node) -> fx.Node:
    """Follow view ops (by schema) back to the node that owns the storage."""
    while (
        node.op == "call_function"
        and is_view_op(node.target)
        and node.args
        and isinstance(node.args[0], fx.Node)
    ):
        node = node.args[0]
    return node


def summarize(step: TracedStep) -> dict[str, Any]:
    """Op and saved-value statistics of a traced step."""
    fw, bw = step.forward.graph, step.backward.graph

    def count(graph: fx.Graph) -> dict[str, int]:
        ops = views = getitems = 0
        for n in _ops_in(graph):
            if n.op == "call_function" and n.target is operator.getitem:
                getitems += 1
                continue
            ops += 1
            if n.op == "call_function" and is_view_op(n.target):
                views += 1
        return {"ops": ops, "views": views, "getitems": getitems}

    fw_outs = _output_args(fw)
    saved = fw_outs[step.num_fwd_outputs :]
    saved_bytes = 0  # sum over saved values, views counted in full
    saved_tensors = 0
    saved_symints = 0
    roots: dict[fx.Node, int] = {}  # storage owner -> bytes
    for s in saved:
        v = _node_val(s)
        if isinstance(v, torch.Tensor):
            saved_tensors += 1
            saved_bytes += _tensor_bytes(v)
            root = view_root(s)
            rv = _node_val(root)
            roots[root] = _tensor_bytes(rv) if isinstance(rv, torch.Tensor) else 0
        else:
            saved_symints += 1
    input_roots = [r for r in roots if r.op == "placeholder"]
    storage_bytes = sum(roots.values())
    input_storage_bytes = sum(roots[r] for r in input_roots)
    targets = collections.Counter(
        target_name(n.target)
        for g in (fw, bw)
        for n in _ops_in(g)
        if n.op == "call_function" and n.target is not operator.getitem
    )
    return {
        "torch": torch.__version__,
        "partition": step.partition,
        "forward": count(fw),
        "backward": count(bw),
        "num_outputs": step.num_fwd_outputs,
        "saved_values": len(saved),
        "saved_tensors": saved_tensors,
        "saved_symints": saved_symints,
        "saved_bytes": saved_bytes,
        "saved_storages": len(roots),
        "saved_storage_bytes": storage_bytes,
        "saved_input_storages": len(input_roots),
        "saved_input_storage_bytes": input_storage_bytes,
        "saved_intermediate_storages": len(roots) - len(input_roots),
        "saved_intermediate_storage_bytes": storage_bytes - input_storage_bytes,
        "targets": dict(sorted(targets.items())),
    }


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

_DTYPE_FLAGS = {
    "bf16": torch.bfloat16,
    "f16": torch.float16,
    "fp16": torch.float16,
    "f32": torch.float32,
    "fp32": torch.float32,
}


def _build_model(args: argparse.Namespace):
    from . import models
    from torch._subclasses.fake_tensor import FakeTensorMode

    cfg = models.preset(args.model)
    overrides = {
        k: getattr(args, k)
        for k in ("hidden", "heads", "kv_heads", "head_dim", "ffn")
        if getattr(args, k) is not None
    }
    cfg = dataclasses.replace(cfg, **overrides)
    defaults = models.preset_shape(args.model)
    batch = args.batch if args.batch is not None else defaults["batch"]
    seq = args.seq if args.seq is not None else defaults["seq"]
    dtype = _DTYPE_FLAGS[args.dtype] if args.dtype else defaults["dtype"]
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    layers = args.layers

    fake_mode = FakeTensorMode() if not args.real else None
    ctx = fake_mode if fake_mode is not None else _nullcontext()
    with ctx:
        model = models.LlamaStack(
            cfg, layers, seq, device=device, dtype=dtype, loss=args.loss
        )
        x = torch.empty(batch, seq, cfg.hidden, device=device, dtype=dtype)
        if not args.input_no_grad:
            x.requires_grad_(True)
    desc = (
        f"model={args.model} layers={layers} batch={batch} seq={seq} "
        f"dtype={str(dtype).replace('torch.', '')} device={device} "
        f"hidden={cfg.hidden} heads={cfg.heads} kv_heads={cfg.kv_heads} "
        f"head_dim={cfg.head_dim_} ffn={cfg.ffn} loss={'mse' if args.loss else 'none'} "
        f"partition={args.partition}"
    )
    return model, [x], desc


LIT_RUN_LINE = "RUN: offload-opt %s | offload-opt -o /dev/null"


def _regen_flags(argv: Sequence[str]) -> str:
    """The command-line flags minus the output paths."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("-o", "--output", "--summary-json"):
            skip = True
            continue
        if a.startswith(("--output=", "--summary-json=")):
            continue
        out.append(a)
    return " ".join(out)


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m offload_mlir.fx_export",
        description="Trace a model's training step and write trace-dialect MLIR.",
    )
    p.add_argument("--model", default="llama-block", choices=["llama-block", "tiny-block"])
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--batch", type=int)
    p.add_argument("--seq", type=int)
    p.add_argument("--dtype", choices=sorted(_DTYPE_FLAGS))
    p.add_argument("--hidden", type=int)
    p.add_argument("--heads", type=int)
    p.add_argument("--kv-heads", dest="kv_heads", type=int)
    p.add_argument("--head-dim", dest="head_dim", type=int)
    p.add_argument("--ffn", type=int)
    p.add_argument("--device", help="device the fake tensors claim (default: cuda if available)")
    p.add_argument("--partition", default="default", choices=["default", "min-cut"])
    p.add_argument("--loss", action="store_true",
                   help="end the step in a scalar loss (mean of squares) instead of "
                        "returning the hidden states")
    p.add_argument("--input-no-grad", action="store_true",
                   help="the input activation does not require grad")
    p.add_argument("--real", action="store_true",
                   help="trace with real tensors instead of fake ones (allocates)")
    p.add_argument("--generic", action="store_true",
                   help="print trace ops in MLIR's generic form (for mlir-opt "
                        "--allow-unregistered-dialect syntax checks)")
    p.add_argument("--lit", action="store_true",
                   help="start the file with a lit RUN line that parses, prints and "
                        "re-parses it with offload-opt (for files under test/)")
    p.add_argument("--summary-json", help="also write the summary as JSON here")
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    model, inputs, desc = _build_model(args)
    step = trace_training_step(model, inputs, partition=args.partition)
    t1 = time.perf_counter()
    step.description = desc
    info = summarize(step)
    header = [
        "Generated by offload_mlir.fx_export (torch " + torch.__version__ + ").",
        desc,
        "Regenerate (from python/): python -m offload_mlir.fx_export "
        + _regen_flags(argv if argv is not None else sys.argv[1:])
        + " -o FILE",
        f"forward: {info['forward']['ops']} ops ({info['forward']['views']} views), "
        f"backward: {info['backward']['ops']} ops ({info['backward']['views']} views), "
        f"saved: {info['saved_values']} values over {info['saved_storages']} storages, "
        f"{info['saved_intermediate_storages']} of them intermediates "
        f"({_mib(info['saved_intermediate_storage_bytes'])})",
    ]
    if args.lit:
        header.insert(0, LIT_RUN_LINE)
    emitted = _emit(step, generic=args.generic, header=header)
    t2 = time.perf_counter()
    info["trace_seconds"] = round(t1 - t0, 3)
    info["emit_seconds"] = round(t2 - t1, 3)
    if args.output == "-":
        sys.stdout.write(emitted.text)
    else:
        with open(args.output, "w") as f:
            f.write(emitted.text)
    info["description"] = desc
    info["notes"] = emitted.forward.notes + emitted.backward.notes
    if step.removed_dead:
        info["notes"].append("removed dead ops: " + ", ".join(step.removed_dead))
    print(
        f"torch {torch.__version__}: {desc}\n"
        f"  forward:  {info['forward']['ops']} ops ({info['forward']['views']} views, "
        f"{info['forward']['getitems']} getitems folded)\n"
        f"  backward: {info['backward']['ops']} ops ({info['backward']['views']} views, "
        f"{info['backward']['getitems']} getitems folded)\n"
        f"  outputs: {info['num_outputs']}; saved: {info['saved_values']} values "
        f"({info['saved_tensors']} tensors, {info['saved_symints']} symints) over "
        f"{info['saved_storages']} storages, {_mib(info['saved_storage_bytes'])}: "
        f"{info['saved_input_storages']} graph inputs ({_mib(info['saved_input_storage_bytes'])}), "
        f"{info['saved_intermediate_storages']} intermediates "
        f"({_mib(info['saved_intermediate_storage_bytes'])})\n"
        f"  traced in {t1 - t0:.1f} s, emitted in {t2 - t1:.2f} s",
        file=sys.stderr,
    )
    for n in info["notes"]:
        print("  note: " + n, file=sys.stderr)
    if args.summary_json:
        with open(args.summary_json, "w") as f:
            json.dump(info, f, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
