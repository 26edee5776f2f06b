"""How a plan made at one sequence length fares at others, by the cost model.

A graph compiled with a dynamic length is planned once, at its size hint
(docs/torch-bridge.md, "Dynamic shapes"), and runs at every length. This
script asks the cost model what that costs: it traces the Llama-3-8B-shaped
step at each length (fake tensors, no GPU), plans it at each length on its
own (`plan=hidden`, copies only), then, for each hint, evaluates the hint's
choice of saved values at every other length (the values the hint's plan
kept stay on the device through `offload.keep`; the copies are scheduled for
that length). It prints, per (hint, length), the predicted step time over
the unplanned step and the predicted peak, next to the length's own plan.

    python -m benchmarks.dynamic_hints --lengths 512 1024 2048 4096 8192

Predictions of the device profile given (default: the packaged H100 one),
not measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

_PYTHON = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_REPO = os.path.dirname(_PYTHON)
_PRODUCER_NODE = re.compile(r'"((?:[^"\\]|\\.)*)"$')


def _export(length: int, args, directory: str) -> str:
    path = os.path.join(directory, f"step-{length}.mlir")
    subprocess.run(
        [sys.executable, "-m", "offload_mlir.fx_export", "--model", "llama-block",
         "--layers", str(args.layers), "--batch", str(args.batch), "--seq", str(length),
         "--dtype", args.dtype, "--partition", "min-cut", "--device", "cpu", "--loss",
         "-o", path],
        cwd=_PYTHON, check=True, capture_output=True)
    return path


def _plan(ir_path: str, args, options: str) -> dict:
    out = subprocess.run(
        [args.offload_opt, ir_path,
         f"--offload-activations={options} recompute=false release=at-wait "
         f"fuse-memory-bound=true device-profile={args.profile} report=json",
         "-o", os.devnull], check=True, capture_output=True, text=True)
    return json.loads(out.stderr)["steps"][0]


def _node(entry: dict) -> str | None:
    m = _PRODUCER_NODE.search(entry.get("producer", ""))
    return m.group(1) if m else None


def _with_choice(ir_path: str, offloaded: set[str], directory: str, tag: str) -> str:
    """The IR with every saved value's producer outside `offloaded` kept."""
    text = open(ir_path).read()

    def keep(m: re.Match) -> str:
        return m.group(0) if m.group(1) in offloaded else m.group(0) + " offload.keep,"

    path = os.path.join(directory, f"{tag}.mlir")
    with open(path, "w") as f:
        f.write(re.sub(r'\{node = "((?:[^"\\]|\\.)*)",', keep, text))
    return path


def _row(step: dict) -> tuple[float, float]:
    p = step["predicted"]
    return p["step_seconds_after"] / p["step_seconds_before"], p["peak_bytes_after"] / 2**30


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[512, 1024, 2048, 4096, 8192])
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--profile", default=os.path.join(_PYTHON, "offload_mlir", "profiles",
                                                     "h100.json"))
    p.add_argument("--offload-opt", default=os.path.join(_REPO, "build", "bin", "offload-opt"))
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        irs = {n: _export(n, args, directory) for n in args.lengths}
        own = {n: _plan(irs[n], args, "plan=hidden") for n in args.lengths}
        chosen = {n: {_node(e) for e in own[n]["saved"] if e.get("offloaded")}
                  for n in args.lengths}
        print(f"Llama-3-8B-shaped, {args.layers} layers, batch {args.batch}, {args.dtype}, "
              f"profile {os.path.basename(args.profile)}; step = predicted step over the "
              "unplanned one, peak in GiB (unplanned -> planned)")
        print("| hint | length | values | step, hint's plan | peak, hint's plan "
              "| step, length's own plan | peak, own plan |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for hint in args.lengths:
            for n in args.lengths:
                step = own[n] if n == hint else _plan(
                    _with_choice(irs[n], chosen[hint], directory, f"{hint}-at-{n}"),
                    args, "plan=all min-bytes=0")
                ratio, peak = _row(step)
                own_ratio, own_peak = _row(own[n])
                before = step["predicted"]["peak_bytes_before"] / 2**30
                print(f"| {hint} | {n} | {len(chosen[hint])} | {ratio:.4f}x | "
                      f"{before:.2f} -> {peak:.2f} | {own_ratio:.4f}x | {own_peak:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
