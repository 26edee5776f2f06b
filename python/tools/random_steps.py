#!/usr/bin/env python3
"""Random training steps, and a property checker for the offload pipeline.

Generates random but valid training steps in the traced-IR format (the
contract of docs/user-guide.md: `@forward` carries `offload.backward` and
`offload.num_outputs`; its results past the outputs are saved and arrive, in
order and with equal types, as the leading arguments of `@backward`), then
runs `offload-opt --offload-activations` on each under several pipeline
configurations and checks what the passes guarantee:

- offload-opt exits 0 (its output verified), or, for a budget plan, fails
  with exactly the planner's "no plan fits the budget" error, whose smallest
  reachable peak is above the budget; never a crash or an assertion;
- the output parses again and prints back to the same text;
- every `offload.offload_start` / `offload.load_start` is waited exactly
  once, later in the same block; every value is defined before its uses;
  each host-resident backward argument has at most one load, which (or whose
  wait) sits right before the first use of the loaded value;
- no op reads the storage of an offloaded value (the value or any view or
  in-place result of its storage root) after its offload, and the offload
  sits right after the last such read;
- every saved result is offloaded or carries `offload.kept = "..."`; none is
  left `offload.selected`; the report counts the same offloaded values;
- plan=budget: the predicted peak after is at most the budget; and where
  it is met, a looser budget (drawn between it and the peak without offload)
  is met too, with a predicted step no slower (plan monotonicity);
  plan=hidden (synchronous copies): the predicted step time grows by at most
  `max-slowdown` (by default not at all);
- schedule=true: the predicted peak is at most that of the same plan with
  synchronous loads (its synchronous twin: the same passes and options
  without offload-schedule-copies, whose selection must match; with
  release=at-wait, where offload waits hold memory, the twin keeps
  offload-schedule-copies with max-inflight-bytes=1, so offload waits stay
  at their release points and every load starts at its wait), and at most
  the peak without offload wherever that twin's is.

What the design does not promise (a peak after above the peak before for a
plan whose synchronous copies already raise it, as plan=all can) is counted
and printed as information, not failed.

Each generated step mixes matmuls (`aten.mm.default`, shapes that agree, so
the cost model counts FLOPs), elementwise ops, `trace.view` views
(`aten.t.default`, `aten.view.default`), in-place ops with `mutates`,
`scf.for` loops that capture values, dynamic (`?`) dimensions, tensors above
and below `min-bytes`, and producers with `offload.keep`. Saved values are
intermediates, views of intermediates, arguments, views of arguments,
duplicates and forward outputs. Backward consumes them in a random order,
with their views anywhere between the function's start and the consumer.
Everything follows from `--seed`: module `i` of seed `s` is the same on
every run (random.Random seeded with a string; Python may change its
sampling functions between versions, so other versions may draw other
modules).

The configurations (`--configs`): sync (schedule=false); schedule
(schedule=true, the pipeline's default); hidden (plan=hidden schedule=false);
budget and budget+schedule (a budget drawn in [0.5, 1.0] of the peak without
offload, from the sync run's report, as a fraction or in bytes);
budget-reachable and budget-reachable+schedule (a budget drawn between the
peak with everything offloaded and the peak without, where planning has a
choice); min-bytes=0+inflight (min-bytes=0 schedule=true
max-inflight-bytes=16KiB); schedule+at-wait (schedule=true
release=at-wait, the PyTorch bridge's release); hidden+schedule
(plan=hidden schedule=true); bridge (plan=hidden schedule=true
release=at-wait fuse-memory-bound=true, the bridge's default); coalesce
(plan=hidden schedule=true min-bytes=0 coalesce-below=1MiB: small copies
issued at one point move as one transfer); coalesce+at-wait (schedule=true
min-bytes=0 coalesce-below=1MiB release=at-wait, without a plan). offload-opt runs with glibc poisoning freed
memory (`--no-poison` turns it off), so reading freed memory crashes.

Pure Python 3 standard library.

    python3 python/tools/random_steps.py emit --seed 1 --index 3 -o step.mlir
    python3 python/tools/random_steps.py check --count 40 --seed 1 \\
        --offload-opt build/bin/offload-opt
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ELEMENT_BYTES = {"f32": 4, "bf16": 2, "f16": 2}

# --------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------


class Val:
    """A tensor value of the function being generated."""

    __slots__ = ("name", "shape", "kind", "source", "root")

    def __init__(self, name: str, shape: tuple, kind: str, source: "Val | None" = None):
        self.name = name
        self.shape = shape  # ints; None for a dynamic dimension
        self.kind = kind  # "arg", "op" or "view"
        self.source = source  # the viewed value, for views
        self.root = source.root if source is not None else self

    @property
    def static(self) -> bool:
        return all(d is not None for d in self.shape)


class Item:
    """One top-level op (its lines) of a function body."""

    __slots__ = ("lines",)

    def __init__(self, lines: list[str]):
        self.lines = lines


def _ty(shape: tuple, elem: str) -> str:
    return "tensor<" + "".join(("?" if d is None else str(d)) + "x" for d in shape) + elem + ">"


class _Body:
    """Accumulates one function body in the trace-dialect text format."""

    def __init__(self, gen: "_Generator", prefix: str):
        self.gen = gen
        self.prefix = prefix
        self.items: list[Item] = []
        self.ops = 0
        self.args: list[Val] = []

    def name(self, base: str) -> str:
        self.gen.counter += 1
        return f"{self.prefix}{base}{self.gen.counter}"

    def ty(self, v: Val) -> str:
        return _ty(v.shape, self.gen.elem)

    def op_line(self, kind: str, target: str, operands: list[Val], shape: tuple,
                base: str, extra: str = "", indent: str = "    ",
                keep: bool = False, mutates: list[int] | None = None,
                source: Val | None = None) -> tuple[str, Val]:
        name = self.name(base)
        attrs = [f'node = "{name}"']
        args = [f"#trace.operand<{i}>" for i in range(len(operands))]
        if extra:
            args.append(extra)
        attrs.append("args = [" + ", ".join(args) + "]")
        if mutates:
            attrs.append("mutates = array<i64: " + ", ".join(map(str, mutates)) + ">")
        if keep:
            attrs.append("offload.keep")
        result = Val(name, shape, "view" if kind == "view" else "op", source)
        names = ", ".join(f"%{o.name}" for o in operands)
        types = ", ".join(self.ty(o) for o in operands)
        line = (f'{indent}%{name} = trace.{kind} "{target}"({names}) {{{", ".join(attrs)}}}'
                f' : ({types}) -> {self.ty(result)} loc("{name}")')
        return line, result

    def emit(self, kind: str, target: str, operands: list[Val], shape: tuple, base: str,
             **kw) -> Val:
        line, result = self.op_line(kind, target, operands, shape, base, **kw)
        self.items.append(Item([line]))
        self.ops += 1
        return result

    def view_line(self, source: Val, reshape: tuple | None = None) -> tuple[str, Val]:
        """`aten.t` of a 2-D value, or `aten.view` to `reshape`."""
        if reshape is None:
            shape = (source.shape[1], source.shape[0])
            return self.op_line("view", "aten.t.default", [source], shape, "t", source=source)
        extra = "[" + ", ".join(f"{d} : i64" for d in reshape) + "]"
        return self.op_line("view", "aten.view.default", [source], reshape, "view",
                            extra=extra, source=source)

    def loop(self, init: Val, captured: Val, trips: int) -> Val:
        """`scf.for` whose body multiplies the carried value by `captured`."""
        ty = self.ty(init)
        lb, ub, st, iv, acc = (self.name(n) for n in ("lb", "ub", "st", "iv", "acc"))
        body_line, body = self.op_line("op", "aten.mul.Tensor",
                                       [Val(acc, init.shape, "arg"), captured], init.shape,
                                       "loopmul", indent="      ")
        result = Val(self.name("loop"), init.shape, "op")
        lines = [
            f"    %{lb} = arith.constant 0 : index",
            f"    %{ub} = arith.constant {trips} : index",
            f"    %{st} = arith.constant 1 : index",
            f"    %{result.name} = scf.for %{iv} = %{lb} to %{ub} step %{st}"
            f" iter_args(%{acc} = %{init.name}) -> ({ty}) {{",
            body_line,
            f"      scf.yield %{body.name} : {ty}",
            "    }",
        ]
        self.items.append(Item(lines))
        self.ops += 2
        return result


class _Generator:
    def __init__(self, seed: int, index: int):
        self.seed = seed
        self.index = index
        # A string seed is hashed with SHA-512: the same on every platform
        # and Python 3 version.
        self.rng = random.Random(f"offload-random-steps:{seed}:{index}")
        self.counter = 0
        self.features: dict[str, int] = {}

    def note(self, feature: str, n: int = 1):
        self.features[feature] = self.features.get(feature, 0) + n

    # ---- helpers ----
    def pick(self, pool: list[Val], pred=None, recent: float = 0.6) -> Val | None:
        """A value of `pool`, with probability `recent` one of the last few."""
        cands = [v for v in pool if pred is None or pred(v)]
        if not cands:
            return None
        if self.rng.random() < recent:
            return self.rng.choice(cands[-4:])
        return self.rng.choice(cands)

    def bytes_of(self, v: Val) -> int:
        n = ELEMENT_BYTES[self.elem]
        for d in v.shape:
            n *= d or 0
        return n

    def new_arg(self, body: _Body, shape: tuple, base: str) -> Val:
        v = Val(body.name(base), shape, "arg")
        body.args.append(v)
        return v

    def reshape_of(self, v: Val) -> tuple | None:
        """A different static shape with the same number of elements."""
        if not v.static:
            return None
        n = 1
        for d in v.shape:
            n *= d
        options = [(n,)] if len(v.shape) != 1 else []
        for d in self.dims:
            if n % d == 0 and (n // d, d) != tuple(v.shape):
                options.append((n // d, d))
        return self.rng.choice(options) if options else None

    def view_of(self, body: _Body, v: Val) -> tuple[str, Val] | None:
        choices = []
        if len(v.shape) == 2:
            choices.append(None)
        shape = self.reshape_of(v)
        if shape is not None:
            choices.append(shape)
        if not choices:
            return None
        return body.view_line(v, self.rng.choice(choices))

    # ---- forward ----
    def forward_step(self, body: _Body, pool: list[Val]):
        rng = self.rng
        kind = rng.choices(
            ["mm", "unary", "binary", "view", "inplace", "loop"],
            weights=[22, 18, 18, 17, 5, 4])[0]
        keep = rng.random() < 0.05
        if keep:
            self.note("offload.keep")
        if kind == "mm":
            # Rows at most `tokens`, so matmuls do not blow sizes up.
            a = self.pick(pool, lambda v: len(v.shape) == 2 and v.shape[1] is not None
                          and (v.shape[0] is None or v.shape[0] <= self.tokens))
            if a is not None:
                k = a.shape[1]
                b = self.pick(pool, lambda v: len(v.shape) == 2 and v.shape[0] == k
                              and v.shape[1] is not None) if rng.random() < 0.5 else None
                if b is None:
                    n = rng.choice(self.dims)
                    if rng.random() < 0.6:  # a Linear: t(w), w of [out, in]
                        w = self.new_arg(body, (n, k), "w")
                        b = body.emit("view", "aten.t.default", [w], (k, n), "t", source=w)
                        pool.append(b)
                    else:
                        b = self.new_arg(body, (k, n), "w")
                    pool.append(b)
                pool.append(body.emit("op", "aten.mm.default", [a, b],
                                      (a.shape[0], b.shape[1]), "mm", keep=keep))
                self.note("mm")
                return
            kind = "unary"
        if kind == "view":
            v = self.pick(pool)
            made = self.view_of(body, v)
            if made is not None:
                line, view = made
                body.items.append(Item([line]))
                body.ops += 1
                pool.append(view)
                self.note("view of argument" if view.root.kind == "arg" else "view")
                return
            kind = "unary"
        if kind == "inplace":
            a = self.pick(pool)
            if rng.random() < 0.5:
                b = self.pick(pool, lambda v: v.shape == a.shape and v is not a) or a
                pool.append(body.emit("op", "aten.add_.Tensor", [a, b], a.shape, "add_",
                                      mutates=[0], keep=keep))
            else:
                pool.append(body.emit("op", "aten.relu_.default", [a], a.shape, "relu_",
                                      mutates=[0], keep=keep))
            self.note("mutating op")
            return
        if kind == "loop":
            a = self.pick(pool)
            c = self.pick(pool, lambda v: v.shape == a.shape) or a
            pool.append(body.loop(a, c, rng.randint(1, 3)))
            self.note("scf.for")
            return
        if kind == "binary":
            a = self.pick(pool)
            b = self.pick(pool, lambda v: v.shape == a.shape and v is not a)
            if b is None:
                b = self.new_arg(body, a.shape, "x") if rng.random() < 0.3 else a
                if b is not a:
                    pool.append(b)
            target = rng.choice(["aten.add.Tensor", "aten.mul.Tensor"])
            pool.append(body.emit("op", target, [a, b], a.shape, target.split(".")[1],
                                  keep=keep))
            return
        a = self.pick(pool)
        target = rng.choice(["aten.relu.default", "aten.gelu.default", "aten.exp.default"])
        pool.append(body.emit("op", target, [a], a.shape, target.split(".")[1], keep=keep))

    # ---- backward ----
    def place_views(self, body: _Body, chain: list[tuple[str, Val]], items_of: dict):
        """Inserts the view lines of `chain` anywhere after their source and
        before the end of the body (where their consumer goes next)."""
        for line, view in chain:
            parent = items_of.get(view.source.name)
            lo = 0 if parent is None else body.items.index(parent) + 1
            item = Item([line])
            body.items.insert(self.rng.randint(lo, len(body.items)), item)
            body.ops += 1
            items_of[view.name] = item

    def backward_consumer(self, body: _Body, s: Val, grads: list[Val],
                          views_of: dict, items_of: dict, returned: list[Val]):
        rng = self.rng
        x = s
        r = rng.random()
        if r < 0.2 and views_of.get(s.name):
            x = rng.choice(views_of[s.name])  # reuse a view made earlier
            self.note("view reused")
        elif r < 0.55:
            chain = []
            for _ in range(rng.choice([1, 1, 2])):
                made = self.view_of(body, x)
                if made is None:
                    break
                chain.append(made)
                x = made[1]
            self.place_views(body, chain, items_of)
            views_of.setdefault(s.name, []).extend(v for _, v in chain)
            if chain:
                self.note("backward view", len(chain))
        kind = rng.choices(["mul", "mm", "loop", "inplace", "return", "dead view"],
                           weights=[40, 30, 12, 5, 4, 2])[0]
        if kind == "dead view":  # a view nobody reads
            made = self.view_of(body, x)
            if made is not None:
                self.place_views(body, [made], items_of)
                self.note("dead view of a saved value")
                return
            kind = "mul"
        if kind == "mm" and len(x.shape) == 2 and x.static:
            # x @ x^T or x^T @ x, whichever is smaller; the transpose goes
            # anywhere before the matmul.
            line, xt = body.view_line(x)
            self.place_views(body, [(line, xt)], items_of)
            m, k = x.shape
            operands, shape = ([x, xt], (m, m)) if m <= k else ([xt, x], (k, k))
            grads.append(body.emit("op", "aten.mm.default", operands, shape, "mm"))
            return
        if kind == "loop":
            init = self.pick(grads, lambda v: v.shape == x.shape, recent=0.9) or x
            grads.append(body.loop(init, x, rng.randint(1, 3)))
            self.note("saved value read in a loop")
            return
        if kind == "inplace":
            g = self.pick(grads, lambda v: v.shape == x.shape, recent=0.9) or x
            grads.append(body.emit("op", "aten.mul_.Tensor", [x, g], x.shape, "mul_",
                                   mutates=[0]))
            self.note("saved value mutated in backward")
            return
        if kind == "return":
            returned.append(x)
            self.note("saved value returned by backward")
            return
        g = self.pick(grads, lambda v: v.shape == x.shape, recent=0.9) or x
        grads.append(body.emit("op", "aten.mul.Tensor", [g, x], x.shape, "mul"))

    def backward_filler(self, body: _Body, grads: list[Val]):
        rng = self.rng
        a = self.pick(grads, recent=0.9)
        r = rng.random()
        if r < 0.2 and len(a.shape) == 2 and a.static:
            line, at = body.view_line(a)
            body.items.append(Item([line]))
            body.ops += 1
            m, k = a.shape
            operands, shape = ([a, at], (m, m)) if m <= k else ([at, a], (k, k))
            grads.append(body.emit("op", "aten.mm.default", operands, shape, "mm"))
        elif r < 0.28:
            b = self.pick(grads, lambda v: v.shape == a.shape and v is not a, recent=0.9) or a
            grads.append(body.emit("op", "aten.add_.Tensor", [a, b], a.shape, "add_",
                                   mutates=[0]))
            self.note("mutating op")
        elif r < 0.6:
            b = self.pick(grads, lambda v: v.shape == a.shape and v is not a, recent=0.9) or a
            grads.append(body.emit("op", "aten.add.Tensor", [a, b], a.shape, "add"))
        else:
            target = rng.choice(["aten.relu.default", "aten.neg.default",
                                 "aten.sigmoid.default"])
            grads.append(body.emit("op", target, [a], a.shape, target.split(".")[1]))

    # ---- the module ----
    def generate(self) -> tuple[str, dict]:
        rng = self.rng
        self.elem = rng.choice(["f32", "bf16", "f16"])
        # Activations are [tokens, hidden]; weights [hidden, hidden], mostly
        # smaller, so offloading activations can matter.
        self.dims = sorted(rng.sample([2, 8, 16, 32, 64, 128, 256, 512], 4))
        self.tokens = self.dims[-1] * rng.choice([2, 4, 8, 16])
        total = rng.randint(20, 390)
        fwd_target = max(8, int(total * rng.uniform(0.35, 0.6)))

        fwd = _Body(self, "")
        pool: list[Val] = []
        for _ in range(rng.randint(1, 3)):
            pool.append(self.new_arg(fwd, (self.tokens, rng.choice(self.dims)), "in"))
        if rng.random() < 0.3:
            pool.append(self.new_arg(fwd, (None, rng.choice(self.dims)), "dyn"))
            self.note("dynamic dimension")
        if rng.random() < 0.2:  # a small input, below min-bytes
            pool.append(self.new_arg(fwd, (2, rng.choice(self.dims[:2])), "small"))
        while fwd.ops < fwd_target:
            self.forward_step(fwd, pool)

        # Outputs: the last value, and maybe others (views, arguments).
        produced = [v for v in pool if v.kind != "arg"]
        outputs = [produced[-1]]
        for _ in range(rng.randint(0, 2)):
            outputs.append(self.pick(pool))
        # Saved values.
        saved: list[Val] = []
        n_saved = rng.randint(1, max(1, min(48, len(pool) // 2)))
        for _ in range(n_saved):
            cat = rng.choices(["intermediate", "view", "arg", "arg view", "duplicate",
                               "output", "new view"], weights=[10, 3, 2, 1, 1, 1, 2])[0]
            v = None
            if cat == "intermediate":
                if rng.random() < 0.5:  # one of the larger ones
                    ops = sorted((v for v in pool if v.kind == "op"), key=self.bytes_of)
                    v = rng.choice(ops[-max(1, len(ops) // 4):]) if ops else None
                else:
                    v = self.pick(pool, lambda v: v.kind == "op")
            elif cat == "view":
                v = self.pick(pool, lambda v: v.kind == "view" and v.root.kind != "arg")
            elif cat == "arg":
                v = self.pick(pool, lambda v: v.kind == "arg")
            elif cat == "arg view":
                v = self.pick(pool, lambda v: v.kind == "view" and v.root.kind == "arg")
            elif cat == "duplicate" and saved:
                v = rng.choice(saved)
            elif cat == "output":
                v = rng.choice(outputs)
            elif cat == "new view":  # a view made only to be saved
                src = self.pick(pool, lambda v: v.kind == "op")
                made = self.view_of(fwd, src) if src is not None else None
                if made is not None:
                    fwd.items.append(Item([made[0]]))
                    fwd.ops += 1
                    v = made[1]
                    pool.append(v)
            if v is None:
                v = self.pick(pool)
                cat = "any"
            self.note("saved " + cat)
            saved.append(v)

        # Backward: saved values first, then one tangent per output.
        bwd = _Body(self, "b_")
        saved_args = [Val(bwd.name("saved"), v.shape, "arg") for v in saved]
        bwd.args = list(saved_args)
        grads = [self.new_arg(bwd, o.shape, "tangent") for o in outputs]
        bwd_target = max(4, total - fwd.ops)
        order = list(range(len(saved)))
        rng.shuffle(order)
        tasks = []
        for i in order:
            uses = rng.choices([0, 1, 2], weights=[1, 6, 3])[0]
            tasks += [i] * uses
        # Keep the first uses in the shuffled order, spread the second ones.
        rng.shuffle(tasks)
        views_of: dict = {}
        items_of: dict = {}
        returned: list[Val] = []
        p_consume = len(tasks) / max(1, bwd_target)
        while tasks or bwd.ops < bwd_target:
            if tasks and (rng.random() < p_consume or bwd.ops >= bwd_target):
                self.backward_consumer(bwd, saved_args[tasks.pop()], grads, views_of,
                                       items_of, returned)
            else:
                self.backward_filler(bwd, grads)
        results = returned + [g for g in grads if g.kind != "arg"][-rng.randint(1, 3):]
        if not results:
            results = [grads[-1]]

        def signature(name, body, res_types, attrs):
            args = ",\n      ".join(f"%{a.name}: {body.ty(a)} loc(\"{a.name}\")"
                                    for a in body.args)
            s = f"  func.func @{name}(\n      {args})\n      -> ({', '.join(res_types)})"
            if attrs:
                s += f"\n      attributes {{{attrs}}}"
            return s + " {"

        def ret(body, vals):
            return ("    func.return " + ", ".join(f"%{v.name}" for v in vals) + " : "
                    + ", ".join(body.ty(v) for v in vals))

        fwd_results = outputs + saved
        stats = {
            "seed": self.seed, "index": self.index, "ops": fwd.ops + bwd.ops,
            "forward_ops": fwd.ops, "backward_ops": bwd.ops, "outputs": len(outputs),
            "saved": len(saved), "element": self.elem, "features": dict(sorted(self.features.items())),
        }
        lines = [
            f"// Random training step {self.index} of seed {self.seed}: {stats['ops']} ops "
            f"({fwd.ops} forward, {bwd.ops} backward), {len(outputs)} outputs, "
            f"{len(saved)} saved values, element type {self.elem}.",
            "// Generated by python/tools/random_steps.py; regenerate with",
            f"//   python3 python/tools/random_steps.py emit --seed {self.seed} "
            f"--index {self.index}",
            "module {",
            signature("forward", fwd, [fwd.ty(v) for v in fwd_results],
                      f"offload.backward = @backward, offload.num_outputs = {len(outputs)} : i64"),
            *[line for item in fwd.items for line in item.lines],
            ret(fwd, fwd_results),
            "  }",
            signature("backward", bwd, [bwd.ty(v) for v in results], ""),
            *[line for item in bwd.items for line in item.lines],
            ret(bwd, results),
            "  }",
            "}",
            "",
        ]
        return "\n".join(lines), stats


def generate(seed: int, index: int) -> tuple[str, dict]:
    """MLIR text of random training step `index` of `seed`, and its stats."""
    return _Generator(seed, index).generate()


# --------------------------------------------------------------------------
# Reading the printed IR
# --------------------------------------------------------------------------

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_DEF = re.compile(r"(%[\w$.\-]+)(?::\d+)?\s*=(?!=)")
_REF = re.compile(r"%[\w$.\-]+")
# The arguments of a block inside an op's region (`^bb0(%a: tensor<...>)`).
_BLOCK_ARG = re.compile(r"(%[\w$.\-]+)\s*:")
_OPNAME = re.compile(r"^\s*(?:%[\w$.\-]+(?::\d+)?(?:\s*,\s*%[\w$.\-]+(?::\d+)?)*\s*=\s*)?"
                     r"([A-Za-z_][\w.]*)")

COPY_OPS = ("offload.offload_to_cpu", "offload.offload_start", "offload.load_to_gpu",
            "offload.load_start", "offload.wait", "offload.offload_group_start",
            "offload.load_group_start")
GROUP_STARTS = ("offload.offload_group_start", "offload.load_group_start")
_MULTI_DEF = re.compile(r"^\s*(%[\w$.\-]+):(\d+)\s*=")
_WAITED = re.compile(r"offload\.wait (%[\w$.\-]+(?:#\d+)?)")


def futures_of(op: "Op") -> list[str]:
    """The futures a copy start defines, as its waits name them: `%f` for a
    single start, `%f#0`, `%f#1`, ... for a group's."""
    m = _MULTI_DEF.match(op.text)
    if op.name in GROUP_STARTS and m:
        return [f"{m.group(1)}#{i}" for i in range(int(m.group(2)))]
    return op.results[:1]


