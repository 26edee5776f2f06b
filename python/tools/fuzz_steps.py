#!/usr/bin/env python3
"""A seeded fuzz driver for offload-opt (issue 8, item 7).

Takes valid training steps from python/tools/random_steps.py, mutates
them the way a hostile user would (ops of unknown effects, in-place writes,
graph regions, functions that end without a terminator, sub-byte element
types, reordered or deleted ops, broken contract attributes, ...), and adds
small buffer-level modules with random element types, layouts and memory
spaces for `--convert-offload-to-llvm`. Each input goes through offload-opt
under several pipelines; the properties checked are:

- no crash: the exit status is not a signal and stderr has no crash banner;
- no hang: offload-opt ends within `--timeout` seconds;
- a failure is a diagnostic: a non-zero exit prints an `error:`;
- a success re-verifies: the output parses and verifies again, and prints
  back to the same text. The passes run with --verify-each=false, so a pass
  that leaves invalid IR is caught here, not stopped by the verifier between
  passes.

Everything follows from `--seed`: input `i` of seed `s` and its mutations are
the same on every run. Pure Python 3 standard library.

    python3 python/tools/fuzz_steps.py --seed 1 --count 200 \\
        --offload-opt build/bin/offload-opt --failures-dir fuzz-failures
    python3 python/tools/fuzz_steps.py --seed 1 --minutes 30 ...

A failing input is written to `--failures-dir` with the command that
reproduces it.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools import random_steps  # noqa: E402

CRASH_MARKERS = ("PLEASE submit a bug report", "Stack dump", "Assertion", "LLVM ERROR",
                 "UNREACHABLE", "Segmentation fault")

# The pipelines every mutated step goes through (offload-opt arguments).
STEP_PIPELINES = [
    ["--offload-activations"],
    ["--offload-activations=schedule=false"],
    ["--offload-activations=plan=hidden"],
    ["--offload-activations=min-bytes=0 schedule=true max-inflight-bytes=16KiB"],
    ["--offload-activations=budget=0.9"],
    # The scheduled form through bufferization of its futures and buffer
    # deallocation (docs/lowering.md).
    ["--offload-activations=min-bytes=0 schedule=true", "--convert-trace-to-calls",
     "--one-shot-bufferize=bufferize-function-boundaries use-encoding-for-memory-space "
     "function-boundary-type-conversion=identity-layout-map allow-return-allocs-from-loops",
     "--buffer-deallocation-pipeline"],
    ["--offload-find-saved-activations=min-bytes=0", "--offload-insert-offloads",
     "--offload-reorder-backward=all-views=true", "--offload-insert-loads"],
    # Placements between other passes: upstream cleanups between planning
    # and scheduling, a second plan, small copies grouped. (Not --inline:
    # MLIR 22's inliner crashes on the unregistered ops with regions that
    # the mutations add; test/Transforms/placements-between-passes.mlir
    # runs it on a registered step.)
    ["--offload-find-saved-activations=min-bytes=0",
     "--offload-plan=plan=hidden schedule=true recompute=false", "--canonicalize", "--cse",
     "--offload-insert-offloads", "--offload-reorder-backward",
     "--offload-insert-loads", "--canonicalize", "--offload-schedule-copies=coalesce-below=1MiB"],
    ["--offload-find-saved-activations=min-bytes=0",
     "--offload-plan=plan=hidden schedule=true", "--offload-plan=budget=0.95 schedule=true",
     "--offload-insert-offloads", "--offload-insert-loads", "--offload-schedule-copies"],
    # Passes out of order, and the pipeline twice.
    ["--offload-insert-loads", "--offload-insert-offloads", "--offload-schedule-copies",
     "--offload-find-saved-activations", "--offload-reorder-backward"],
    ["--offload-activations=min-bytes=0 coalesce-below=1MiB", "--offload-activations"],
]
BUFFER_PIPELINES = [["--convert-offload-to-llvm"]]

# --------------------------------------------------------------------------
# Mutations of a training step (its text, a list of lines)
# --------------------------------------------------------------------------

_DEF_LINE = re.compile(
    r"^(?P<indent>\s*)(?P<name>%[\w]+) = trace\.(?P<kind>op|view) \"(?P<target>[^\"]*)\"\((?P<operands>[^)]*)\) "
    r"\{(?P<attrs>.*)\} : \((?P<in>.*)\) -> (?P<out>tensor<[^>]*>)(?P<loc>.*)$")
_RETURN = re.compile(r"^(?P<indent>\s*)func\.return (?P<operands>.*) : (?P<types>.*)$")
_ELEMENTS = ("i1", "i4", "i8", "i2", "f8E4M3FN", "f8E5M2", "f64", "i64", "complex<f32>")


def _def_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if _DEF_LINE.match(line)]


def _pick_def(rng, lines):
    """A random traced op line and its match; (None, None) if an earlier
    mutation left none."""
    defs = _def_lines(lines)
    if not defs:
        return None, None
    i = rng.choice(defs)
    return i, _DEF_LINE.match(lines[i])


def m_unknown_sink(rng, lines):
    """An op of unknown effects reads a value right after its definition."""
    i, m = _pick_def(rng, lines)
    if m is None:
        return
    lines.insert(i + 1, f'{m["indent"]}"fuzz.sink"({m["name"]}) : ({m["out"]}) -> ()')


def m_unknown_op(rng, lines):
    """A traced op becomes an op of unknown effects with the same operands and
    result."""
    i, m = _pick_def(rng, lines)
    if m is None:
        return
    lines[i] = (f'{m["indent"]}{m["name"]} = "fuzz.op"({m["operands"]}) : ({m["in"]}) -> '
                f'{m["out"]}{m["loc"]}')


def m_unknown_reads_saved(rng, lines):
    """An op of unknown effects reads a saved value at the start of backward
    (the argument that becomes host-resident)."""
    head = next((i for i, line in enumerate(lines)
                 if line.startswith("  func.func @backward(")), None)
    if head is None:
        return
    while not lines[head].rstrip().endswith("{"):
        head += 1
    header = "\n".join(lines[:head + 1])
    saved = re.findall(r"(%b_saved\d+): (tensor<[^>]*>)", header)
    if saved:
        name, ty = rng.choice(saved)
        lines.insert(head + 1, f'    "fuzz.sink"({name}) : ({ty}) -> ()')


def m_unknown_region(rng, lines):
    """An op of unknown effects with a region that reads a value."""
    i, m = _pick_def(rng, lines)
    if m is None:
        return
    ind, v, t = m["indent"], m["name"], m["out"]
    lines[i + 1:i + 1] = [f'{ind}"fuzz.region"({v}) ({{',
                          f'{ind}  "fuzz.inner"({v}) : ({t}) -> ()',
                          f'{ind}  "fuzz.yield"() : () -> ()',
                          f'{ind}}}) : ({t}) -> ()']


def m_unknown_barrier(rng, lines):
    """An op of unknown effects that reads nothing."""
    i, m = _pick_def(rng, lines)
    if m is not None:
        lines.insert(i + 1, m["indent"] + '"fuzz.barrier"() : () -> ()')


def m_in_place(rng, lines):
    """A traced op writes its first operand in place."""
    cands = [i for i in _def_lines(lines)
             if _DEF_LINE.match(lines[i])["kind"] == "op" and "mutates" not in lines[i]]
    if cands:
        i = rng.choice(cands)
        lines[i] = lines[i].replace("} : (", ", mutates = array<i64: 0>} : (", 1)


def m_keep(rng, lines):
    i, m = _pick_def(rng, lines)
    if m is not None:
        lines[i] = lines[i].replace("} : (", ", offload.keep} : (", 1)


def m_element_type(rng, lines):
    """Every tensor of the module gets another element type (sub-byte ones
    included); trace ops accept any."""
    new = rng.choice(_ELEMENTS)
    for i, line in enumerate(lines):
        lines[i] = re.sub(r"x(?:f32|bf16|f16)>", f"x{new}>", line)


def m_call(rng, lines):
    """A call of an external function (unknown effects) reads a value."""
    i, m = _pick_def(rng, lines)
    if m is None:
        return
    callee = f"fuzz_ext{i}"
    if any(f"@{callee}(" in line for line in lines):
        return
    lines.insert(i + 1, f'{m["indent"]}func.call @{callee}({m["name"]}) : ({m["out"]}) -> ()')
    lines.insert(len(lines) - 2, f"  func.func private @{callee}({m['out']})")


def m_no_terminator(rng, lines):
    """A function ends in an unregistered op instead of its return."""
    cands = [i for i, line in enumerate(lines) if _RETURN.match(line)]
    if not cands:
        return
    i = rng.choice(cands)
    m = _RETURN.match(lines[i])
    lines[i] = f'{m["indent"]}"fuzz.end"({m["operands"]}) : ({m["types"]}) -> ()'


def m_graph_region(rng, lines):
    """Both functions become ml_program.subgraph (a graph region), and a view
    may read a value defined after it."""
    for i, line in enumerate(lines):
        line = line.replace("  func.func @", "  ml_program.subgraph @")
        lines[i] = re.sub(r"^(\s*)func\.return", r"\1ml_program.output", line)
    for i, line in enumerate(lines):
        if line.strip().startswith("func.func private"):
            lines[i] = ""
    defs = _def_lines(lines)
    if len(defs) >= 2 and rng.random() < 0.7:
        a, b = sorted(rng.sample(defs, 2))
        ma, mb = _DEF_LINE.match(lines[a]), _DEF_LINE.match(lines[b])
        if ma["out"] == mb["out"]:  # a view of a later value of the same type
            lines[a] = (f'{ma["indent"]}{ma["name"]} = trace.view "aten.view.default"'
                        f'({mb["name"]}) {{args = [#trace.operand<0>]}} : ({mb["out"]}) -> '
                        f'{ma["out"]}')


def m_swap(rng, lines):
    """Two neighbouring op lines change places (may break dominance)."""
    defs = _def_lines(lines)
    i = rng.choice(defs) if defs else None
    if i is not None and i + 1 in defs:
        lines[i], lines[i + 1] = lines[i + 1], lines[i]


def m_delete(rng, lines):
    """An op line disappears (its uses dangle)."""
    i, m = _pick_def(rng, lines)
    if m is not None:
        del lines[i]


def m_num_outputs(rng, lines):
    for i, line in enumerate(lines):
        if "offload.num_outputs = " in line:
            n = rng.choice([-1, 0, 1, 2, 3, 40, 2**40])
            lines[i] = re.sub(r"offload\.num_outputs = -?\d+ : i64",
                              f"offload.num_outputs = {n} : i64", line)


def m_backward_ref(rng, lines):
    for i, line in enumerate(lines):
        if "offload.backward = @backward" in line:
            lines[i] = line.replace("@backward", rng.choice(["@missing", "@forward"]), 1)


def m_dynamic_dim(rng, lines):
    """One static dimension of one type becomes dynamic (types disagree)."""
    i, m = _pick_def(rng, lines)
    if m is not None:
        lines[i] = re.sub(r"tensor<(\d+)x", "tensor<?x", lines[i], count=1)


def m_placement(rng, lines):
    """A placement of offload-plan (`offload.placement`) before a random op,
    of a random kind, naming random saved values (perhaps ones the step does
    not have; rarely none or one twice, which the verifier rejects)."""
    i, m = _pick_def(rng, lines)
    if m is not None:
        kind = rng.choice(["load_starts", "offload_waits"])
        indices = rng.sample(range(6), rng.randint(1, 3))
        if rng.random() < 0.05:
            indices = rng.choice([[], indices + indices[:1]])
        lines.insert(i, f'{m["indent"]}offload.placement {kind} [{", ".join(map(str, indices))}]')


def _signature(lines: list[str], name: str) -> tuple[list[str], list[str]] | None:
    """The argument and result types of function `name`, or None."""
    head = next((i for i, line in enumerate(lines)
                 if line.strip().startswith(f"func.func @{name}(")), None)
    if head is None:
        return None
    end = head
    while end < len(lines) and not lines[end].rstrip().endswith("{"):
        end += 1
    header = " ".join(lines[head:end + 1])
    header = re.sub(r"attributes \{.*\}\s*\{$", "{", header)
    header = re.sub(r'loc\("[^"]*"\)', "", header)
    args = re.findall(r"%[\w]+: (tensor<[^>]*>)", header)
    results = re.search(r"->\s*\(?([^{]*?)\)?\s*\{$", header)
    types = re.findall(r"tensor<[^>]*>", results.group(1)) if results else []
    return args, types


def _num_outputs(lines: list[str]) -> int | None:
    for line in lines:
        m = re.search(r"offload\.num_outputs = (\d+) : i64", line)
        if m:
            return int(m.group(1))
    return None


def m_driver(rng, lines):
    """A driver function calls forward and hands its saved results to
    backward; it may also read a saved result itself, or pass backward a
    value of its own in a saved result's place."""
    fwd, bwd, n = _signature(lines, "forward"), _signature(lines, "backward"), _num_outputs(lines)
    if fwd is None or bwd is None or n is None:
        return
    (f_args, f_results), (b_args, _) = fwd, bwd
    saved = f_results[n:]
    if len(b_args) < len(saved) or not saved:
        return
    grads = b_args[len(saved):]
    params = [f"%a{i}: {t}" for i, t in enumerate(f_args)] + \
             [f"%g{i}: {t}" for i, t in enumerate(grads)]
    body = [f"  func.func @fuzz_driver({', '.join(params)}) {{",
            f"    %r:{len(f_results)} = func.call @forward({', '.join(f'%a{i}' for i in range(len(f_args)))})"
            f" : ({', '.join(f_args)}) -> ({', '.join(f_results)})"]
    saved_values = [f"%r#{n + i}" for i in range(len(saved))]
    k = rng.randrange(len(saved))
    variant = rng.choice(["plain", "reads-saved", "other-value"])
    if variant == "reads-saved":
        body.append(f'    "fuzz.sink"({saved_values[k]}) : ({saved[k]}) -> ()')
    elif variant == "other-value":
        body.append(f"    %other = tensor.empty() : {saved[k]}")
        saved_values[k] = "%other"
    args = saved_values + [f"%g{i}" for i in range(len(grads))]
    body.append(f"    func.call @backward({', '.join(args)}) : ({', '.join(b_args)}) -> "
                f"({', '.join(bwd[1])})" if bwd[1] else
                f"    func.call @backward({', '.join(args)}) : ({', '.join(b_args)}) -> ()")
    body += ["    func.return", "  }"]
    lines[len(lines) - 2:len(lines) - 2] = body


