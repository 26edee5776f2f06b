"""Keep each copy's overlap window in the order Inductor runs.

The rebuilt graphs list every copy start where the plan put it, with the
compute the plan counts on to hide the copy between the start and its wait.
Inductor's scheduler keeps graph order only up to data dependencies: when it
fuses two nodes, the fused kernel takes the place of the earlier one, and the
topological sort that follows pulls whatever the later one reads above it.
A copy start depends only on a graph input (backward) or its source
(forward), so the matmuls between it and its wait can end up above it, and
the wait then stalls the compute stream for the whole copy. On the H100 this
happened in backward with Inductor's mix-order reductions, which fuse a
norm's weight-gradient reduction with a later one (docs/benchmarks/peers/README.md).

This post-grad pass gives every extern kernel (matmuls, convolutions,
attention, fallback ops) that sits between a copy's start and its wait an
ordering-only dependence on the start, through Inductor's own `control_deps`
higher-order op. Inductor lowers the wrapped node exactly as before and adds
a fake weak dependence to the scheduler: it changes neither which kernels
run nor what they compute, only that those kernels run after the start. The
gradients therefore stay bit-identical to plain Inductor's.

Only extern kernels are wrapped: a pointwise or reduction node lowered
inside a subgraph would lose its users' realization hints, and with them its
fusions. Extern kernels are the compute a copy hides under anyway.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any, Optional

import torch
import torch.fx as fx

__all__ = ["PinCopyOrder", "copy_windows", "installed_pass"]

try:
    from torch._inductor.custom_graph_pass import CustomGraphPass
except ImportError:  # pragma: no cover - torch older than 2.11
    CustomGraphPass = object  # type: ignore[misc,assignment]


def _offload_ops():
    o = torch.ops.offload
    # prefetch_issue starts the next graph's loads, waited in that graph.
    starts = {o.offload_start.default: o.offload_wait.default,
              o.load_start.default: o.load_wait.default,
              o.prefetch_issue.default: None}
    return starts, ((set(starts) | set(starts.values())) - {None}) | {
        o.load.default, o.offload_release.default, o.prefetch_push.default}


def _matmul_like() -> set:
    aten = torch.ops.aten
    names = ["mm", "addmm", "bmm", "baddbmm", "_int_mm", "_scaled_mm",
             "convolution", "convolution_backward"]
    found = set()
    for name in names:
        packet = getattr(aten, name, None)
        if packet is not None:
            found.update(getattr(packet, o) for o in packet.overloads())
    return found


def _is_extern(node: fx.Node, own_ops: set, matmuls: set) -> bool:
    """Whether Inductor lowers `node` to an extern kernel of its own (so an
    ordering dependence added to it survives lowering)."""
    if node.op != "call_function" or node.target in own_ops:
        return False
    target = node.target
    if target in matmuls:
        return True
    if not isinstance(target, torch._ops.OpOverload):
        return False
    from torch._inductor import lowering

    # Ops Inductor does not lower itself (custom ops, explicit fallbacks
    # such as flash attention) run as FallbackKernels.
    return target in lowering.fallbacks or (
        target not in lowering.lowerings and target.namespace != "prims")


def copy_windows(graph: fx.Graph) -> list[tuple[fx.Node, fx.Node, list[fx.Node]]]:
    """Each copy start, its wait, and the extern kernels between them in
    graph order (a start without a wait in this graph keeps its kernels up to
    the end of the graph)."""
    starts, own_ops = _offload_ops()
    matmuls = _matmul_like()
    nodes = list(graph.nodes)
    position = {n: i for i, n in enumerate(nodes)}
    windows = []
    for start in nodes:
        if start.op != "call_function" or start.target not in starts:
            continue
        wait_target = starts[start.target]
        # An offload's wait, or its deferred form, which ends the window too.
        waits = [u for u in start.users if u.target is wait_target
                 or (wait_target is torch.ops.offload.offload_wait.default
                     and u.target is torch.ops.offload.offload_release.default)]
        end = min((position[w] for w in waits), default=len(nodes))
        between = [n for n in nodes[position[start] + 1:end]
                   if _is_extern(n, own_ops, matmuls)]
        if between:
            windows.append((start, waits[0] if waits else None, between))
    return windows


@functools.lru_cache(maxsize=None)
def _source_hash() -> str:
    with open(__file__, "rb") as f:
        return hashlib.sha256(f.read() + torch.__version__.encode()).hexdigest()


class PinCopyOrder(CustomGraphPass):
    """Inductor post-grad pass: the extern kernels in each copy's window run
    after its start. `then` is a pass that was configured before (a user's
    `post_grad_custom_post_pass`); it runs first."""

    def __init__(self, then: Optional[Any] = None):
        self.then = then
        self.pinned = 0  # kernels given a dependence, in the last call

    def __call__(self, graph: fx.Graph) -> None:
        if self.then is not None:
            self.then(graph)
        from torch._inductor.fx_passes.control_dependencies import preserve_node_ordering

        deps: dict[fx.Node, list[fx.Node]] = {}
        for start, _, kernels in copy_windows(graph):
            for k in kernels:
                deps.setdefault(k, []).append(start)
        self.pinned = len(deps)
        if deps:
            from torch.utils._ordered_set import OrderedSet

            preserve_node_ordering(graph, {k: OrderedSet(v) for k, v in deps.items()})

    def uuid(self) -> Any:
        inner = self.then.uuid() if hasattr(self.then, "uuid") else repr(self.then)
        return hashlib.sha256((_source_hash() + str(inner)).encode()).hexdigest()


def installed_pass(config) -> PinCopyOrder:
    """The pass to set as `post_grad_custom_post_pass`, keeping one the user
    configured (and not wrapping ours twice)."""
    current = config.post_grad_custom_post_pass
    if isinstance(current, PinCopyOrder):
        return current
    return PinCopyOrder(current)