class Op:
    """A top-level op of a function as printed, with its nested lines."""

    def __init__(self, pos: int, line: int, text: str):
        self.pos = pos  # index among the function's top-level ops
        self.line = line  # first line, in the whole output
        self.text = text  # first line, string literals blanked
        self.name = _OPNAME.match(text).group(1)
        head = text.split("{", 1)[0] if self.name == "scf.for" else text
        self.results = [m.group(1) for m in _DEF.finditer(head)][:1]
        self.defs: set[str] = set(self.results)
        self.uses: list[str] = []  # operands, nested reads of outer values included
        self.lines = [text]

    def finish(self):
        local = set()
        for text in self.lines:
            local.update(m.group(1) for m in _DEF.finditer(text))
            if text.strip().startswith("^"):
                local.update(_BLOCK_ARG.findall(text))
        uses = []
        for text in self.lines:
            body = _DEF.sub(" ", text)
            for ref in _REF.findall(body):
                if ref not in local and ref not in uses:
                    uses.append(ref)
        self.uses = uses
        self.local = local

    def operands(self) -> list[str]:
        """The direct operands of the first line, in order."""
        text = _DEF.sub(" ", self.text, count=1) if self.results else self.text
        text = text.split(":", 1)[0] if self.name not in ("scf.for",) else text
        return _REF.findall(text)


