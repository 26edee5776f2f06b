#!/usr/bin/env python3
"""Compile-time scaling of the offload pipeline on synthetic training steps.

Generates training-step modules in the traced-IR format (docs/architecture.md,
"The contracts"; the same format as `offload_mlir.fx_export` writes) with
about 1k, 10k and 100k ops, runs `offload-opt --offload-activations` on each,
and prints a table of wall-clock times (best of N runs).

Each synthetic "layer" is a residual MLP step over a [tokens, hidden]
activation:

  forward   t = view(W)ᵀ; mm = x @ t; a = mm + b; g = gelu(a); v = view(g);
            x' = x + v                                           (6 ops)
  backward  view(a); gelu_backward; t(x); mm (dW); t(t); mm (dx);
            sum (db); add (residual)                             (8 ops)

Forward saves x, a (activations) and t (a view of the weight) per layer;
backward consumes them in reverse layer order, with the views placed right
before their real consumers. Activations are `tokens * hidden * 2` bytes
(bf16; 8 KiB by default), above the pipeline's default size threshold.

Pure Python 3 standard library; no torch needed.

    python3 python/benchmarks/scaling.py                      # run and time
    python3 python/benchmarks/scaling.py --emit-only /tmp/s   # just write files
    python3 python/benchmarks/scaling.py --sizes 10000,100000 \\
        --pipeline=--offload-activations=plan=hidden \\
        --pipeline='--offload-activations="plan=hidden schedule=true"' \\
        --pipeline=--offload-activations=budget=0.9 --tokens 512 --timeout 60

`--pipeline` may be given several times: each pipeline gets a table of its
own over the same files; it is split like a shell command line. `--tokens`
sets the activation rows (the default 32 makes the weights and their
gradients, live at the end of backward, the peak, so no budget below it can
be met; 512 puts the peak at the start of backward, where offloading lowers
it). `--timeout` stops a run after that
many seconds and reports it as such.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

FWD_OPS_PER_LAYER = 6
BWD_OPS_PER_LAYER = 8
OPS_PER_LAYER = FWD_OPS_PER_LAYER + BWD_OPS_PER_LAYER
SAVED_PER_LAYER = 3


def _ty(shape: tuple[int, ...], elem: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + elem + ">"


def _ints(xs) -> str:
    return "[" + ", ".join(f"{x} : i64" for x in xs) + "]"


class _Fn:
    """Accumulates one function body in the trace-dialect text format."""

    def __init__(self, generic: bool):
        self.generic = generic
        self.lines: list[str] = []
        self.ops = 0

    def op(self, kind: str, result: str, target: str, operands: list[tuple[str, str]],
           args: str, result_type: str, kwargs: str | None = None) -> str:
        attrs = []
        if self.generic:
            attrs.append(f'target = "{target}"')
        attrs.append(f'node = "{result}"')
        attrs.append(f"args = {args}")
        if kwargs:
            attrs.append(f"kwargs = {kwargs}")
        names = ", ".join(f"%{n}" for n, _ in operands)
        types = ", ".join(t for _, t in operands)
        head = f'"trace.{kind}"({names})' if self.generic else f'trace.{kind} "{target}"({names})'
        self.lines.append(
            f"    %{result} = {head} {{{', '.join(attrs)}}} : ({types}) -> {result_type}"
            f' loc("{result}")'
        )
        self.ops += 1
        return result


def generate(layers: int, tokens: int = 32, hidden: int = 128, elem: str = "bf16",
             generic: bool = False) -> tuple[str, dict]:
    """MLIR text of a `layers`-deep synthetic training step, and its stats."""
    act = _ty((tokens, hidden), elem)
    wty = _ty((hidden, hidden), elem)
    bty = _ty((hidden,), elem)
    op0, op1 = "#trace.operand<0>", "#trace.operand<1>"
    gelu_kw = '{approximate = "none"}'

    # ---- forward ----
    fwd = _Fn(generic)
    args = []
    for i in range(layers):
        args.append((f"w{i}", wty))
        args.append((f"b{i}", bty))
    args.append(("x0", act))
    saved: list[tuple[str, str]] = []
    x = "x0"
    for i in range(layers):
        t = fwd.op("view", f"t{i}", "aten.t.default", [(f"w{i}", wty)], f"[{op0}]", wty)
        mm = fwd.op("op", f"mm{i}", "aten.mm.default", [(x, act), (t, wty)],
                    f"[{op0}, {op1}]", act)
        a = fwd.op("op", f"a{i}", "aten.add.Tensor", [(mm, act), (f"b{i}", bty)],
                   f"[{op0}, {op1}]", act)
        g = fwd.op("op", f"gelu{i}", "aten.gelu.default", [(a, act)], f"[{op0}]", act,
                   kwargs=gelu_kw)
        v = fwd.op("view", f"v{i}", "aten.view.default", [(g, act)],
                   f"[{op0}, {_ints((tokens, hidden))}]", act)
        saved += [(x, act), (a, act), (t, wty)]
        x = fwd.op("op", f"x{i + 1}", "aten.add.Tensor", [(x, act), (v, act)],
                   f"[{op0}, {op1}]", act)
    fwd_results = [(x, act)] + saved

    # ---- backward ----
    bwd = _Fn(generic)
    bargs = [(f"s_{n}", ty) for n, ty in saved] + [("tangents_1", act)]
    grads: dict[int, tuple[str, str]] = {}
    g = "tangents_1"
    for i in reversed(range(layers)):
        sx, sa, st = f"s_{saved[3 * i][0]}", f"s_{saved[3 * i + 1][0]}", f"s_{saved[3 * i + 2][0]}"
        av = bwd.op("view", f"av{i}", "aten.view.default", [(sa, act)],
                    f"[{op0}, {_ints((tokens, hidden))}]", act)
        gb = bwd.op("op", f"gelu_bw{i}", "aten.gelu_backward.default", [(g, act), (av, act)],
                    f"[{op0}, {op1}]", act, kwargs=gelu_kw)
        xt = bwd.op("view", f"xt{i}", "aten.t.default", [(sx, act)], f"[{op0}]",
                    _ty((hidden, tokens), elem))
        dw = bwd.op("op", f"dw{i}", "aten.mm.default",
                    [(xt, _ty((hidden, tokens), elem)), (gb, act)], f"[{op0}, {op1}]", wty)
        tt = bwd.op("view", f"tt{i}", "aten.t.default", [(st, wty)], f"[{op0}]", wty)
        dx = bwd.op("op", f"dx{i}", "aten.mm.default", [(gb, act), (tt, wty)],
                    f"[{op0}, {op1}]", act)
        db = bwd.op("op", f"db{i}", "aten.sum.dim_IntList", [(gb, act)],
                    f"[{op0}, [0 : i64], false]", bty)
        g = bwd.op("op", f"g{i}", "aten.add.Tensor", [(g, act), (dx, act)],
                   f"[{op0}, {op1}]", act)
        grads[i] = (dw, db)
    bwd_results = []
    for i in range(layers):
        bwd_results += [(grads[i][0], wty), (grads[i][1], bty)]
    bwd_results.append((g, act))

    def signature(name: str, fargs, results, attrs: str) -> str:
        a = ",\n      ".join(f'%{n}: {t} {{trace.name = "{n}"}} loc("{n}")' for n, t in fargs)
        r = ", ".join(t for _, t in results)
        s = f"  func.func @{name}(\n      {a})\n      -> ({r})"
        if attrs:
            s += f"\n      attributes {{{attrs}}}"
        return s + " {"

    def ret(results) -> str:
        return ("    func.return " + ", ".join(f"%{n}" for n, _ in results) + " : "
                + ", ".join(t for _, t in results))

    total = fwd.ops + bwd.ops
    act_bytes = tokens * hidden * {"bf16": 2, "f16": 2, "f32": 4}.get(elem, 2)
    text = "\n".join([
        f"// Synthetic training step: {layers} layers, {total} ops "
        f"({fwd.ops} forward, {bwd.ops} backward), {len(saved)} saved values, "
        f"activations {_ty((tokens, hidden), elem)} ({act_bytes} bytes).",
        "// Generated by python/benchmarks/scaling.py.",
        "module {",
        signature("forward", args, fwd_results,
                  "offload.backward = @backward, offload.num_outputs = 1 : i64"),
        *fwd.lines,
        ret(fwd_results),
        "  }",
        signature("backward", bargs, bwd_results, ""),
        *bwd.lines,
        ret(bwd_results),
        "  }",
        "}",
        "",
    ])
    stats = {"layers": layers, "ops": total, "forward_ops": fwd.ops, "backward_ops": bwd.ops,
             "saved": len(saved), "activation_bytes": act_bytes, "chars": len(text)}
    return text, stats


def _time_run(cmd: list[str], repeat: int,
              timeout: float | None = None) -> tuple[float, subprocess.CompletedProcess | None]:
    """Best wall-clock time of `repeat` runs and the last run; (timeout, None)
    if a run took longer than `timeout` seconds."""
    best = float("inf")
    proc = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return timeout, None
        dt = time.perf_counter() - t0
        if proc.returncode != 0:
            return dt, proc
        best = min(best, dt)
    return best, proc


def _time_pipeline(opt: str, pipeline: str, files: list, repeat: int,
                   timeout: float | None) -> int:
    """Prints the table of one pipeline over `files`; returns 1 if a run failed."""
    cmd_base = [opt] + shlex.split(pipeline)
    print(f"offload-opt: {opt}   pipeline: {pipeline}   best of {repeat}")
    header = f"{'ops':>8} {'layers':>7} {'saved':>7} {'MB':>6} {'seconds':>9} {'s/1k ops':>9} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    prev = None
    status = 0
    for path, st in files:
        secs, proc = _time_run(cmd_base + [path, "-o", os.devnull], repeat, timeout)
        if proc is None:
            print(f"{st['ops']:>8} {st['layers']:>7} {st['saved']:>7} {st['chars'] / 1e6:>6.1f} "
                  f"{'> ' + format(secs, 'g'):>9} (stopped)")
            prev = None
            continue
        if proc.returncode != 0:
            print(f"{st['ops']:>8} {st['layers']:>7} {st['saved']:>7} FAILED (exit {proc.returncode})")
            sys.stderr.write(proc.stderr[-4000:])
            status = 1
            prev = None
            continue
        ratio = f"{secs / prev:.2f}" if prev else "-"
        print(f"{st['ops']:>8} {st['layers']:>7} {st['saved']:>7} {st['chars'] / 1e6:>6.1f} "
              f"{secs:>9.3f} {secs / st['ops'] * 1000:>9.4f} {ratio:>7}")
        prev = secs
    return status


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--offload-opt", default="./build/bin/offload-opt",
                   help="path of the offload-opt binary (default: %(default)s)")
    p.add_argument("--pipeline", action="append",
                   help="pass options given to offload-opt; repeat for several "
                        "pipelines (default: --offload-activations)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds after which a run is stopped and reported as such")
    p.add_argument("--sizes", default="1000,10000,100000",
                   help="comma-separated target op counts (default: %(default)s)")
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f16", "f32"])
    p.add_argument("--repeat", type=int, default=3, help="runs per size; the best counts")
    p.add_argument("--generic", action="store_true",
                   help="write trace ops in generic form (for mlir-opt "
                        "--allow-unregistered-dialect)")
    p.add_argument("--emit-only", metavar="DIR",
                   help="write the modules into DIR and exit without running anything")
    p.add_argument("--keep", metavar="DIR", help="write the modules into DIR and keep them")
    args = p.parse_args(argv)

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    layer_counts = [max(1, round(n / OPS_PER_LAYER)) for n in sizes]

    if not args.emit_only:
        opt = args.offload_opt
        resolved = shutil.which(opt) if os.sep not in opt else (opt if os.path.isfile(opt) else None)
        if not resolved or not os.access(resolved, os.X_OK):
            print(f"error: offload-opt not found at {opt!r} (build it, or pass --offload-opt)",
                  file=sys.stderr)
            return 2

    out_dir = args.emit_only or args.keep
    tmp = None
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="offload-scaling-")
        out_dir = tmp.name

    files = []
    for target, layers in zip(sizes, layer_counts):
        text, stats = generate(layers, args.tokens, args.hidden, args.dtype, args.generic)
        path = os.path.join(out_dir, f"scaling_{target}.mlir")
        with open(path, "w") as f:
            f.write(text)
        files.append((path, stats))

    if args.emit_only:
        for path, st in files:
            print(f"{path}: {st['ops']} ops ({st['layers']} layers), {st['saved']} saved values, "
                  f"{st['chars'] / 1e6:.1f} MB")
        return 0

    status = 0
    for index, pipeline in enumerate(args.pipeline or ["--offload-activations"]):
        if index:
            print()
        status |= _time_pipeline(resolved, pipeline, files, args.repeat, args.timeout)
    if tmp is not None:
        tmp.cleanup()
    return status


if __name__ == "__main__":
    sys.exit(main())