def m_func_constant(rng, lines):
    """A func.constant names forward (or backward): a use that is not a
    call, so their types cannot change."""
    name = rng.choice(["forward", "backward"])
    sig = _signature(lines, name)
    if sig is None:
        return
    ty = f"({', '.join(sig[0])}) -> ({', '.join(sig[1])})"
    lines[len(lines) - 2:len(lines) - 2] = [
        f"  func.func @fuzz_constant() -> ({ty}) {{",
        f"    %f = func.constant @{name} : {ty}",
        f"    func.return %f : {ty}", "  }"]


def m_encoding(rng, lines):
    """Every tensor of one type in the module gets an encoding of its own
    (which no host copy can carry), so saved values mix encodings."""
    types = sorted({t for line in lines for t in re.findall(r"tensor<[\dx]+\w+>", line)})
    if types:
        t = rng.choice(types)
        enc = t[:-1] + ', "fuzz">'
        for i, line in enumerate(lines):
            lines[i] = line.replace(t, enc)


def m_nested_module(rng, lines):
    """The step moves into a nested module (the passes plan top-level steps
    only; trace-to-calls declares callees where the calls resolve them)."""
    top = next((i for i, line in enumerate(lines) if line.startswith("module {")), None)
    end = max((i for i, line in enumerate(lines) if line.startswith("}")), default=None)
    if top is None or end is None:
        return
    lines.insert(end, "}")
    lines.insert(top + 1, "module @fuzz_nested {")


