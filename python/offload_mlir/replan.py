"""Plans of one graph at several size hints.

The bridge plans a graph that Dynamo traced with symbolic sizes at the
sizes' hints (the sizes it was traced at). A call whose sizes lie far from
the hints (FAR_FROM_HINT or more, either way) runs copies placed for other
sizes, which may be exposed. `HintDispatch` runs such a graph's calls: it
says so once (PlanFarFromHintWarning), or, with
`backend(replan_far_from_hint=N)`, compiles the graph again planned at that
call's sizes, at most N times, and runs each call on the plan whose hints
are nearest to the call's sizes among the plans whose guards admit the call.

A re-plan traces the graph anew with fake inputs of a fresh ShapeEnv whose
symbols hint at the call's sizes (`fake_inputs_at`), so every guard its
compile makes (AOTAutograd's, Inductor's) lands in that ShapeEnv. The guards
it produces (`ShapeEnv.produce_guards_expression`) are checked before the
variant runs a call; a call that no variant admits runs on the first plan,
which Dynamo's own guards admit. The re-plan's compile must add no guard to
Dynamo's ShapeEnv (`guards_on`), which nothing would check.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Iterator, Sequence

import torch


class PlanFarFromHintWarning(UserWarning):
    """A graph with dynamic shapes runs at a size far from the hint it was
    planned at, where the plan may expose copies; the message says which,
    and whether the graph was planned again at that size."""


# How far from its hint a size may run before the plan made at the hint is
# flagged: 4x either way, where the cost model first predicts exposed copies
# (docs/benchmarks/dynamic-hints/README.md) and an H200 measured 1.024x
# (docs/benchmarks/variable-lengths-h200/README.md).
FAR_FROM_HINT = 4.0


def symbolic_input_dims(gm: torch.fx.GraphModule) -> list[tuple[int, int, str, int]]:
    """(input index, dim, symbol, hint) of each input size that is a plain
    symbol of the graph Dynamo traced."""
    dims = []
    for i, node in enumerate(gm.graph.find_nodes(op="placeholder")):
        value = node.meta.get("example_value")
        if not isinstance(value, torch.Tensor):
            continue
        for d, size in enumerate(value.shape):
            if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
                hint = size.node.hint
                if isinstance(hint, int) and hint > 0:
                    dims.append((i, d, str(size.node.expr), hint))
    return dims


def _symbolic_sizes(values: Sequence[Any]) -> Iterator[torch.SymInt]:
    """The symbolic tensor sizes and symbolic integers among `values`."""
    for v in values:
        for size in (v.shape if isinstance(v, torch.Tensor) else [v]):
            if isinstance(size, torch.SymInt):
                yield size


def input_hints(values: Sequence[Any]) -> tuple[tuple[str, int], ...]:
    """The hint of each size symbol among `values` (tensor sizes and
    symbolic integers), by name: what a plan of a graph with these fake
    inputs is made at."""
    return tuple(sorted({str(s.node.expr): s.node.hint for s in _symbolic_sizes(values)
                         if s.node.expr.is_Symbol and isinstance(s.node.hint, int)}.items()))


def dynamo_shape_env(gm: torch.fx.GraphModule) -> Any:
    """The ShapeEnv Dynamo traced `gm` in (its placeholders' symbols'), or
    None for a graph without symbolic inputs."""
    values = [p.meta.get("example_value") for p in gm.graph.find_nodes(op="placeholder")]
    return next((s.node.shape_env for s in _symbolic_sizes(values)), None)


def guards_on(shape_env: Any) -> tuple[int, int]:
    """How many guards `shape_env` holds and how many it ignored, frozen, as
    Dynamo's is once Dynamo has built its guards: a compile that adds to
    either relies on Dynamo's symbols where no guard checks it."""
    return len(shape_env.guards), shape_env.counter["ignored_backward_guard"]


