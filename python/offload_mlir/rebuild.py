"""Rebuild AOTAutograd's forward and backward FX graphs from the pipeline's IR.

The pipeline decides three things: which saved values go to host memory,
the backward's op order (views next to their consumers), and where each
copy starts and is waited. The IR keeps each traced op's FX node name, so
the rebuilt graph copies the original nodes in the IR's order and puts the
`torch.ops.offload.*` calls where the IR has the copies:

forward  `offload.offload_start %x`  ->  h = offload_start(x, stride, [after])
         `offload.wait %f`           ->  offload_wait(h, x, [after])
         (`offload.offload_to_cpu`   ->  both, back to back)
backward `offload.load_start %h`     ->  d = load_start(h, size, stride, dtype, device, [after])
         `offload.wait %f`           ->  load_wait(d, h, [after])
         (`offload.load_to_gpu`      ->  d = load(h, size, stride, dtype, device, [after]))

Saved views of one storage travel as one host copy of the value owning it
(one storage, one copy): the IR returns that copy in one saved slot and
drops the other slots from forward's results and backward's arguments; in
backward it re-applies each view to the loaded value (`trace.view` ops
marked `offload.rebuilt_view`, named after the forward FX nodes). The
rebuilt forward returns only the saved values the IR keeps, the rebuilt
backward has no placeholders for the dropped ones, and each marked op
becomes a copy of its forward FX node reading the loaded value.

The host value is an opaque 1-D uint8 buffer of the tensor's bytes laid out
with `stride` (the saved value's strides in the graph, or contiguous ones
if those are not dense): a compiler has no reason to relayout or read it,
and only the copy ops ever touch it. The load rebuilds exactly the tensor
the backward graph was traced with.

Why the operands (see docs/torch-bridge.md): Inductor frees or reuses a
buffer right after its last use in the graph, so the device source is an
operand of its offload's wait and stays allocated until the copy is waited.
The `after` operands stay empty: a data dependency added to pin a copy
changes which kernels Inductor may fuse, and with it the last bits of the
gradients (seen on a conv net). The order is kept instead by compiling with
Inductor's peak-memory reordering off (bridge.INDUCTOR_PATCHES), and the
tests check the generated code issues the copies in the IR's order.
"""

from __future__ import annotations

import operator
import types
from typing import Any

import torch
import torch.fx as fx

from .fx_export import ExportError, saved_placeholder_names
from .ir_plan import IrFunction, PlanReadError
from .ops import dense_stride

__all__ = ["rebuild_step", "RebuildError"]


class RebuildError(RuntimeError):
    """The IR and the FX graphs disagree; the bridge falls back."""


def _fake_mode(graph: fx.Graph):
    for n in graph.nodes:
        v = n.meta.get("val")
        if isinstance(v, torch.Tensor) and hasattr(v, "fake_mode"):
            return v.fake_mode
    raise RebuildError("graph has no fake tensor metadata")


def inductor_saved_layouts(fw: fx.GraphModule, names: list[str]) -> dict[str, list[int]]:
    """The strides Inductor gives the saved values `names` of `fw`, where they
    differ from the traced ones.

    With layout optimisation (graphs with convolutions) Inductor returns a
    4-D saved activation next to a convolution in channels-last, and
    AOTAutograd compiles the backward for those strides. A loaded value must
    arrive the same way, or the backward's kernels (cuDNN's, say) differ
    from plain torch.compile's in the last bits. This is Inductor's own rule
    (GraphLowering.output, for outputs that are not user-visible).
    """
    from torch._inductor.graph import GraphLowering

    if not GraphLowering.decide_layout_opt(fw, is_inference=False):
        return {}
    prefer = GraphLowering.find_nodes_prefer_channels_last(
        types.SimpleNamespace(module=fw))  # uses only self.module
    by_name = {n.name: n for n in fw.graph.nodes}
    layouts = {}
    for name in names:
        node = by_name.get(name)
        val = node.meta.get("val") if node is not None else None
        if (node in prefer and isinstance(val, torch.Tensor) and val.dim() == 4
                and torch._prims_common.is_non_overlapping_and_dense_or_false(val)):
            layouts[name] = list(torch._prims_common.make_channels_last_strides_for(val.shape))
    return layouts