MUTATIONS = {
    "unknown-sink": m_unknown_sink, "unknown-op": m_unknown_op,
    "unknown-region": m_unknown_region, "unknown-barrier": m_unknown_barrier,
    "unknown-reads-saved": m_unknown_reads_saved,
    "in-place": m_in_place, "keep": m_keep, "element-type": m_element_type,
    "call": m_call, "no-terminator": m_no_terminator, "graph-region": m_graph_region,
    "swap": m_swap, "delete": m_delete, "num-outputs": m_num_outputs,
    "backward-ref": m_backward_ref, "dynamic-dim": m_dynamic_dim, "placement": m_placement,
    "driver": m_driver, "func-constant": m_func_constant, "encoding": m_encoding,
    "nested-module": m_nested_module,
}
# Mostly mutations that keep the step valid, so the passes get deep.
WEIGHTS = {"unknown-sink": 6, "unknown-op": 6, "unknown-region": 4, "unknown-barrier": 4,
           "unknown-reads-saved": 3,
           "in-place": 6, "keep": 2, "element-type": 3, "call": 3, "no-terminator": 1,
           "graph-region": 1, "swap": 2, "delete": 1, "num-outputs": 1, "backward-ref": 1,
           "dynamic-dim": 1, "placement": 3, "driver": 3, "func-constant": 1, "encoding": 2,
           "nested-module": 1}


