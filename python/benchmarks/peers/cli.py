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
                           through it, `checkpoint=sac` sac-compile's;
                           `per-layer=1` compiles each decoder layer on its
                           own, as compile:per-layer=1, with each layer's first
                           loads started during the backward of the layer
                           after it (backend(prefetch=True); `across=0`: each
                           layer planned alone); `donate=1` lets graph
                           inputs that are activations be offloaded
                           (backend(donate_activations=True)); `instances=N`
                           plans the layer graph as N layers holding its saved
                           values together (backend(saved_instances=N))
    compile:amb=X          torch.compile with that recompute budget alone (also
                           checkpoint-compile:amb=X, sac-compile:amb=X)
    compile:per-layer=1    each decoder layer compiled on its own (as torchtitan
                           does), embedding, norm, head and loss eager
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

A ratio from one pair of processes moves by a few percent between runs
(docs/benchmarks/peers/README.md). `--repeat N` runs
the whole row list N times in turn, each round compared within itself, and
the table adds each row's ratio to its baseline per round: median, min, max.

`--paired A,B` times two compiled rows in one process instead: both models
(the same weights) compiled, then their steps interleaved A B B A A B ...,
so drift and periodic slow phases of the machine fall on both alike. It
gives the ratio of each B step to the A steps next to it (median, quartiles,
and the ratio of the medians) and each row's step times; no peak memory
(both models are resident), no profile. On CUDA it also gives, per stretch
(forward, backward), the compute stream's device time from CUDA events and
the host's time. One process's median still moves by about half a percent;
with `--repeat N` the pairs run in
N processes, and the table gives each process's median and all the pairs
pooled.

Writes `<out>.json` (every figure, rewritten after each row so a cut-off run
keeps what finished), `<out>.md` (the table) and `<out>.png` (peak memory
against step time, a point for every measured row and in its key the rows
that failed, with why; needs matplotlib, else `--plot-from` draws it later).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from .rows import CONFIGS, DEFAULT_ROWS, GiB, MODEL_DEFAULTS, ROW_SETS, expand_rows, parse_row
from .runner import _child_env, _machine, child_args, paired_rows, pool_paired, run_paired, run_row
from .tables import _failure_reason, _write, compare_all, paired_table, plot, table


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.peers",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="bf16x8", choices=sorted(CONFIGS),
                   help="the model: bf16x8 (8 bf16 layers), fp32x9 (9 fp32 layers), tiny "
                        "(a CPU-sized toy); default: %(default)s")
    for key in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "batch", "seq"):
        p.add_argument("--" + key.replace("_", "-"), type=int, default=None,
                       help="override the configuration's value")
    p.add_argument("--dtype", choices=["bf16", "f32"], default=None,
                   help="override the configuration's dtype")
    p.add_argument("--optimizer", choices=["none", "adamw"], default="none",
                   help="adamw: an AdamW step after backward (default: %(default)s)")
    p.add_argument("--rows", default=DEFAULT_ROWS,
                   help="comma-separated rows (the list above), and names of row sets: "
                        + ", ".join(ROW_SETS) + "; default: " + DEFAULT_ROWS)
    p.add_argument("--steps", type=int, default=5, help="timed steps (after warm-up)")
    p.add_argument("--warmup", type=int, default=3,
                   help="untimed steps first (default: %(default)s)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu runs the rows that need no GPU (default: %(default)s)")
    p.add_argument("--no-deterministic", dest="deterministic", action="store_false",
                   help="leave torch.use_deterministic_algorithms off")
    p.add_argument("--no-profile", action="store_true",
                   help="skip the profiled step (no copy bytes or exposed copy time)")
    p.add_argument("--row-timeout-s", type=float, default=600,
                   help="give up on a row's process after this many seconds "
                        "(default: %(default)s)")
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
            # costs a pair resolves (docs/benchmarks/peers/README.md).
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
