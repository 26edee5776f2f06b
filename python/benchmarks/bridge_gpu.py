"""Train a Llama-style model through `offload_mlir.backend()` on a GPU and
compare it with plain `torch.compile` (Inductor) in the same run.

One process per configuration (so each peak is its own), all from the same
seed and data. Each trains `--steps` steps (forward, cross-entropy,
backward, AdamW) and records the median step time after `--warmup` steps,
`torch.cuda.max_memory_allocated` over the timed steps, the runtime's
statistics and the gradients of the last step. The parent compares every
configuration's loss and gradients with the baseline's, bit for bit, and
writes a JSON file and a markdown table.

    python python/benchmarks/bridge_gpu.py --out docs/benchmarks/bridge-h100 \\
        --configs inductor,hidden,budget=0.75

Configurations: `inductor` (plain torch.compile), `hidden` (the bridge's
default plan), `all`, `budget=<fraction or size>`, and `aot_eager` /
`offload-aot_eager` (the bridge with no code generation). The sanitizer run
is python/benchmarks/csan_plan.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_PYTHON = os.path.dirname(_HERE)


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=14336)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=3)


def run_one(args: argparse.Namespace) -> dict:
    import torch

    sys.path.insert(0, _PYTHON)
    import offload_mlir
    from offload_mlir import models

    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    cfg = models.LlamaConfig(hidden=args.hidden, heads=args.heads, kv_heads=args.kv_heads,
                             ffn=args.ffn)
    torch.manual_seed(0)
    model = models.LlamaLM(cfg, args.layers, args.seq, args.vocab, device="cuda", dtype=dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    config = args.config
    # `<config>+measured`: plan with the device profile fitted to H100
    # measurements (docs/profiles/h100-measured.json) instead of the default.
    # `<config>+calibrated`: plan with $BENCH_CALIBRATED_PROFILE, the profile
    # `python -m offload_mlir.calibrate` wrote on this machine.
    profiles = {
        "+measured": lambda: os.path.join(os.path.dirname(_PYTHON), "docs", "profiles",
                                          "h100-measured.json"),
        "+calibrated": lambda: os.environ["BENCH_CALIBRATED_PROFILE"],
    }
    profile, base_config = None, config
    for suffix, path in profiles.items():
        if config.endswith(suffix):
            profile, base_config = path(), config[: -len(suffix)]
    kw = {"device_profile": profile} if profile else {}
    config_name, config = config, base_config
    if config == "inductor":
        backend = "inductor"
    elif config == "aot_eager":
        backend = "aot_eager"
    elif config == "offload-aot_eager":
        backend = offload_mlir.backend(plan="all", compiler="aot_eager")
    elif config == "hidden":
        backend = offload_mlir.backend(**kw)
    elif config == "all":
        backend = offload_mlir.backend(plan="all", **kw)
    elif config.startswith("budget="):
        b = config.split("=", 1)[1]
        backend = offload_mlir.backend(
            budget=float(b) if b.replace(".", "").isdigit() else b, **kw)
    else:
        raise SystemExit(f"unknown configuration {config!r}")
    step = torch.compile(model, backend=backend, dynamic=False)
    config = config_name

    g = torch.Generator().manual_seed(1)
    data = [torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g)
            for _ in range(2)]
    times, losses = [], []
    compile_s = 0.0
    peak_fwd_bwd = 0
    dump = os.environ.get("BRIDGE_DUMP_CODE")
    for i in range(args.steps):
        tokens = data[i % 2].cuda()
        if i == args.warmup:
            if config not in ("inductor", "aot_eager"):
                offload_mlir.reset_runtime_stats()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        torch.cuda.reset_peak_memory_stats()
        inputs = (tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())
        if i == 0 and dump:
            from torch._inductor.utils import run_and_get_code

            def fwd_bwd():
                out = step(*inputs)
                out.backward()
                return out

            loss, codes = run_and_get_code(fwd_bwd)
            with open(os.path.join(dump, f"code-{config}.py"), "w") as f:
                f.write("\n\n# ======== next graph ========\n\n".join(codes))
        else:
            loss = step(*inputs)
            loss.backward()
        torch.cuda.synchronize()
        # Forward and backward only: AdamW's state and its foreach
        # temporaries are the same with or without offloading.
        if i >= args.warmup:
            peak_fwd_bwd = max(peak_fwd_bwd, torch.cuda.max_memory_allocated())
        if i < args.steps - 1:
            opt.step()
            opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        if i == 0:
            compile_s = dt
        if i >= args.warmup:
            times.append(dt)
        losses.append(loss.item())
    grads = {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
    torch.save({"grads": grads, "losses": losses}, os.path.join(args.tmp, f"{config}.pt"))
    result = {
        "config": config,
        "step_s_median": statistics.median(times),
        "step_s_all": times,
        "first_step_s": compile_s,
        "peak_fwd_bwd_bytes": peak_fwd_bwd,
        "losses": losses,
    }
    if config not in ("inductor", "aot_eager"):
        result["runtime"] = offload_mlir.runtime_stats()
        rep = offload_mlir.last_report()
        result["fallback"] = rep.get("fallback") if rep else "no report"
        result["offloaded"] = rep.get("offloaded") if rep else []
        pipe = (rep or {}).get("pipeline") or {}
        steps = pipe.get("steps") or []
        if steps:
            result["predicted"] = steps[0].get("predicted")
    return result


def compare(tmp: str, base: str, other: str) -> dict:
    import torch

    a = torch.load(os.path.join(tmp, f"{base}.pt"))
    b = torch.load(os.path.join(tmp, f"{other}.pt"))
    same_loss = a["losses"] == b["losses"]
    diff = [n for n in a["grads"] if not torch.equal(a["grads"][n], b["grads"].get(n))]
    return {"losses_identical": same_loss, "grads_identical": not diff,
            "grads_differing": diff[:10], "num_grads": len(a["grads"])}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _model_args(p)
    p.add_argument("--configs", default="inductor,hidden")
    p.add_argument("--out", default=None, help="path prefix for .json and .md")
    p.add_argument("--tmp", default="/tmp/bridge_gpu")
    p.add_argument("--config", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    os.makedirs(args.tmp, exist_ok=True)
    if args.config:
        print("RESULT " + json.dumps(run_one(args)), flush=True)
        return 0

    results = []
    sys.path.insert(0, _PYTHON)
    from benchmarks.peers.runner import child_args

    clean = child_args(argv if argv is not None else sys.argv[1:], ("--configs", "--out"))
    for config in args.configs.split(","):
        cmd = [sys.executable, os.path.abspath(__file__), *clean, "--config", config]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
        if proc.returncode != 0 or not line:
            print(f"== {config} failed ({proc.returncode})\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
            results.append({"config": config, "error": proc.stderr[-2000:]})
            continue
        r = json.loads(line[0][len("RESULT "):])
        r["process_s"] = time.perf_counter() - t0
        warn = [l for l in proc.stderr.splitlines() if "offload_mlir" in l or "CSAN" in l]
        r["warnings"] = warn[:20]
        results.append(r)
        print(f"== {config}: {r['step_s_median']*1e3:.1f} ms/step, forward+backward peak "
              f"{r['peak_fwd_bwd_bytes']/2**30:.2f} GiB ({r['process_s']:.0f} s)", flush=True)
    base = results[0]["config"]
    for r in results[1:]:
        if "error" not in r:
            r["vs_" + base] = compare(args.tmp, base, r["config"])
            print(f"   {r['config']} vs {base}: {r['vs_' + base]}", flush=True)
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out + ".json", "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)
        with open(args.out + ".md", "w") as f:
            f.write(_table(results, base))
    print(_table(results, base))
    return 0 if all("error" not in r for r in results) else 1


def _table(results: list[dict], base: str) -> str:
    rows = ["| configuration | step (median) | vs base | peak allocated (fwd+bwd) | offloaded | "
            "D2H / H2D | exposed wait | pinned peak | loss+grads vs base |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    b = next((r for r in results if r["config"] == base and "error" not in r), None)
    for r in results:
        if "error" in r:
            rows.append(f"| {r['config']} | failed | | | | | | | |")
            continue
        ratio = r["step_s_median"] / b["step_s_median"] if b else float("nan")
        rt = r.get("runtime") or {}
        wait_s = rt.get("exposed_wait_seconds", 0)  # None: the waits were not timed
        cmp_ = r.get("vs_" + base)
        ident = "" if cmp_ is None else (
            "identical" if cmp_["losses_identical"] and cmp_["grads_identical"] else "DIFFER")
        rows.append(
            f"| {r['config']} | {r['step_s_median']*1e3:.1f} ms | {ratio:.3f}x | "
            f"{r['peak_fwd_bwd_bytes']/2**30:.2f} GiB | {len(r.get('offloaded') or [])} | "
            f"{rt.get('d2h_bytes', 0)/2**30:.2f} / {rt.get('h2d_bytes', 0)/2**30:.2f} GiB | "
            + ("untimed | " if wait_s is None else f"{wait_s * 1e3:.1f} ms | ") +
            f"{rt.get('pinned_peak_bytes', 0)/2**30:.2f} GiB | {ident} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.exit(main())