def mutate_step(seed: int, index: int) -> tuple[str, list[str]]:
    """Random step `index` of `seed`, mutated; and the mutations applied."""
    rng = random.Random(f"offload-fuzz-steps:{seed}:{index}")
    text, _ = random_steps.generate(seed, index)
    lines = text.split("\n")
    names = list(WEIGHTS)
    applied = rng.choices(names, weights=[WEIGHTS[n] for n in names], k=rng.randint(1, 4))
    for name in applied:
        MUTATIONS[name](rng, lines)
    return "\n".join(lines), applied


# --------------------------------------------------------------------------
# Buffer-level modules for the lowering
# --------------------------------------------------------------------------

_SPACES = ["", "", "1", '"dev"', "#gpu.address_space<global>"]
_LAYOUTS = ["", "", "strided<[?, 1], offset: ?>", "strided<[1, 4]>", "affine_map<(d0, d1) -> (d1, d0)>"]


def buffer_module(seed: int, index: int) -> tuple[str, list[str]]:
    """A function of copies on buffers with random element types, shapes,
    layouts and memory spaces; the shape of the layout-free forms is always
    4x4 so strided layouts fit."""
    rng = random.Random(f"offload-fuzz-buffers:{seed}:{index}")
    elem = rng.choice(["f32", "bf16", "i1", "i4", "i8", "f8E4M3FN", "index", "complex<f32>"])
    shape = rng.choice(["4x4", "?x4"])

    def ty(layout="", space=""):
        params = ", ".join(p for p in (layout, space) if p)
        return f"memref<{shape}x{elem}{', ' + params if params else ''}>"

    src = ty(rng.choice(_LAYOUTS), rng.choice(_SPACES))
    host = ty(rng.choice(["", "", "strided<[4, 1], offset: ?>"]), "#offload.host")
    dev = ty("", rng.choice(_SPACES))
    kind = rng.choice(["sync", "split", "dealloc", "group", "view"])
    if kind in ("group", "view"):
        return storage_module(rng)
    body = []
    if kind == "split":
        body += [f"  %f = offload.offload_start %d : {src} -> !offload.buffer_future<{host}>",
                 f"  %h = offload.wait %f : !offload.buffer_future<{host}>",
                 f"  %g = offload.load_start %h : {host} -> !offload.buffer_future<{dev}>",
                 f"  %l = offload.wait %g : !offload.buffer_future<{dev}>"]
    else:
        body += [f"  %h = offload.offload_buffer %d : {src} -> {host}",
                 f"  %l = offload.load_buffer %h : {host} -> {dev}"]
        if kind == "dealloc":
            body.append(f"  memref.dealloc %h : {host}")
    text = "\n".join([f"func.func @copies(%d: {src}) -> {dev} {{", *body,
                      f"  return %l : {dev}", "}", ""])
    return text, [f"buffers {kind} {elem} src={src} host={host} dev={dev}"]


