"""Small pinned copies: one at a time, one batched call, or packed into one.

Issue 9, item 4 asks that a step's small saved tensors cross the link at
90% or more of the rate large copies get. Before choosing how the runtime
should batch them, this measures the three ways it could on the machine it
runs on, for tensors of one size from separate device allocations (as a
step's saved tensors are):

* `each`: one cudaMemcpyAsync per tensor, back to back on a copy stream
  (what offload_rt does today);
* `batch`: one cudaMemcpyBatchAsync call for all of them (CUDA 12.8 and
  later; called through ctypes with the CUDA 13 signature);
* `packed`: the tensors gathered into one device staging buffer (a
  device-to-device copy at memory bandwidth), then one copy of the staging
  buffer (device to host; host to device, the reverse: one copy into
  staging, then a scatter).

Each is timed with CUDA events around the whole group, against one copy of
the same total bytes (`one large`), both directions, and printed as GB/s and
as a fraction of the large copy's rate.

    python3 python/benchmarks/small_copies.py --total-mib 256 --json out.json
"""

import argparse
import ctypes
import json
import statistics
import sys


class _MemLocation(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _MemcpyAttributes(ctypes.Structure):
    _fields_ = [("srcAccessOrder", ctypes.c_int), ("srcLocHint", _MemLocation),
                ("dstLocHint", _MemLocation), ("flags", ctypes.c_uint)]


_SRC_ACCESS_ORDER_STREAM = 1


def _cudart():
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            lib = ctypes.CDLL(name)
            lib.cudaMemcpyBatchAsync  # noqa: B018 - present since 12.8
            return lib
        except (OSError, AttributeError):
            continue
    return None


def timed(torch, stream, fn, repeat):
    """Median milliseconds of `fn()` enqueued on `stream`, over `repeat`."""
    times = []
    for _ in range(repeat + 1):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        with torch.cuda.stream(stream):
            start.record(stream)
            fn()
            end.record(stream)
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times[1:])  # the first warms up


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes-kib", default="64,256,1024,4096")
    p.add_argument("--total-mib", type=int, default=256)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json")
    args = p.parse_args(argv)

    import torch
    if not torch.cuda.is_available():
        print("small_copies: needs a CUDA device", file=sys.stderr)
        return 2
    cudart = _cudart()
    stream = torch.cuda.Stream()
    total = args.total_mib << 20
    results = {"device": torch.cuda.get_device_name(), "total_bytes": total,
               "batch_available": cudart is not None, "rows": []}

    big_dev = torch.empty(total, dtype=torch.uint8, device="cuda")
    big_host = torch.empty(total, dtype=torch.uint8, pin_memory=True)
    large = {
        "D2H": timed(torch, stream, lambda: big_host.copy_(big_dev, non_blocking=True),
                     args.repeat),
        "H2D": timed(torch, stream, lambda: big_dev.copy_(big_host, non_blocking=True),
                     args.repeat),
    }
    rate = lambda ms: total / (ms * 1e-3) / 1e9  # noqa: E731
    for d, ms in large.items():
        print(f"one large copy {d}: {total >> 20} MiB in {ms:.2f} ms, {rate(ms):.1f} GB/s")
        results["rows"].append({"size_kib": None, "mode": "one large", "dir": d, "ms": ms,
                                "GBps": rate(ms), "of_large": 1.0})

    for size_kib in (int(s) for s in args.sizes_kib.split(",")):
        size = size_kib << 10
        n = total // size
        dev = [torch.empty(size, dtype=torch.uint8, device="cuda") for _ in range(n)]
        host = [torch.empty(size, dtype=torch.uint8, pin_memory=True) for _ in range(n)]
        staging = torch.empty(n * size, dtype=torch.uint8, device="cuda")
        staged_host = big_host[: n * size]

        def each(d):
            pairs = zip(host, dev) if d == "D2H" else zip(dev, host)
            for dst, src in pairs:
                dst.copy_(src, non_blocking=True)

        def packed(d):
            if d == "D2H":
                torch.cat(dev, out=staging)
                staged_host.copy_(staging, non_blocking=True)
            else:
                staging.copy_(staged_host, non_blocking=True)
                torch._foreach_copy_(dev, list(staging.split(size)))

        modes = {"each": each, "packed": packed}
        if cudart is not None:
            attrs = _MemcpyAttributes(_SRC_ACCESS_ORDER_STREAM, _MemLocation(0, 0),
                                      _MemLocation(0, 0), 0)
            idx = (ctypes.c_size_t * 1)(0)
            sizes = (ctypes.c_size_t * n)(*([size] * n))
            ptrs = {
                "D2H": ((ctypes.c_void_p * n)(*[h.data_ptr() for h in host]),
                        (ctypes.c_void_p * n)(*[x.data_ptr() for x in dev])),
                "H2D": ((ctypes.c_void_p * n)(*[x.data_ptr() for x in dev]),
                        (ctypes.c_void_p * n)(*[h.data_ptr() for h in host])),
            }

            def batch(d):
                dsts, srcs = ptrs[d]
                err = cudart.cudaMemcpyBatchAsync(
                    dsts, srcs, sizes, ctypes.c_size_t(n), ctypes.byref(attrs), idx,
                    ctypes.c_size_t(1), ctypes.c_void_p(stream.cuda_stream))
                if err != 0:
                    raise RuntimeError(f"cudaMemcpyBatchAsync failed: error {err}")

            modes["batch"] = batch
        for d in ("D2H", "H2D"):
            for mode, fn in modes.items():
                ms = timed(torch, stream, lambda: fn(d), args.repeat)
                moved = n * size
                gbps = moved / (ms * 1e-3) / 1e9
                frac = gbps / rate(large[d])
                print(f"{size_kib:5d} KiB x {n:5d} {d} {mode:7s}: {ms:7.2f} ms, "
                      f"{gbps:5.1f} GB/s, {frac:.0%} of one large copy")
                results["rows"].append({"size_kib": size_kib, "count": n, "mode": mode,
                                        "dir": d, "ms": ms, "GBps": gbps, "of_large": frac})
        del dev, host, staging
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