def fake_inputs_at(gm: torch.fx.GraphModule,
                   args: Sequence[Any]) -> tuple[list[Any], Any] | None:
    """Fake inputs for `gm` shaped as `args`, Dynamo's runtime inputs, and
    their ShapeEnv: a fresh one, with the settings of the ShapeEnv Dynamo
    traced `gm` in. The sizes symbolic in Dynamo's fake inputs (the
    placeholders' example values) are symbolic here too, hinting at `args`'
    sizes, the others static; a symbolic integer input that is a size of a
    tensor input is that size's symbol here too. Symbols come from the
    sources Dynamo gave the placeholders, so they keep their names. None
    where `args` cannot be mirrored so (a symbolic size of 0 or 1, which
    Dynamo's ShapeEnv would have made static, or an input that is neither a
    tensor nor an integer)."""
    from torch._dynamo.source import LocalSource
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import (
        DimDynamic,
        ShapeEnv,
        StatelessSymbolicContext,
    )

    placeholders = gm.graph.find_nodes(op="placeholder")
    example_inputs = [p.meta.get("example_value") for p in placeholders]
    old_env = dynamo_shape_env(gm)
    if old_env is None or len(args) != len(example_inputs):
        return None
    settings = {f.name: getattr(old_env.settings, f.name)
                for f in dataclasses.fields(old_env.settings)}
    shape_env = ShapeEnv(**settings)
    mode = FakeTensorMode(shape_env=shape_env)
    sources = [getattr(p, "_dynamo_source", None) or LocalSource(f"arg{i}")
               for i, p in enumerate(placeholders)]
    symbols: dict[Any, torch.SymInt] = {}  # example_inputs' size symbol -> its fake size
    fakes: list[Any] = [None] * len(args)
    for i, (old, new) in enumerate(zip(example_inputs, args)):
        if isinstance(old, torch.Tensor):
            if not isinstance(new, torch.Tensor) or new.dim() != old.dim():
                return None
            symbolic = [isinstance(s, torch.SymInt) for s in old.shape]
            context = StatelessSymbolicContext(
                dynamic_sizes=[DimDynamic.DUCK if s else DimDynamic.STATIC for s in symbolic],
                constraint_sizes=[None] * old.dim())
            fake = mode.from_tensor(new, source=sources[i], symbolic_context=context)
            for o, n, s in zip(old.shape, fake.shape, symbolic):
                if s and not isinstance(n, torch.SymInt):
                    return None
                if s and o.node.expr.is_Symbol:
                    symbols[o.node.expr] = n
            fakes[i] = fake
    for i, (old, new) in enumerate(zip(example_inputs, args)):
        if isinstance(old, torch.Tensor):
            continue
        if isinstance(old, torch.SymInt) and type(new) is int:
            same = symbols.get(old.node.expr)
            if same is not None and same.node.hint == new:
                fakes[i] = same
            else:
                fakes[i] = shape_env.create_unspecified_symint_and_symbol(
                    new, sources[i], DimDynamic.DYNAMIC)
        elif type(old) is int and old == new:
            fakes[i] = new
        else:
            return None
    return fakes, shape_env


def admitted_by(shape_env: Any, fake_inputs: Sequence[Any]) -> Callable[[Sequence[Any]], bool]:
    """Whether runtime inputs satisfy the guards `shape_env` holds on
    `fake_inputs` (sizes equal where a symbol is shared, each symbol's
    range, the relations tracing and compiling assumed)."""
    code = shape_env.produce_guards_expression(list(fake_inputs))
    if not code:
        return lambda args: True
    return lambda args: bool(shape_env.evaluate_guards_expression(code, args))


@dataclasses.dataclass
class _Plan:
    hints: tuple[int, ...]  # at HintDispatch.dims
    run: Callable[..., Any]
    admits: Callable[[Sequence[Any]], bool]


# A re-plan: Dynamo's runtime inputs -> the variant's compiled function and
# its guards, or None where the graph cannot be planned again.
Replan = Callable[[Sequence[Any]],
                  "tuple[Callable[..., Any], Callable[[Sequence[Any]], bool]] | None"]