class Func:
    def __init__(self, name: str, line: int, header: str):
        self.name = name
        self.line = line
        self.header = header
        self.ops: list[Op] = []
        self.args: list[tuple[str, str]] = []  # (name, type)
        self.results: list[tuple[str, str]] = []  # (type, attributes)
        self.attrs = ""
        self._parse_header()

    def _parse_header(self):
        h = self.header
        start = h.index("(", h.index("@"))
        end = _matching(h, start)
        for part in _split_top(h[start + 1:end]):
            name, _, rest = part.partition(":")
            self.args.append((name.strip(), _type_and_attrs(rest)[0]))
        rest = h[end + 1:].strip()
        if rest.startswith("->"):
            rest = rest[2:].strip()
            if rest.startswith("("):
                close = _matching(rest, 0)
                parts = _split_top(rest[1:close])
                rest = rest[close + 1:]
            else:
                cut = min(i for i in (rest.find(" attributes"), rest.rfind(" {"), len(rest))
                          if i >= 0)
                parts = [rest[:cut]]
                rest = rest[cut:]
            self.results = [_type_and_attrs(p) for p in parts]
        m = re.search(r"attributes\s*(\{.*\})\s*\{\s*$", rest)
        self.attrs = m.group(1) if m else ""


def _matching(text: str, start: int) -> int:
    pairs = {"(": ")", "<": ">", "{": "}", "[": "]"}
    stack = []
    for i in range(start, len(text)):
        c = text[i]
        if c == ">" and text[i - 1] == "-":
            continue  # the arrow of a function type
        if c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i
    raise ValueError(f"unbalanced: {text[start:start + 80]}")


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for i, c in enumerate(text):
        if c in "(<{[":
            depth += 1
        elif c in ")}]" or (c == ">" and not (i and text[i - 1] == "-")):
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _type_and_attrs(text: str) -> tuple[str, str]:
    text = re.sub(r"\s*loc\(.*\)$", "", text.strip())
    if text.endswith("}"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {"}": 1, "{": -1}.get(text[i], 0)
            if depth == 0:
                return text[:i].strip(), text[i:]
    return text, ""


def parse_module(text: str) -> dict[str, Func]:
    """The functions of a pretty-printed module, with their top-level ops."""
    funcs: dict[str, Func] = {}
    cur: Func | None = None
    op: Op | None = None
    depth = 0  # brace depth inside the current top-level op
    for lineno, raw in enumerate(text.splitlines()):
        blank = _STRING.sub('""', raw)
        stripped = blank.strip()
        if cur is None:
            m = re.match(r"\s*func\.func\s+(?:private\s+)?@([\w$.\-]+)", blank)
            if m and stripped.endswith("{"):
                cur = Func(m.group(1), lineno, blank)
                funcs[cur.name] = cur
            continue
        if op is not None and depth > 0:
            op.lines.append(blank)
            depth += stripped.count("{") - stripped.count("}")
            if depth <= 0:
                op.finish()
                op = None
            continue
        if stripped == "}":
            cur = None
            continue
        if not stripped or stripped.startswith("//"):
            continue
        op = Op(len(cur.ops), lineno, blank)
        cur.ops.append(op)
        if stripped.endswith("{"):
            depth = 1
        else:
            op.finish()
            op = None
    return funcs


# --------------------------------------------------------------------------
# The properties
# --------------------------------------------------------------------------


def is_host(ty: str) -> bool:
    return "#offload.host" in ty


def check_structure(text: str) -> list[str]:
    """Violations of the structural guarantees in a transformed module."""
    problems: list[str] = []
    funcs = parse_module(text)
    fwd = next((f for f in funcs.values() if "offload.backward" in f.attrs), None)
    if fwd is None:
        return ["no function with offload.backward in the output"]
    m = re.search(r"offload\.backward = @([\w$.\-]+)", fwd.attrs)
    bwd = funcs.get(m.group(1)) if m else None
    n_out = int(re.search(r"offload\.num_outputs = (\d+)", fwd.attrs).group(1))
    if bwd is None:
        return ["backward function missing from the output"]

    for f in (fwd, bwd):
        problems += check_function(f)

    # Saved results: offloaded or kept with a reason.
    ret = fwd.ops[-1]
    ret_operands = ret.operands()
    defs = {r: op for op in fwd.ops for r in op.results}
    for i, (ty, attrs) in enumerate(fwd.results):
        if "offload.selected" in attrs:
            problems.append(f"@{fwd.name} result #{i} still carries offload.selected")
        if i < n_out:
            continue
        if is_host(ty):
            src = defs.get(ret_operands[i]) if i < len(ret_operands) else None
            if src is None or src.name not in ("offload.offload_to_cpu", "offload.wait"):
                problems.append(f"@{fwd.name} result #{i} is host resident but not "
                                "returned from an offload")
        elif "offload.kept" not in attrs:
            problems.append(f"@{fwd.name} saved result #{i} is neither offloaded nor "
                            "marked offload.kept")
    # One storage, one copy: a value saved twice (or views sharing a copy)
    # travels as one host value, returned once.
    host_returned = [ret_operands[i] for i, (ty, _) in enumerate(fwd.results)
                     if i >= n_out and i < len(ret_operands) and is_host(ty)]
    for v in sorted({v for v in host_returned if host_returned.count(v) > 1}):
        problems.append(f"@{fwd.name} returns the host value {v} "
                        f"{host_returned.count(v)} times")
    # Saved types arrive unchanged in backward.
    for i, (ty, _) in enumerate(fwd.results[n_out:]):
        if i >= len(bwd.args) or bwd.args[i][1] != ty:
            problems.append(f"saved result #{n_out + i} type {ty} differs from "
                            f"@{bwd.name} argument #{i}")

    problems += check_offload_placement(fwd)
    problems += check_loads(bwd, len(fwd.results) - n_out)
    return problems


def check_function(f: Func) -> list[str]:
    """Definition before use; each future waited exactly once, after its
    start, in the same block."""
    problems = []
    defined_at = {name: -1 for name, _ in f.args}
    for op in f.ops:
        for use in op.uses:
            if use not in defined_at:
                problems.append(f"@{f.name} op #{op.pos} ({op.name}) reads {use} "
                                "before its definition")
        for r in op.results:
            defined_at[r] = op.pos
    waits: dict[str, list[Op]] = {}
    starts = {}
    for op in f.ops:
        if op.name in ("offload.offload_start", "offload.load_start") + GROUP_STARTS:
            for fut in futures_of(op):
                starts[fut] = op
        elif op.name == "offload.wait":
            waits.setdefault(_WAITED.search(op.text).group(1), []).append(op)
        for text in op.lines[1:]:
            if re.search(r"\boffload\.(offload_start|load_start|offload_group_start|"
                         r"load_group_start|wait)\b", text):
                problems.append(f"@{f.name} op #{op.pos}: an async copy or wait "
                                "inside a region")
    for fut, start in starts.items():
        ws = waits.get(fut, [])
        if len(ws) != 1:
            problems.append(f"@{f.name} future {fut} of op #{start.pos} is waited "
                            f"{len(ws)} times")
        for w in ws:
            if w.pos <= start.pos:
                problems.append(f"@{f.name} wait op #{w.pos} precedes its start #{start.pos}")
            user = next((o for o in f.ops if w.results[0] in o.uses), None)
            if user is not None and user.pos <= w.pos:
                problems.append(f"@{f.name} {w.results[0]} is read at op #{user.pos}, "
                                f"not after its wait #{w.pos}")
    for fut in waits:
        if fut not in starts:
            problems.append(f"@{f.name} wait on {fut}, which no start in the function made")
    return problems


_MUTATES = re.compile(r"mutates = array<i64: ([\d, ]+)>")


def in_place_source(op: Op) -> str | None:
    """The operand whose storage an in-place `trace.op` (one with `mutates`)
    returns: the first mutated operand of the result's type, as
    offload::getInPlaceSource decides."""
    m = _MUTATES.search(op.text)
    if op.name != "trace.op" or not m or len(op.results) != 1 or " : (" not in op.text:
        return None
    inputs, _, result = op.text.rsplit(" : (", 1)[1].partition(") -> ")
    in_types = _split_top(inputs)
    operands = op.operands()
    for i in (int(x) for x in m.group(1).split(",")):
        if i < len(operands) and i < len(in_types) and in_types[i] == result.strip():
            return operands[i]
    return None


def check_offload_placement(fwd: Func) -> list[str]:
    """Each offload sits right after the last read of its storage, and
    nothing reads that storage afterwards. Views and in-place results share
    their source's storage."""
    problems = []
    defs = {r: op for op in fwd.ops for r in op.results}
    view_source = {}
    for op in fwd.ops:
        if op.name == "trace.view":
            view_source[op.results[0]] = op.operands()[0]
        elif (source := in_place_source(op)) is not None:
            view_source[op.results[0]] = source

    def root_of(v):
        while v in view_source:
            v = view_source[v]
        return v

    closure_of: dict[str, set] = {}
    for v in list(defs) + [a for a, _ in fwd.args]:
        closure_of.setdefault(root_of(v), set()).add(v)
    offloads = [(op, src) for op in fwd.ops
                if op.name in ("offload.offload_to_cpu", "offload.offload_start",
                               "offload.offload_group_start")
                for src in (op.operands() if op.name in GROUP_STARTS
                            else op.operands()[:1])]
    for op, src in offloads:
        storage = closure_of.get(root_of(src), {src})
        readers = [o for o in fwd.ops if o.name not in COPY_OPS and o.name not in
                   ("return", "func.return") and storage & set(o.uses)]
        late = [o for o in readers if o.pos > op.pos]
        if late:
            problems.append(f"@{fwd.name} offload op #{op.pos} of {src}: its storage is "
                            f"read after it, at op #{late[0].pos} ({late[0].name})")
            continue
        anchor = readers[-1].pos if readers else defs[src].pos if src in defs else -1
        between = [o for o in fwd.ops[anchor + 1:op.pos] if o.name not in COPY_OPS]
        if between:
            problems.append(f"@{fwd.name} offload op #{op.pos} of {src} is not right after "
                            f"the last read of its storage (op #{anchor}): op "
                            f"#{between[0].pos} ({between[0].name}) is in between")
    return problems


def check_loads(bwd: Func, n_saved: int) -> list[str]:
    """At most one load per host-resident saved argument, right before the
    first use of the loaded value (for split loads: the wait)."""
    problems = []
    for i, (arg, ty) in enumerate(bwd.args[:n_saved]):
        if not is_host(ty):
            continue
        loads = [o for o in bwd.ops if arg in o.uses]
        bad = [o for o in loads if o.name not in ("offload.load_to_gpu", "offload.load_start",
                                                  "offload.load_group_start")]
        if bad:
            problems.append(f"@{bwd.name} host argument {arg} is read by op #{bad[0].pos} "
                            f"({bad[0].name})")
        loads = [o for o in loads if o not in bad]
        if len(loads) > 1:
            problems.append(f"@{bwd.name} host argument {arg} is loaded {len(loads)} times")
        if not loads:
            continue
        load = loads[0]
        value_op = load
        if load.name in ("offload.load_start", "offload.load_group_start"):
            fut = futures_of(load)[load.operands().index(arg)]
            value_op = next((o for o in bwd.ops if o.name == "offload.wait"
                             and _WAITED.search(o.text).group(1) == fut), None)
            if value_op is None:
                continue  # reported by check_function
        value = value_op.results[0]
        users = [o for o in bwd.ops if value in o.uses]
        if not users:
            problems.append(f"@{bwd.name} the load of {arg} (op #{value_op.pos}) is never read")
            continue
        first = users[0]
        between = [o for o in bwd.ops[value_op.pos + 1:first.pos] if o.name not in COPY_OPS]
        if between:
            problems.append(f"@{bwd.name} the load of {arg} (op #{value_op.pos}) is not right "
                            f"before its first use, op #{first.pos} ({first.name})")
    return problems


# --------------------------------------------------------------------------
# The checker
# --------------------------------------------------------------------------

CRASH_MARKERS = ("PLEASE submit a bug report", "Stack dump", "Assertion", "LLVM ERROR",
                 "UNREACHABLE", "Segmentation fault")
# Sizes as offload_support::formatByteSize prints them ("512 B", "2.05 GiB").
_SIZE = r"[\d.]+ (?:[KMGTPE]i)?B"
BUDGET_ERROR = re.compile(
    rf"error: no plan fits the budget of {_SIZE} \((\d+) bytes\): the "
    rf"smallest predicted peak is {_SIZE} \((\d+) bytes\); without offload it is "
    rf"{_SIZE} \((\d+) bytes\)")
# plan=hidden: the planner's default max-slowdown (0) plus max-recompute
# (0.01), against the step as it came.
MAX_SLOWDOWN = 0.0 + 0.01

# Where each option of --offload-activations goes in the explicit pipeline.
_FIND_OPTIONS = {"min-bytes"}
_PLAN_OPTIONS = {"plan", "budget", "max-slowdown", "schedule", "max-inflight-bytes",
                 "coalesce-below"}
_MODEL_OPTIONS = {"device-profile", "release", "fuse-memory-bound", "reuse-freed-buffers"}


def sync_twin_pipeline(options: str) -> str:
    """The pass pipeline `--offload-activations=<options>` runs, with a JSON
    report and without hoisting loads: the same plan (the planner still
    predicts with the options' `schedule`) with every load started at its
    wait. That is the pipeline without offload-schedule-copies (every copy
    synchronous), except with release=at-wait, where an offload's wait
    holds its memory: there offload-schedule-copies stays, with
    max-inflight-bytes=1, so offload waits sit where the scheduled run puts
    them. Raises ValueError for an option it does not place."""
    opts = dict(tok.split("=", 1) for tok in options.split())
    # The pipeline's defaults (PassOptionValues.h) where `options` names none;
    # offload-plan turns plan=all into a budget plan when given a budget.
    opts.setdefault("min-bytes", str(1 << 20))
    if "budget" not in opts:
        opts.setdefault("plan", "hidden")
    unknown = set(opts) - _FIND_OPTIONS - _PLAN_OPTIONS - _MODEL_OPTIONS
    if unknown:
        raise ValueError(f"sync_twin_pipeline: unplaced option(s) {sorted(unknown)}")

    def with_options(name: str, keys: set, extra: tuple = ()) -> str:
        chosen = [f"{k}={v}" for k, v in opts.items() if k in keys] + list(extra)
        return f"{name}{{{' '.join(chosen)}}}" if chosen else name

    passes = [with_options("offload-find-saved-activations", _FIND_OPTIONS)]
    if opts.get("plan", "all") != "all" or "budget" in opts:
        passes.append(with_options("offload-plan", _PLAN_OPTIONS | _MODEL_OPTIONS))
    passes += ["offload-insert-offloads", "offload-reorder-backward", "offload-insert-loads"]
    if opts.get("release") == "at-wait":
        # use-recorded=false: the planner's placements (it planned with
        # the options' schedule) would hoist the loads.
        passes.append(with_options("offload-schedule-copies", _MODEL_OPTIONS,
                                   ("max-inflight-bytes=1", "use-recorded=false")))
    # output=-: the report on stdout (the IR goes to -o), not stderr.
    passes.append(with_options("offload-report", _MODEL_OPTIONS, ("format=json", "output=-")))
    return "builtin.module(" + ",".join(passes) + ")"


class Config:
    """One set of pipeline options.

    `budget`: None, or "fraction" (a budget drawn in [0.5, 1.0] of the peak
    without offload, which is often out of reach), or "reachable" (drawn
    between the peak the configuration `floor` predicts with everything
    offloaded and the peak without offload, which is mostly reachable).
    """

    def __init__(self, name: str, options: str, budget: str | None = None,
                 floor: str | None = None, hidden: bool = False):
        self.name = name
        self.options = options
        self.budget = budget
        self.floor = floor
        self.hidden = hidden
        self.schedule = "schedule=false" not in options


CONFIGS = [
    # Every configuration names `plan` (plan=all with a budget plans to it),
    # `min-bytes` and `schedule`, rather than take the pipeline's defaults.
    Config("sync", "plan=all min-bytes=1024 schedule=false"),
    Config("schedule", "plan=all min-bytes=1024 schedule=true"),
    Config("hidden", "min-bytes=1024 plan=hidden schedule=false", hidden=True),
    Config("budget", "plan=all min-bytes=1024 schedule=false", budget="fraction"),
    Config("budget+schedule", "plan=all min-bytes=1024 schedule=true", budget="fraction"),
    Config("budget-reachable", "plan=all min-bytes=1024 schedule=false", budget="reachable",
           floor="sync"),
    Config("budget-reachable+schedule", "plan=all min-bytes=1024 schedule=true", budget="reachable",
           floor="schedule"),
    Config("min-bytes=0+inflight",
           "plan=all min-bytes=0 schedule=true max-inflight-bytes=16KiB"),
    Config("schedule+at-wait", "plan=all min-bytes=1024 schedule=true release=at-wait"),
    Config("hidden+schedule", "min-bytes=1024 plan=hidden schedule=true", hidden=True),
    # What the PyTorch bridge runs by default.
    Config("bridge", "min-bytes=1024 plan=hidden schedule=true release=at-wait "
           "fuse-memory-bound=true", hidden=True),
    # The same, with the buffers the code generator keeps for reuse held.
    Config("bridge+reuse", "min-bytes=1024 plan=hidden schedule=true release=at-wait "
           "fuse-memory-bound=true reuse-freed-buffers=true", hidden=True),
    # Small copies issued at one point move as one transfer.
    Config("coalesce", "plan=hidden schedule=true min-bytes=0 coalesce-below=1MiB",
           hidden=True),
    Config("coalesce+at-wait", "plan=all schedule=true min-bytes=0 coalesce-below=1MiB "
           "release=at-wait"),
]


class Outcome:
    def __init__(self, index: int, stats: dict):
        self.index = index
        self.stats = stats
        self.violations: list[tuple[str, str]] = []  # (config, message)
        self.info: list[tuple[str, str]] = []
        self.per_config: dict[str, dict] = {}


# glibc: no per-thread cache, and freed memory overwritten, so a read of
# freed memory crashes instead of passing by luck (ignored elsewhere).
POISON_ENV = {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0", "MALLOC_PERTURB_": "165"}
RUN_ENV: dict | None = None


def _run(cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout, env=RUN_ENV)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(cmd, -999, e.stdout or "", "timed out")


def _crash(proc: subprocess.CompletedProcess) -> str:
    if proc.returncode == -999:
        return "timed out"
    if proc.returncode < 0:
        return f"killed by signal {-proc.returncode}"
    for marker in CRASH_MARKERS:
        if marker in proc.stderr:
            return f"crash: {marker!r} in stderr"
    return ""


def check_module(opt: str, seed: int, index: int, work: str, failures: str | None,
                 configs: list[Config]) -> Outcome:
    text, stats = generate(seed, index)
    out = Outcome(index, stats)
    src = os.path.join(work, f"step_{seed}_{index}.mlir")
    with open(src, "w") as f:
        f.write(text)
    rng = random.Random(f"offload-random-steps-budget:{seed}:{index}")
    # Its own stream, so the budgets drawn above stay those of earlier versions.
    looser = random.Random(f"offload-random-steps-looser:{seed}:{index}")
    peak_before = None
    peaks_without_offload: dict[bool, int] = {}  # per fuse-memory-bound
    outputs = []  # transformed modules, for the round trip
    commands = {}
    for config in configs:
        options = config.options
        budget_text = limit = None
        if config.budget:
            if peak_before is None:
                out.violations.append((config.name, "no peak before from an earlier run"))
                continue
            if config.budget == "fraction":
                fraction = rng.uniform(0.5, 1.0)
            else:
                floor = out.per_config.get(config.floor, {}).get("after")
                if floor is None or floor >= peak_before:
                    out.per_config[config.name] = {"skipped": True}
                    continue
                fraction = (floor + rng.random() * (peak_before - floor)) / peak_before
            if rng.random() < 0.5:
                budget_text = f"{fraction:.4f}"
                limit = int(float(budget_text) * peak_before)
            else:
                limit = int(fraction * peak_before)
                budget_text = str(limit)
            options = (options + f" budget={budget_text}").strip()
        res = os.path.join(work, f"step_{seed}_{index}.{config.name}.mlir")
        pipeline = ("report=json report-file=- " + options).strip()
        cmd = [opt, src, f"--offload-activations={pipeline}",
               "--mlir-print-op-on-diagnostic=false", "-o", res]
        commands[config.name] = cmd
        proc = _run(cmd)
        record = {"ran": True}
        out.per_config[config.name] = record
        bad = out.violations.__len__()

        def violate(msg):
            out.violations.append((config.name, msg))

        crash = _crash(proc)
        if crash:
            violate(crash + "\n" + proc.stderr[-3000:])
            continue
        if proc.returncode != 0:
            m = BUDGET_ERROR.search(proc.stderr)
            errors = proc.stderr.count("error:")
            if not config.budget or not m or errors != 1:
                violate(f"offload-opt failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
                continue
            used, reachable, without = map(int, m.groups())
            record["no fit"] = True
            if used != limit:
                violate(f"budget {budget_text}: the planner used {used} bytes, expected {limit}")
            if reachable <= used:
                violate(f"'no plan fits' but the smallest predicted peak {reachable} is "
                        f"within the budget {used}")
            if reachable > without:
                violate(f"smallest reachable peak {reachable} is above the peak without "
                        f"offload {without}")
            if without != peak_before:
                violate(f"planner's peak without offload {without} differs from the "
                        f"report's {peak_before}")
            continue
        try:
            report = json.loads(proc.stdout)
            step = report["steps"][0]
            pred = step["predicted"]
        except (ValueError, KeyError, IndexError) as e:
            violate(f"cannot read the JSON report ({e}):\n{proc.stdout[:2000]}")
            continue
        with open(res) as f:
            result = f.read()
        outputs.append((config.name, result))
        for msg in check_structure(result):
            violate(msg)
        # Where the plan recomputes, the report's "without offload" is the
        # step with the recomputation; the step as it came is in `planned`.
        unplanned = step.get("planned") or {}
        before = unplanned.get("unplanned_peak_bytes", pred["peak_bytes_before"])
        step_before = unplanned.get("unplanned_step_seconds", pred["step_seconds_before"])
        after = pred["peak_bytes_after"]
        record.update(before=before, after=after, offloaded=step["offloaded_values"],
                      saved=len(step["saved"]))
        if peak_before is None:
            peak_before = before
        # The same step without offload: options must not change it, except
        # the model of what runs it (fused memory-bound ops keep fewer
        # values in memory). Buffers held for reuse never raise it: the code
        # generator holds one only where that keeps its peak.
        fused = "fuse-memory-bound=true" in config.options
        same_model = peaks_without_offload.setdefault(fused, before)
        if before != same_model:
            violate(f"predicted peak without offload {before} differs from {same_model} "
                    "of the first configuration with the same model")
        host = sum(1 for e in step["saved"] if e["offloaded"])
        if host != step["offloaded_values"]:
            violate("report's offloaded_values disagrees with its entries")
        n_host = len(re.findall(r"offload\.(?:offload_to_cpu|offload_start|"
                                r"offload_group_start) ", result))
        if (host == 0) != (n_host == 0):
            violate(f"report says {host} offloaded values, the IR has {n_host} offloads")
        if config.budget and after > limit:
            violate(f"budget {budget_text} ({limit} bytes): predicted peak after {after} "
                    "exceeds it")
        planned = step.get("planned")
        if (config.budget or config.hidden) and planned is None:
            violate("offload-plan ran but the IR carries no offload.planned")
        if planned is not None:
            # The planner's prediction for the plan it chose, and the
            # report's for the IR the passes emitted from it: one plan.
            record["planned checked"] = True
            if planned["peak_bytes"] != after or abs(
                    planned["step_seconds"] - pred["step_seconds_after"]) > \
                    1e-9 * max(1e-6, pred["step_seconds_after"]):
                violate(f"offload-plan predicted peak {planned['peak_bytes']} and step "
                        f"{planned['step_seconds']:.12g} s for its plan; the report of the "
                        f"emitted IR predicts {after} and {pred['step_seconds_after']:.12g} s")
        if config.schedule:
            check_sync_twin(opt, src, options, step, record, violate)
        if config.budget:
            check_looser_budget(opt, src, config.options, limit, peak_before, pred,
                                looser, record, violate)
        if config.hidden and not config.schedule:
            grown = pred["step_seconds_after"] - step_before * (1 + MAX_SLOWDOWN)
            if grown > 1e-12 * max(1.0, step_before):
                violate(f"plan=hidden: predicted step {pred['step_seconds_after']:.9g} s is more "
                        f"than {MAX_SLOWDOWN:.0%} above {step_before:.9g} s")
        if after > before:
            record["peak grew"] = True
        if len(out.violations) > bad:
            record["failed"] = True

    # Round trip: all outputs at once, split.
    if outputs:
        joined = os.path.join(work, f"step_{seed}_{index}.all.mlir")
        with open(joined, "w") as f:
            f.write("\n// -----\n".join(r for _, r in outputs))
        proc = _run([opt, joined, "--split-input-file", "--mlir-print-op-on-diagnostic=false"])
        if proc.returncode != 0 or _crash(proc):
            out.violations.append(("round trip", f"the output does not parse again "
                                                 f"(exit {proc.returncode}):\n{proc.stderr[-3000:]}"))
        else:
            again = proc.stdout.split("// -----\n")
            for (name, first), second in zip(outputs, again):
                if first.strip() != second.strip():
                    out.violations.append((name, "the output prints differently after a "
                                                 "round trip"))
    if out.violations and failures:
        os.makedirs(failures, exist_ok=True)
        keep = os.path.join(failures, f"step_{seed}_{index}.mlir")
        shutil.copyfile(src, keep)
        with open(keep + ".txt", "w") as f:
            for name, msg in out.violations:
                cmd = commands.get(name)
                f.write(f"[{name}] {msg}\n")
                if cmd:
                    env = ("env " + " ".join(f"{k}={v}" for k, v in POISON_ENV.items()) + " "
                           if RUN_ENV is not None else "")
                    f.write("  reproduce: " + env + shlex.join(
                        keep if c == src else c for c in cmd[:-2]) + " -o -\n")
        out.stats["saved_to"] = keep
    return out


def check_looser_budget(opt: str, src: str, options: str, limit: int, peak_before: int,
                        pred: dict, rng: random.Random, record: dict, violate) -> None:
    """Plan monotonicity: the same options with a budget drawn between
    `limit` (met, with the prediction `pred`) and the peak without offload
    must fit too, and predict a step no slower than `pred`'s (the plan for
    `limit` fits it, so a slower plan would not cost what it must)."""
    looser = limit + 1 + int(rng.random() * max(0, peak_before - limit))
    cmd = [opt, src, f"--offload-activations=report=json report-file=- {options} budget={looser}".strip(),
           "--mlir-print-op-on-diagnostic=false", "-o", os.devnull]
    proc = _run(cmd)
    crash = _crash(proc)
    if crash or proc.returncode != 0:
        violate(f"budget {looser} (looser than the met {limit}): offload-opt failed "
                f"(exit {proc.returncode}): {crash}\n{proc.stderr[-3000:]}")
        return
    try:
        other = json.loads(proc.stdout)["steps"][0]["predicted"]
    except (ValueError, KeyError, IndexError) as e:
        violate(f"budget {looser}: cannot read the JSON report ({e})")
        return
    record["looser"] = looser
    if other["peak_bytes_after"] > looser:
        violate(f"budget {looser}: predicted peak after {other['peak_bytes_after']} exceeds it")
    tight, loose = pred["step_seconds_after"], other["step_seconds_after"]
    if loose > tight * (1 + 1e-9):
        violate(f"plan monotonicity: budget {looser} predicts a step of {loose:.9g} s, "
                f"slower than {tight:.9g} s for the tighter budget {limit}")


def check_sync_twin(opt: str, src: str, options: str, step: dict, record: dict,
                    violate) -> None:
    """schedule=true: the predicted peak of `step` (the report of the
    scheduled run) is at most that of its synchronous twin, and at most the
    peak without offload wherever the twin's is."""
    cmd = [opt, src, "--pass-pipeline=" + sync_twin_pipeline(options),
           "--mlir-print-op-on-diagnostic=false", "-o", os.devnull]
    proc = _run(cmd)
    if _crash(proc) or proc.returncode != 0:
        violate(f"the synchronous twin failed (exit {proc.returncode}): "
                f"{shlex.join(cmd)}\n{proc.stderr[-3000:]}")
        return
    try:
        twin = json.loads(proc.stdout)["steps"][0]
        sync_after = twin["predicted"]["peak_bytes_after"]
    except (ValueError, KeyError, IndexError) as e:
        violate(f"cannot read the synchronous twin's JSON report ({e})")
        return
    if [e["offloaded"] for e in twin["saved"]] != [e["offloaded"] for e in step["saved"]]:
        violate("the synchronous twin offloads other saved values than the scheduled run")
        return
    pred = step["predicted"]
    after, before = pred["peak_bytes_after"], pred["peak_bytes_before"]
    record["sync checked"] = True
    if after > sync_after:
        violate(f"schedule=true: predicted peak {after} is above {sync_after}, the peak of "
                "the same plan with synchronous loads")
    if sync_after <= before < after:
        violate(f"schedule=true: predicted peak {after} is above {before}, the peak without "
                "offload, which the same plan with synchronous loads keeps to")
    if sync_after > before:
        record["sync above none"] = True


def resolve_tool(opt: str) -> str | None:
    path = shutil.which(opt) if os.sep not in opt else (opt if os.path.isfile(opt) else None)
    return path if path and os.access(path, os.X_OK) else None


def cmd_check(args) -> int:
    opt = resolve_tool(args.offload_opt)
    if not opt:
        print(f"error: offload-opt not found at {args.offload_opt!r} (build it, or pass "
              "--offload-opt)", file=sys.stderr)
        return 2
    configs = CONFIGS
    if args.configs:
        wanted = set(args.configs.split(","))
        unknown = wanted - {c.name for c in CONFIGS}
        if unknown:
            print(f"error: unknown configuration(s) {', '.join(sorted(unknown))}",
                  file=sys.stderr)
            return 2
        # Budgets are drawn from the peaks earlier configurations predict.
        for c in CONFIGS:
            if c.name in wanted and c.budget:
                wanted.add(CONFIGS[0].name)
                if c.floor:
                    wanted.add(c.floor)
        configs = [c for c in CONFIGS if c.name in wanted]
    global RUN_ENV
    RUN_ENV = None if args.no_poison else {**os.environ, **POISON_ENV}
    indices = [args.index] if args.index is not None else list(range(args.count))
    with tempfile.TemporaryDirectory(prefix="offload-random-steps-") as work:
        jobs = max(1, args.jobs)
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            outcomes = list(pool.map(
                lambda i: check_module(opt, args.seed, i, work, args.failures_dir, configs),
                indices))
    total_ops = sum(o.stats["ops"] for o in outcomes)
    features: dict[str, int] = {}
    for o in outcomes:
        for k, v in o.stats["features"].items():
            features[k] = features.get(k, 0) + v
    if args.verbose:
        for o in outcomes:
            s = o.stats
            print(f"module {o.index}: {s['ops']} ops, {s['saved']} saved, {s['element']}")
            for name, rec in o.per_config.items():
                print(f"  {name}: {rec}")
        print("features: " + ", ".join(f"{k} {v}" for k, v in sorted(features.items())))
    violations = 0
    for config in configs:
        recs = [o.per_config.get(config.name, {}) for o in outcomes]
        bad = sum(1 for o in outcomes for c, _ in o.violations if c == config.name)
        ok = sum(1 for r in recs if r.get("ran") and "failed" not in r and "no fit" not in r)
        line = (f"config {config.name}: {len(outcomes)} modules, {ok} transformed, "
                f"{bad} violations")
        offloaded = sum(r.get("offloaded", 0) for r in recs)
        saved = sum(r.get("saved", 0) for r in recs)
        line += f"; offloaded {offloaded} of {saved} saved values"
        if config.budget:
            line += f"; {sum(1 for r in recs if r.get('no fit'))} budgets out of reach"
            skipped = sum(1 for r in recs if r.get("skipped"))
            if skipped:
                line += f", {skipped} skipped (offloading lowers no peak)"
            line += (f"; a looser budget checked in "
                     f"{sum(1 for r in recs if 'looser' in r)}")
        if config.schedule:
            line += (f"; peak checked against the synchronous plan in "
                     f"{sum(1 for r in recs if r.get('sync checked'))}")
        if config.budget or config.hidden:
            line += (f"; the planner's prediction equals the report's in "
                     f"{sum(1 for r in recs if r.get('planned checked'))}")
        grew = sum(1 for r in recs if r.get("peak grew"))
        if grew:
            line += f"; info: predicted peak grew in {grew}"
        above = sum(1 for r in recs if r.get("sync above none"))
        if above:
            line += f", the synchronous plan's too in {above}"
        print(line)
    bad_rt = sum(1 for o in outcomes for c, _ in o.violations if c == "round trip")
    for o in outcomes:
        for name, msg in o.info:
            print(f"info: seed {args.seed} module {o.index} [{name}]: {msg}")
        for name, msg in o.violations:
            violations += 1
            where = o.stats.get("saved_to", f"seed {args.seed} index {o.index}")
            print(f"VIOLATION: module {o.index} ({where}) [{name}]: {msg}", file=sys.stderr)
    print(f"random-steps: seed {args.seed}, {len(outcomes)} modules ({total_ops} ops), "
          f"{len(configs)} configurations, {len(outcomes) * len(configs)} runs, "
          f"{bad_rt} round-trip failures, {violations} violations")
    return 1 if violations else 0


def cmd_emit(args) -> int:
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
        for i in range(args.count):
            text, stats = generate(args.seed, i)
            path = os.path.join(args.out_dir, f"step_{args.seed}_{i}.mlir")
            with open(path, "w") as f:
                f.write(text)
            print(f"{path}: {stats['ops']} ops, {stats['saved']} saved values")
        return 0
    text, _ = generate(args.seed, args.index or 0)
    if args.output and args.output != "-":
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("emit", help="write generated modules")
    e.add_argument("--seed", type=int, default=1)
    e.add_argument("--index", type=int, help="which module of the seed (default 0)")
    e.add_argument("-o", "--output", help="file for one module (default: stdout)")
    e.add_argument("--count", type=int, default=1)
    e.add_argument("--out-dir", help="write modules 0..count-1 into this folder")
    c = sub.add_parser("check", help="run the pipeline on generated modules and check it")
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--count", type=int, default=40)
    c.add_argument("--index", type=int, help="check only this module of the seed")
    c.add_argument("--offload-opt", default="./build/bin/offload-opt")
    c.add_argument("--configs", help="comma-separated configuration names (default: all: "
                   + ", ".join(x.name for x in CONFIGS) + ")")
    c.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    c.add_argument("--failures-dir", default="random-steps-failures",
                   help="where failing modules and their reports go (default: %(default)s)")
    c.add_argument("--no-poison", action="store_true",
                   help="run offload-opt without poisoning freed memory")
    c.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    return cmd_emit(args) if args.command == "emit" else cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