def storage_module(rng) -> tuple[str, list[str]]:
    """Copies whose sources share storage: a group of one buffer twice or of
    two views of one base, a view as a consumed source, with or without
    release_source, and the base read or written after the copy or not.
    The verifier must refuse what frees or reads memory wrongly; what it
    accepts must lower."""
    t = "memref<8xf32>"
    v = "memref<4xf32, strided<[1]>>"
    w = "memref<4xf32, strided<[1], offset: 4>>"
    host4, host8 = "memref<4xf32, #offload.host>", "memref<8xf32, #offload.host>"
    release = rng.choice(["", " release_source"])
    body = ["  %v = memref.subview %d[0] [4] [1] : memref<8xf32> to " + v,
            "  %w = memref.subview %d[4] [4] [1] : memref<8xf32> to " + w]
    kind = rng.choice(["same-twice", "two-views", "view-source"])
    if kind == "same-twice":
        body.append(f"  %f:2 = offload.offload_group_start %d, %d{release} : {t}, {t} -> "
                    f"!offload.buffer_future<{host8}>, !offload.buffer_future<{host8}>")
    elif kind == "two-views":
        body.append(f"  %f:2 = offload.offload_group_start %v, %w{release} : {v}, {w} -> "
                    f"!offload.buffer_future<{host4}>, !offload.buffer_future<{host4}>")
    else:
        body.append(f"  %f = offload.offload_start %v{release} : {v} -> "
                    f"!offload.buffer_future<{host4}>")
    later = rng.choice(["none", "read-base", "write-base", "read-other-view", "dim"])
    body.append("  %c0 = arith.constant 0 : index")
    if later == "read-base":
        body.append(f"  %r = memref.load %d[%c0] : {t}")
    elif later == "write-base":
        body.append(f"  memref.store %x, %d[%c0] : {t}")
    elif later == "read-other-view":
        body.append(f"  %r = memref.load %w[%c0] : {w}")
    elif later == "dim":
        body.append(f"  %n = memref.dim %d, %c0 : {t}")
    text = "\n".join([f"func.func @storage(%d: {t}, %x: f32) {{", *body, "  return", "}", ""])
    return text, [f"storage {kind}{release} then {later}"]