def same_sizes(a, b) -> bool:
    """Sizes or strides equal for every value of their symbols, decided
    without adding a guard (plain ints compare as ints)."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    a, b = list(a), list(b)
    return len(a) == len(b) and all(statically_known_true(x == y) for x, y in zip(a, b))


def host_fake(val: torch.Tensor) -> torch.Tensor:
    """The fake value of a host copy of `val` (as offload_start makes it)."""
    return torch.ops.offload.offload_start.default(val, dense_stride(val), [])


class _Builder:
    def __init__(self, old: fx.GraphModule, fn: IrFunction):
        self.old = old
        self.fn = fn
        self.graph = fx.Graph()
        self.env: dict[fx.Node, fx.Node] = {}
        self.by_name = {n.name: n for n in old.graph.nodes}
        self.ssa: dict[str, fx.Node] = {}
        self.fake_mode = _fake_mode(old.graph)

    def _output_args(self) -> list[Any]:
        out = next(n for n in self.old.graph.nodes if n.op == "output")
        a = out.args[0]
        return list(a) if isinstance(a, (tuple, list)) else [a]

    def _call(self, target, args) -> fx.Node:
        node = self.graph.call_function(target, args)
        with self.fake_mode:
            fake_args = torch.fx.node.map_arg(args, lambda n: n.meta.get("val"))
            node.meta["val"] = target(*fake_args)
        return node

    def placeholders(self, host: dict[str, torch.Tensor],
                     dropped: set[str] = frozenset()) -> None:
        """One placeholder per old one, but for the `dropped` saved values;
        those in `host` hold the host copy of the given device value."""
        for p in self.old.graph.nodes:
            if p.op != "placeholder" or p.name in dropped:
                continue
            new = self.graph.placeholder(p.name)
            new.meta = dict(p.meta)
            if p.name in host:
                new.meta["val"] = host_fake(host[p.name])
                new.meta.pop("tensor_meta", None)
            self.env[p] = new
        for ssa, name in self.fn.arg_names.items():
            old = self.by_name.get(name)
            if old is None or old.op != "placeholder":
                raise RebuildError(f"@{self.fn.name}: argument {name!r} is no placeholder")
            self.ssa[ssa] = self.env[old]

    def copy_node(self, op) -> None:
        old = self.by_name.get(op.node)
        if old is None:
            raise RebuildError(f"@{self.fn.name}: IR names unknown node {op.node!r}")
        if old in self.env:
            raise RebuildError(f"@{self.fn.name}: node {op.node!r} appears twice")
        try:
            new = self.graph.node_copy(old, lambda n: self.env[n])
        except KeyError as e:
            raise RebuildError(
                f"@{self.fn.name}: {op.node} reads {e.args[0]} before it is defined"
            ) from None
        self.env[old] = new
        # Its getitems, and theirs where a result nests a tuple (an rng
        # higher-order op's result nests the wrapped op's).
        pending = [old]
        while pending:
            for g in pending.pop(0).users:
                if g.op == "call_function" and g.target is operator.getitem:
                    self.env[g] = self.graph.node_copy(g, lambda n: self.env[n])
                    pending.append(g)
        if len(op.results) == 1 and not op.result_names:
            self.ssa[op.results[0]] = new
        else:
            names = op.result_names or []
            for i, res in enumerate(op.results):
                if i < len(names) and names[i]:
                    g = self.by_name.get(names[i])
                    if g is not None and g in self.env:
                        self.ssa[res] = self.env[g]

    def value(self, ssa: str) -> fx.Node:
        try:
            return self.ssa[ssa]
        except KeyError:
            raise RebuildError(f"@{self.fn.name}: {ssa} has no FX value") from None

    def finish(self, outputs: list[Any]) -> fx.GraphModule:
        """Closes the graph; `outputs` are old nodes or nodes of the new graph."""
        mapped = torch.fx.node.map_arg(
            outputs, lambda n: n if n.graph is self.graph else self.env[n])
        self.graph.output(tuple(mapped))
        emitted = {n for n in self.env}
        missing = [n.name for n in self.old.graph.nodes
                   if n.op == "call_function" and n not in emitted]
        if missing:
            raise RebuildError(
                f"@{self.fn.name}: the IR dropped FX nodes {missing[:5]}"
            )
        self.graph.lint()
        gm = fx.GraphModule(self.old, self.graph)
        gm.meta = dict(getattr(self.old, "meta", {}))
        return gm


def _ir_saved_names(bw_fn: IrFunction, num_saved: int) -> list[str]:
    """The FX names of the saved values the IR keeps, in order: the names of
    backward's leading arguments (one per saved result of forward)."""
    names = list(bw_fn.arg_names.values())
    if len(names) < num_saved:
        raise RebuildError("backward has fewer arguments than forward saves values")
    return names[:num_saved]