class HintDispatch:
    """Runs the calls of a graph compiled with symbolic sizes `dims`
    (symbolic_input_dims) on its plans: `compiled` first, planned at the
    dims' hints, then the variants `replan` makes (at most `limit`), each
    planned at the sizes of the call that was far from every plan. Each call
    runs on the plan nearest to its sizes (the largest ratio of a size to
    its hint, either way) whose guards admit it."""

    def __init__(self, compiled: Callable[..., Any], dims: list[tuple[int, int, str, int]],
                 replan: Replan | None = None, limit: int = 0):
        self.dims = dims
        self.plans = [_Plan(tuple(d[3] for d in dims), compiled, lambda args: True)]
        self.replan = replan
        self.limit = limit
        self.said_far = False
        # What the warning of a far call that is not re-planned advises.
        self.advice = (
            f"the graph has had its {limit} re-plan(s) (replan_far_from_hint={limit}) and "
            "runs on the nearest plan; allow more re-plans, or pad to a few bucket lengths"
            if limit else
            "for lengths this spread, pad to a few bucket lengths and compile with "
            "dynamic=False, or let backend(replan_far_from_hint=N) plan the graph again "
            "at up to N such sizes")

    def __call__(self, *args: Any) -> Any:
        sizes = self._sizes(args)
        plan = self.plans[0] if sizes is None else self._choose(args, sizes)
        return plan.run(*args)

    def _sizes(self, args: Sequence[Any]) -> tuple[int, ...] | None:
        sizes = []
        for i, d, _, _ in self.dims:
            if i >= len(args) or not isinstance(args[i], torch.Tensor) \
                    or args[i].shape[d] <= 0:
                return None
            sizes.append(int(args[i].shape[d]))
        return tuple(sizes)

    def _choose(self, args: Sequence[Any], sizes: tuple[int, ...]) -> _Plan:
        # Ties go to the earlier plan; the first admits every call.
        ranked = sorted(self.plans, key=lambda p: _ratio(sizes, p.hints))
        plan = next(p for p in ranked if p.admits(args))
        if _ratio(sizes, plan.hints) < FAR_FROM_HINT:
            return plan
        return self._far(args, sizes, plan)

    def _far(self, args: Sequence[Any], sizes: tuple[int, ...], plan: _Plan) -> _Plan:
        # The size farthest from the hint of the plan the call would run on.
        k = max(range(len(sizes)), key=lambda k: _ratio(sizes[k:k + 1], plan.hints[k:k + 1]))
        symbol, size, hint = self.dims[k][2], sizes[k], plan.hints[k]
        where = (f"offload_mlir: a graph planned at {symbol}={hint} runs at {symbol}={size}, "
                 f"{max(size / hint, hint / size):.1f}x from its hint")
        made = len(self.plans) - 1
        if self.replan is not None and made < self.limit:
            variant = self.replan(args)
            if variant is None:
                self.replan = None
                self.advice = ("the graph cannot be planned again at these inputs and runs "
                               "on the nearest plan; pad to a few bucket lengths")
                return self._far(args, sizes, plan)
            run, admits = variant
            self.plans.append(_Plan(sizes, run, admits))
            at = ", ".join(f"{name}={s}" for name, s in
                           dict((d[2], s) for d, s in zip(self.dims, sizes)).items())
            warnings.warn(f"{where}: planned it again at {at} (re-plan {made + 1} of "
                          f"replan_far_from_hint={self.limit})",
                          PlanFarFromHintWarning, stacklevel=3)
            return self.plans[-1] if admits(args) else plan
        if not self.said_far:
            self.said_far = True
            warnings.warn(f"{where}, where the plan may expose copies; {self.advice} "
                          "(docs/training-recipes.md#variable-sequence-lengths)",
                          PlanFarFromHintWarning, stacklevel=3)
        return plan


def _ratio(sizes: Sequence[int], hints: Sequence[int]) -> float:
    """How far sizes are from hints: the largest ratio, either way."""
    return max(max(s / h, h / s) for s, h in zip(sizes, hints))