# --------------------------------------------------------------------------
# Running and checking
# --------------------------------------------------------------------------


def _run(cmd: list[str], timeout: float) -> tuple[int | None, str, str]:
    """(exit status, stdout, stderr); status None if it timed out."""
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return None, "", ""
    return proc.returncode, proc.stdout, proc.stderr


def check_run(opt: str, path: str, args: list[str], timeout: float) -> tuple[str, str | None]:
    """Runs offload-opt on `path`: ("transformed" or "diagnosed", None) when
    the properties hold, else ("broken", the property it breaks)."""
    base = [opt, path, "-allow-unregistered-dialect", "--mlir-print-op-on-diagnostic=false",
            "--verify-each=false"]
    status, out, err = _run(base + args, timeout)
    if status is None:
        return "broken", f"hang: no exit within {timeout:g} s"
    if status < 0:
        return "broken", f"crash: killed by signal {-status}"
    for marker in CRASH_MARKERS:
        if marker in err:
            return "broken", f"crash: {marker!r} in stderr"
    if status != 0:
        if "error:" in err:
            return "diagnosed", None
        return "broken", f"exit {status} without an error diagnostic"
    # The output must parse, verify, and print back the same.
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(out)
    try:
        status2, again, err2 = _run([opt, f.name, "-allow-unregistered-dialect"], timeout)
    finally:
        os.unlink(f.name)
    if status2 is None or status2 != 0:
        return "broken", f"output does not re-verify: {(err2 or 'timeout').strip()[:500]}"
    if again.strip() != out.strip():
        return "broken", "output prints differently after a round trip"
    return "transformed", None


