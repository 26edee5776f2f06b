"""Check the bridge's copy placement with PyTorch's CUDA sanitizer (CSAN).

CSAN (`torch.cuda._sanitizer`) is a dispatch mode: it sees the ATen ops
dispatched eagerly, records which stream read and wrote each CUDA buffer,
and reports an access that is not ordered (by a stream wait on an event
recorded after it) behind a conflicting access on another stream. It sees
neither Dynamo's compiled graphs (Dynamo does not compile under it) nor
Triton kernels, nor offload_rt's own copy streams: each copy op is one call
on the current stream to it (docs/benchmarks/bridge-h100/README.md, "Sanitizer").

So this script runs the same plan in a form it can check:
- the bridge's partitioner (the real pipeline and FX rebuild) transforms the
  step, under AOTAutograd without Dynamo (`aot_function`) and without code
  generation: the rebuilt graphs run op by op;
- each copy op in them is replaced by the same copy written with PyTorch's
  streams and events (`StreamCopies`): an offload is a `copy_` to pinned
  memory on a device-to-host stream after an event of the compute stream,
  its wait the compute stream waiting for the copy's event, and a load the
  same on a host-to-device stream into memory allocated on the compute
  stream;
- the first step compiles and runs without CSAN (and its loss and gradients
  are compared with the same graphs' without offloading); CSAN is then
  switched on for the next steps.

What CSAN can catch here: a consumer of a loaded value not ordered after its
load (a load's wait missing, or placed after a reader), and a write into an
offload's source before its wait. What it cannot: a source freed and its
memory reused before the copy ended (CSAN forgets a buffer's accesses when it
is freed; the stress stage of test/Integration/GPU/bridge-on-gpu.sh checks
that on the compiled graphs). `--drop load_wait` / `--drop offload_wait`
leave those waits out, as controls: the first must be reported.

    python python/benchmarks/csan_plan.py --out csan.json
    python python/benchmarks/csan_plan.py --drop load_wait   # must fail

Without CUDA (`--device cpu`, used by the tests) the copies are synchronous
and no sanitizer runs: it checks the plumbing only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

import torch  # noqa: E402
import torch.fx as fx  # noqa: E402

COPY_OPS = ("offload_start", "offload_wait", "load", "load_start", "load_wait")


class StreamCopies:
    """The bridge's copy ops (torch.ops.offload.*, same arguments), written
    with PyTorch's streams and events so that CSAN sees every access. On CPU
    the copies are plain, synchronous copies. `drop` names waits to leave
    out (controls)."""

    def __init__(self, device: torch.device, drop: tuple[str, ...] = ()):
        self.cuda = device.type == "cuda"
        self.drop = set(drop)
        if self.cuda:
            self.d2h = torch.cuda.Stream(device)
            self.h2d = torch.cuda.Stream(device)
        # The event each copy records when it is done, by the data pointer of
        # the buffer it fills (the host buffer of an offload, the device
        # buffer of a load): what the graph's wait names it by.
        self.done: dict[int, Any] = {}
        self.moved = {"d2h_bytes": 0, "h2d_bytes": 0, "offloads": 0, "loads": 0}

    def _start(self, stream, dst: torch.Tensor, src: torch.Tensor) -> None:
        if not self.cuda:
            dst.copy_(src)
            return
        ready = torch.cuda.Event()
        ready.record()  # on the compute stream: src is written, dst allocated
        stream.wait_event(ready)
        with torch.cuda.stream(stream):
            dst.copy_(src, non_blocking=True)
            done = torch.cuda.Event()
            done.record(stream)
        self.done[dst.data_ptr()] = done

    def _wait(self, key: int, op: str) -> None:
        done = self.done.pop(key, None)
        if done is not None and op not in self.drop:
            torch.cuda.current_stream().wait_event(done)

    def offload_start(self, src, stride, after):
        host = torch.empty_strided(src.shape, stride, dtype=src.dtype, device="cpu",
                                   pin_memory=self.cuda)
        self._start(self.d2h if self.cuda else None, host, src)
        self.moved["d2h_bytes"] += src.numel() * src.element_size()
        self.moved["offloads"] += 1
        return host

    def offload_wait(self, host, src, after):
        self._wait(host.data_ptr(), "offload_wait")

    def load_start(self, host, size, stride, dtype, device, after):
        dst = torch.empty_strided(size, stride, dtype=dtype, device=device)
        self._start(self.h2d if self.cuda else None, dst, host)
        self.moved["h2d_bytes"] += dst.numel() * dst.element_size()
        self.moved["loads"] += 1
        return dst

    def load_wait(self, dst, host, after):
        self._wait(dst.data_ptr(), "load_wait")

    def load(self, host, size, stride, dtype, device, after):
        dst = self.load_start(host, size, stride, dtype, device, after)
        self.load_wait(dst, host, after)
        return dst


def swap_copy_ops(gm: fx.GraphModule, copies: StreamCopies) -> int:
    """Points every torch.ops.offload.* call of `gm` at `copies`; returns
    how many there were."""
    swapped = 0
    for node in gm.graph.nodes:
        for name in COPY_OPS:
            if node.op == "call_function" and node.target is getattr(torch.ops.offload, name).default:
                node.target = getattr(copies, name)
                swapped += 1
    gm.recompile()
    return swapped


def run(args: argparse.Namespace) -> dict:
    from torch._functorch.aot_autograd import aot_function, make_boxed_func
    from torch.func import functional_call

    import offload_mlir
    from offload_mlir import models, ops
    from offload_mlir.bridge import OffloadOptions, OffloadPartitioner

    ops.load_library()
    torch.use_deterministic_algorithms(True)
    device = torch.device(args.device)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    cfg = models.LlamaConfig(hidden=args.hidden, heads=args.heads, kv_heads=args.kv_heads,
                             ffn=args.ffn)
    torch.manual_seed(0)
    model = models.LlamaLM(cfg, args.layers, args.seq, args.vocab, device=device, dtype=dtype)
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}

    def step_fn(state, x, y):
        return functional_call(model, state, (x, y))

    g = torch.Generator().manual_seed(1)
    batches = []
    for _ in range(args.steps):
        tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g).to(device)
        batches.append((tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()))

    copies = StreamCopies(device, tuple(args.drop))
    swapped = {"forward": 0, "backward": 0}

    def compiler(kind):
        def compile_graph(gm, example_inputs):
            if args.offload:
                swapped[kind] += swap_copy_ops(gm, copies)
            return make_boxed_func(gm)
        return compile_graph

    options = OffloadOptions(plan=args.plan, min_bytes=args.min_bytes, compiler="aot_eager")
    kw: dict[str, Any] = {}
    if args.offload:
        kw["partition_fn"] = OffloadPartitioner(options)
    fn = aot_function(step_fn, fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                      **kw)

    losses, grads = [], []
    sanitized_steps = 0
    for i, (x, y) in enumerate(batches):
        if i == 1 and args.sanitize:
            import torch.cuda._sanitizer as csan

            csan.enable_cuda_sanitizer()
        for p in model.parameters():
            p.grad = None
        loss = fn(state, x, y)
        loss.backward()
        if args.device == "cuda":
            torch.cuda.synchronize()
        losses.append(loss.detach().float().cpu())
        grads.append([p.grad.detach().float().cpu() for p in model.parameters()])
        sanitized_steps += int(args.sanitize and i >= 1)
    report = offload_mlir.last_report() if args.offload else None
    return {
        "offload": args.offload, "drop": args.drop, "device": str(device),
        "copy_ops": swapped, "moved": copies.moved, "steps": args.steps,
        "sanitized_steps": sanitized_steps,
        "offloaded": report["offloaded"] if report else [],
        "losses": [float(l) for l in losses],
        # Bit for bit: a digest of each gradient's bytes.
        "grad_digests": [[hashlib.sha256(g.numpy().tobytes()).hexdigest()[:16] for g in step]
                         for step in grads],
    }


def _child(args: argparse.Namespace, extra: list[str]) -> tuple[int, dict | None, str]:
    """Runs one variant in a process of its own: this script with the same
    arguments (the child reads only the model's and the plan's) and `extra`."""
    out = os.path.join(args.work, f"child-{len(os.listdir(args.work))}.json")
    cmd = [sys.executable, __file__, *args.argv, "--child", "--result", out, *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    result = json.load(open(out)) if p.returncode == 0 and os.path.exists(out) else None
    return p.returncode, result, p.stdout + p.stderr


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=1536)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--plan", default="all", help="the bridge's plan (all, hidden)")
    p.add_argument("--min-bytes", type=int, default=0)
    p.add_argument("--drop", action="append", default=[], choices=["load_wait", "offload_wait"],
                   help="leave these waits out (a control; repeatable)")
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--work", default=None, help="scratch folder for the child processes")
    # One variant in this process (the sanitizer cannot be switched off again).
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--no-offload", dest="offload", action="store_false", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    args.sanitize = args.device == "cuda"

    if args.child:
        result = run(args)
        with open(args.result, "w") as f:
            json.dump(result, f)
        return 0

    import tempfile

    args.work = args.work or tempfile.mkdtemp(prefix="csan-plan-")
    variants = [("no offload", ["--no-offload"]), ("offload", [])]
    if not args.drop and args.device == "cuda":
        variants += [("control: load waits dropped", ["--drop=load_wait"]),
                     ("control: offload waits dropped", ["--drop=offload_wait"])]
    results = {}
    for name, extra in variants:
        rc, result, log = _child(args, extra)
        reports = log.count("CSAN detected")
        first = log.find("CSAN detected")
        results[name] = {"exit_code": rc, "csan_reports": reports, "result": result,
                         # The first report (which access, on which stream,
                         # against which), or the end of a failure's log.
                         "log": (log[first:first + 3000] if first >= 0
                                 else log[-3000:] if rc else "")}
        moved = result["moved"] if result else {}
        print(f"{name}: exit {rc}, CSAN reports {reports}, "
              f"offloads {moved.get('offloads', 0)}, loads {moved.get('loads', 0)}, "
              f"{moved.get('d2h_bytes', 0)} B each way")
    base, off = results["no offload"]["result"], results["offload"]["result"]
    if base and off:
        same = base["losses"] == off["losses"] and base["grad_digests"] == off["grad_digests"]
        results["offload"]["same_as_no_offload"] = same
        print(f"offload against no offload: losses and gradients "
              f"{'identical' if same else 'DIFFER'}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "variants": results}, f, indent=1)
    clean = (results["offload"]["exit_code"] == 0 and results["offload"]["csan_reports"] == 0
             and off is not None and off["moved"]["loads"] > 0)
    if args.sanitize and not args.drop:
        # The sanitizer must have run, and must catch the dropped load waits:
        # otherwise a clean run says nothing.
        control = results["control: load waits dropped"]
        clean = clean and off["sanitized_steps"] > 0 and control["csan_reports"] > 0
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