def _saved_name_of_copies(fn: IrFunction, saved_names: list[str], num_outputs: int) -> dict[str, str]:
    """Per offload result or future, the saved value the return yields it as."""
    future_of = {op.results[0]: op.operands[0] for op in fn.ops if op.kind == "wait"}
    ret = next((op for op in fn.ops if op.kind == "return"), None)
    names: dict[str, str] = {}
    for i, ssa in enumerate(ret.operands if ret else []):
        if i >= num_outputs:
            names[future_of.get(ssa, ssa)] = saved_names[i - num_outputs]
    return names


def _realize_like_an_output(src: fx.Node, layout: list[int]) -> None:
    """Has Inductor realize `src` in place, as it realizes a saved value the
    forward returns. Without this the saved value is only an operand of
    offload_start, which Inductor may satisfy with a copy while inlining the
    computation into the value's other consumers: with a recompute budget
    that changed forward kernels, and the loss, in the last bits (a saved
    RMSNorm input, say, recomputed in fp32 inside its consumers instead of
    read back as bf16). Not where Inductor lays the saved value out in
    channels-last (layout != its traced strides): there the producer is a
    convolution, realized anyway, and asking for the traced strides would
    add a relayout copy."""
    val = src.meta.get("val")
    if isinstance(val, torch.Tensor) and same_sizes(val.stride(), layout):
        src.meta["inductor_realize_to_strides"] = True


# The view bits a tensor can carry (conjugation, negation), each with the
# view op that flips it.
_VIEW_BITS = (("is_conj", torch.ops.aten._conj.default),
              ("is_neg", torch.ops.aten._neg_view.default))


def _flip_view_bits(b: _Builder, node: fx.Node, flips: list) -> fx.Node:
    for flip in flips:
        node = b._call(flip, (node,))
    return node


def _without_view_bits(b: _Builder, src: fx.Node) -> tuple[fx.Node, list]:
    """`src` as a view without its conjugate or negative bit, and the view
    ops that set them again. A copy op given a tensor with such a bit would
    see PyTorch's fallback materialize it into a temporary: the copy would
    read memory nothing keeps alive, and the wait would see another tensor.
    The bytes of the storage move instead, and backward sets the bits again
    on the loaded value (`_conj` of `z * z`'s saved `_conj(z)`, say)."""
    val = src.meta.get("val")
    flips = [flip for bit, flip in _VIEW_BITS
             if isinstance(val, torch.Tensor) and getattr(val, bit)()]
    return _flip_view_bits(b, src, flips), flips