def fuzz_one(opt: str, seed: int, index: int, timeout: float, work: str,
             failures: str | None, outcomes: collections.Counter | None = None) -> list[str]:
    """Fuzzes input `index` of `seed` (a mutated step, every fourth a buffer
    module); returns the problems found and counts each run's outcome in
    `outcomes`."""
    if index % 4 == 3:
        text, applied = buffer_module(seed, index)
        pipelines = BUFFER_PIPELINES
    else:
        text, applied = mutate_step(seed, index)
        pipelines = STEP_PIPELINES
        if "func-constant" in applied:
            # Upstream one-shot-bufferize retypes functions at their
            # boundaries but not the func.constant naming them (invalid IR
            # without any offload pass), so those inputs skip it.
            pipelines = [p for p in pipelines
                         if not any(a.startswith("--one-shot-bufferize") for a in p)]
    path = os.path.join(work, f"fuzz_{seed}_{index}.mlir")
    with open(path, "w") as f:
        f.write(text)
    problems = []
    for args in pipelines:
        outcome, problem = check_run(opt, path, args, timeout)
        if outcomes is not None:
            outcomes[outcome] += 1
        if problem:
            problems.append(f"input {index} ({', '.join(applied)}) with {' '.join(args)}: "
                            f"{problem}")
    if problems and failures:
        os.makedirs(failures, exist_ok=True)
        keep = os.path.join(failures, os.path.basename(path))
        shutil.copyfile(path, keep)
        with open(keep + ".txt", "w") as f:
            for p in problems:
                f.write(p + "\n")
            f.write(f"reproduce: {opt} {keep} -allow-unregistered-dialect <pipeline>\n")
    return problems


def fuzz(opt: str, seed: int, count: int | None, seconds: float | None, timeout: float,
         jobs: int, failures: str | None, log=print,
         outcomes: collections.Counter | None = None) -> tuple[int, list[str]]:
    """Fuzzes inputs 0, 1, ... of `seed` until `count` are done or `seconds`
    have passed; returns how many inputs ran and the problems found, and
    counts the runs' outcomes in `outcomes`."""
    deadline = time.monotonic() + seconds if seconds else None
    problems: list[str] = []
    done = 0
    with tempfile.TemporaryDirectory(prefix="offload-fuzz-") as work, \
            concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        index = 0
        while (count is None or index < count) and \
                (deadline is None or time.monotonic() < deadline):
            batch = range(index, index + jobs if count is None else min(index + jobs, count))
            for found in pool.map(
                    lambda i: fuzz_one(opt, seed, i, timeout, work, failures, outcomes), batch):
                for p in found:
                    log("PROBLEM: " + p)
                problems += found
            done += len(batch)
            index += len(batch)
    return done, problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--offload-opt", default="./build/bin/offload-opt")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, help="inputs to run (default: until --minutes)")
    p.add_argument("--minutes", type=float, help="stop after this long")
    p.add_argument("--timeout", type=float, default=60, help="seconds per offload-opt run")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument("--failures-dir", help="keep failing inputs here")
    args = p.parse_args(argv)
    if args.count is None and args.minutes is None:
        args.count = 100
    opt = shutil.which(args.offload_opt) or args.offload_opt
    if not (os.path.isfile(opt) and os.access(opt, os.X_OK)):
        print(f"error: offload-opt not found at {args.offload_opt!r}", file=sys.stderr)
        return 2
    start = time.monotonic()
    outcomes: collections.Counter = collections.Counter()
    done, problems = fuzz(opt, args.seed, args.count,
                          args.minutes * 60 if args.minutes else None, args.timeout, args.jobs,
                          args.failures_dir, outcomes=outcomes)
    print(f"fuzz-steps: seed {args.seed}, {done} inputs, {sum(outcomes.values())} runs "
          f"({outcomes['transformed']} transformed and re-verified, {outcomes['diagnosed']} "
          f"diagnosed), {time.monotonic() - start:.0f} s, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
