"""Runs every pass of offload-opt, alone and after the passes it expects,
on each case of a -split-input-file test, with --verify-each=false, and
checks the contract of each run (python/tools/fuzz_steps.py, check_run):
it exits 0 and its output parses and verifies again, or it exits non-zero
with an error diagnostic; never a crash or a hang. Prints one line per
run, `<case> <passes>: transformed|diagnosed`, and exits 1 on any other
outcome, after printing why.

    valid_or_diagnosed.py <offload-opt> <offload source root> <test file>
"""

import os
import re
import sys
import tempfile

opt, source_root, path = sys.argv[1:4]
sys.path.insert(0, os.path.join(source_root, "python"))
from tools import fuzz_steps  # noqa: E402

BUFFERIZE = ("--one-shot-bufferize=bufferize-function-boundaries use-encoding-for-memory-space "
             "function-boundary-type-conversion=identity-layout-map")
FIND = "--offload-find-saved-activations=min-bytes=0"
PASSES = [
    [FIND],
    ["--offload-insert-recomputes"],
    ["--offload-plan=plan=hidden"],
    ["--offload-plan=budget=0.9"],
    ["--offload-insert-offloads"],
    [FIND, "--offload-insert-offloads"],
    [FIND, "--offload-insert-offloads", "--offload-reorder-backward=all-views=true"],
    [FIND, "--offload-insert-offloads", "--offload-insert-loads"],
    [FIND, "--offload-insert-offloads", "--offload-insert-loads", "--offload-schedule-copies"],
    ["--offload-report"],
    ["--offload-inline-recomputes"],
    ["--offload-activations=min-bytes=0 plan=all"],
    ["--offload-activations=min-bytes=0"],
    ["--convert-trace-to-calls"],
    ["--convert-offload-to-llvm"],
    ["--offload-activations=min-bytes=0 plan=all", "--convert-trace-to-calls",
     "--convert-elementwise-to-linalg", BUFFERIZE, "--convert-offload-to-llvm"],
]

text = open(path).read()
broken = 0
with tempfile.TemporaryDirectory() as work:
    for index, case in enumerate(text.split("\n// -----\n")):
        name = re.search(r"^\S*(?:func|module) @([\w.]+)", case, re.M).group(1)
        case_path = os.path.join(work, f"{name}.mlir")
        with open(case_path, "w") as f:
            f.write(case)
        for passes in PASSES:
            outcome, problem = fuzz_steps.check_run(
                opt, case_path, passes, timeout=60)
            spelled = " ".join(p.split("=")[0].lstrip("-") for p in passes)
            print(f"{name} {spelled}: {outcome}")
            if problem:
                print(f"  {problem}")
                broken += 1
print(f"{broken} broken")
sys.exit(1 if broken else 0)