def _rebuild_forward(fw: fx.GraphModule, fn: IrFunction, num_outputs: int,
                     layouts: dict[str, list[int]], saved_names: list[str],
                     prefetched: set[str] = frozenset()):
    """The new forward, the positions (among `saved_names`, the saved values
    the IR keeps) of those offloaded, per offloaded name whose copy is of
    the storage it shares rather than of itself, or of itself without its
    view bits, the value copied, and per name the view ops that set those
    bits again. The host copies of the `prefetched` names (whose loads the
    backward graph before this one starts) are pushed as one group at the
    end (ops.prefetch_push)."""
    ops = torch.ops.offload
    b = _Builder(fw, fn)
    b.placeholders({})
    host_of: dict[str, fx.Node] = {}  # host SSA (or future) -> host node
    source_of: dict[str, fx.Node] = {}  # future SSA -> device source node
    copied: dict[str, torch.Tensor] = {}  # saved name -> value of the source
    flips: dict[str, list] = {}  # saved name -> view ops setting its bits
    returned: list[str] = []
    copy_names = _saved_name_of_copies(fn, saved_names, num_outputs)
    early: list[fx.Node] = []
    for op in fn.ops:
        if op.kind == "trace":
            b.copy_node(op)
        elif op.kind in ("offload_start", "offload_to_cpu"):
            src = b.value(op.operands[0])
            name = copy_names.get(op.results[0])
            if name not in layouts:
                raise RebuildError(f"@{fn.name}: {op.results[0]} is not returned as a saved value")
            layout = layouts[name]
            if src.name != name:
                # A shared copy: the source is the storage the saved views
                # share (their layouts are the views'), copied in its own.
                val = src.meta.get("val")
                if not isinstance(val, torch.Tensor):
                    raise RebuildError(f"@{fn.name}: offloaded {src.name} has no tensor value")
                layout = dense_stride(val)
                layouts[name] = layout
                copied[name] = val
            _realize_like_an_output(src, layout)
            src, flips[name] = _without_view_bits(b, src)
            if flips[name]:
                copied[name] = src.meta["val"]
            host = b._call(ops.offload_start.default, (src, layout, []))
            host_of[op.results[0]] = host
            if name in prefetched:
                early.append(host)
            source_of[op.results[0]] = src
            if op.kind == "offload_to_cpu":
                b._call(ops.offload_wait.default, (host, src, []))
        elif op.kind == "wait":
            fut = op.operands[0]
            if fut not in host_of:
                raise RebuildError(f"@{fn.name}: wait on {fut}, which no offload started")
            if op.deferred:
                # The next graph's forward completes the copy (offload.deferred).
                b._call(ops.offload_release.default, (host_of[fut], source_of[fut]))
            else:
                b._call(ops.offload_wait.default,
                        (host_of[fut], source_of[fut], []))
            host_of[op.results[0]] = host_of[fut]
        elif op.kind == "return":
            returned = op.operands
        else:
            raise RebuildError(f"@{fn.name}: unexpected {op.kind} in forward")
    outputs = b._output_args()
    if len(returned) != num_outputs + len(saved_names):
        raise RebuildError("forward returns a different number of values")
    old_saved = {n.name: n for n in outputs[num_outputs:] if isinstance(n, fx.Node)}
    offloaded: list[int] = []  # positions among the saved values kept
    final: list[Any] = []
    for i, ssa in enumerate(returned):
        if ssa in host_of:
            if i < num_outputs:
                raise RebuildError("the pipeline offloaded a user-visible output")
            final.append(host_of[ssa])
            offloaded.append(i - num_outputs)
        elif i < num_outputs:
            final.append(outputs[i])
        else:
            name = saved_names[i - num_outputs]
            if name not in old_saved:
                raise RebuildError(f"@{fn.name}: saved value {name} is not a forward output")
            final.append(old_saved[name])
    if early:
        b._call(ops.prefetch_push.default, (early,))
    gm = b.finish(final)
    return gm, offloaded, copied, flips


def _rebuild_view(b: _Builder, fw: fx.GraphModule, op, traced: dict[str, torch.Tensor]) -> None:
    """A forward view the IR re-applies to a loaded storage (one storage, one
    copy): a copy of its forward FX node reading the IR operand's value. If
    it is a saved value backward was traced with, it stands for that
    placeholder, and must have the traced value's layout."""
    node = next((n for n in fw.graph.nodes if n.name == op.node), None)
    if node is None or node.op != "call_function" or len(op.operands) != 1:
        raise RebuildError(f"@{b.fn.name}: rebuilt view {op.node!r} is no forward view")
    if len(node.all_input_nodes) != 1:
        raise RebuildError(f"@{b.fn.name}: rebuilt view {op.node!r} reads several values")
    source = b.value(op.operands[0])
    args = torch.fx.node.map_arg(node.args, lambda n: source)
    kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: source)
    new = b.graph.call_function(node.target, args, kwargs)
    with b.fake_mode:
        fake = torch.fx.node.map_arg((args, kwargs), lambda n: n.meta.get("val"))
        new.meta["val"] = node.target(*fake[0], **fake[1])
    b.ssa[op.results[0]] = new
    placeholder = b.by_name.get(op.node)
    if placeholder is not None and placeholder.op == "placeholder":
        want, got = traced.get(op.node), new.meta["val"]
        if want is None or want.dtype != got.dtype or not (
                same_sizes(want.shape, got.shape) and same_sizes(want.stride(), got.stride())):
            raise RebuildError(f"@{b.fn.name}: rebuilt view {op.node!r} differs from the "
                               "value backward was traced with")
        b.env[placeholder] = new


def _issue_prefetch(b: _Builder, op) -> None:
    """Starts the next backward graph's prefetched loads before `op`
    (offload.prefetch_issue), anchored on the first tensor `op` reads, which
    is live there anyway."""
    for ssa in op.operands:
        node = b.ssa.get(ssa)
        if node is not None and isinstance(node.meta.get("val"), torch.Tensor):
            b._call(torch.ops.offload.prefetch_issue.default, (node,))
            return


def _rebuild_backward(bw: fx.GraphModule, fw: fx.GraphModule, fn: IrFunction,
                      traced: dict[str, torch.Tensor], copied: dict[str, torch.Tensor],
                      layouts: dict[str, list[int]], dropped: set[str],
                      flips: dict[str, list]):
    ops = torch.ops.offload
    b = _Builder(bw, fn)
    b.placeholders({name: copied[name] for name in fn.host_args}, dropped)
    loads: dict[str, tuple[fx.Node, fx.Node]] = {}  # future -> (dst, host)
    for op in fn.ops:
        if op.prefetch_issue:
            _issue_prefetch(b, op)
        if op.kind == "trace" and op.rebuilt:
            _rebuild_view(b, fw, op, traced)
        elif op.kind == "trace":
            b.copy_node(op)
        elif op.kind in ("load_start", "load_to_gpu"):
            host = b.value(op.operands[0])
            name = host.name
            if name not in fn.host_args:
                raise RebuildError(f"@{fn.name}: load of {name}, not a host argument")
            like = copied[name]
            layout = (list(like.shape), layouts[name], like.dtype, like.device)
            if op.kind == "load_to_gpu":
                dst = b._call(ops.load.default, (host, *layout, []))
                dst = _flip_view_bits(b, dst, flips.get(name, []))
                b.ssa[op.results[0]] = dst
                b.env[b.by_name[name]] = dst
            else:
                dst = b._call(ops.load_start.default, (host, *layout, []))
                loads[op.results[0]] = (dst, host)
        elif op.kind == "wait":
            fut = op.operands[0]
            if fut not in loads:
                raise RebuildError(f"@{fn.name}: wait on {fut}, which no load started")
            dst, host = loads.pop(fut)
            b._call(ops.load_wait.default, (dst, host, []))
            dst = _flip_view_bits(b, dst, flips.get(host.name, []))
            b.ssa[op.results[0]] = dst
            b.env[b.by_name[host.name]] = dst
        elif op.kind == "return":
            pass
        else:
            raise RebuildError(f"@{fn.name}: unexpected {op.kind} in backward")
    if loads:
        raise RebuildError(f"@{fn.name}: a load is never waited")
    return b.finish(b._output_args())


def rebuild_step(
    fw: fx.GraphModule,
    bw: fx.GraphModule,
    functions: dict[str, IrFunction],
    num_fwd_outputs: int,
    inductor_layouts: bool = True,
) -> tuple[fx.GraphModule, fx.GraphModule, list[str]]:
    """New forward and backward graph modules with the IR's order and copies,
    and the names of the saved values that now travel through host memory.
    With `inductor_layouts`, saved values travel in the layout Inductor
    would give them (see inductor_saved_layouts)."""
    if "forward" not in functions or "backward" not in functions:
        raise PlanReadError("the IR has no @forward/@backward pair")
    fw_out = next(n for n in fw.graph.nodes if n.op == "output").args[0]
    saved = [n for n in list(fw_out)[num_fwd_outputs:] if isinstance(n, fx.Node)]
    # What the backward was traced with: its placeholders' values (they are
    # named after the saved forward nodes).
    traced = {n.name: n.meta["val"] for n in bw.graph.nodes
              if n.op == "placeholder" and isinstance(n.meta.get("val"), torch.Tensor)}
    layouts: dict[str, list[int]] = {}
    for s in saved:
        a, b = s.meta.get("val"), traced.get(s.name)
        if not isinstance(a, torch.Tensor) or b is None:
            continue
        if a.dtype != b.dtype or not same_sizes(a.shape, b.shape):
            raise RebuildError(f"saved value {s.name} is {tuple(a.shape)} {a.dtype} in "
                               f"forward but {tuple(b.shape)} {b.dtype} in backward")
        # Its own strides if dense, else contiguous ones (the ops' rule).
        layouts[s.name] = dense_stride(b)
    if inductor_layouts:
        layouts.update(inductor_saved_layouts(fw, list(layouts)))

    bw_fn = functions["backward"]
    fw_ret = next((op for op in functions["forward"].ops if op.kind == "return"), None)
    num_saved = len(fw_ret.operands) - num_fwd_outputs if fw_ret else 0
    # Backward reads a saved value under its forward name, but for the
    # generator states run_and_save_rng_state saves (rng_state_output_<k>).
    try:
        bw_name_of = dict(zip([s.name for s in saved],
                              saved_placeholder_names(fw.graph, bw.graph, saved)))
    except ExportError as e:
        raise RebuildError(str(e)) from None
    fw_name_of = {b: f for f, b in bw_name_of.items()}
    # The saved values the IR keeps (by their forward names); the others
    # travel in a shared copy.
    saved_names = [fw_name_of.get(n, n) for n in _ir_saved_names(bw_fn, num_saved)]
    dropped = {s.name for s in saved} - set(saved_names)
    # The saved values whose loads the backward graph before starts.
    prefetched = {bw_fn.arg_names.get(op.operands[0]) for op in bw_fn.ops
                  if op.prefetch and op.kind == "load_start"}
    new_fw, offloaded, copied, flips = _rebuild_forward(
        fw, functions["forward"], num_fwd_outputs, layouts, saved_names, prefetched)
    names = [saved_names[i] for i in offloaded]
    renamed = [n for n in names if bw_name_of.get(n, n) != n]
    if renamed:
        raise RebuildError(f"the IR offloads the generator states {renamed} "
                           "(their producers carry offload.keep)")
    dropped = {bw_name_of.get(n, n) for n in dropped}
    for name in names:
        copied.setdefault(name, traced.get(name))
    if set(names) != bw_fn.host_args:
        raise RebuildError(
            f"forward offloads {sorted(names)} but backward loads {sorted(bw_fn.host_args)}"
        )
    new_bw = _rebuild_backward(bw, fw, bw_fn, traced, copied, layouts, dropped, flips)
    return new_fw, new_bw, names
