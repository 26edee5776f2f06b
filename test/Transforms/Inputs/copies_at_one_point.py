"""Prints a training step whose N saved values are all last read by one op in
forward and all first read by one op in backward, so all their offloads, and
all their loads, are issued at one point: the input of
test/Transforms/copies-at-one-point.mlir."""

import sys

n = int(sys.argv[1])
t = "tensor<16xf32>"
values = ", ".join(f"%a{i}" for i in range(n))
saved = ", ".join(f"%s{i}" for i in range(n))
print(f"func.func @forward(%x: {t}) -> ({', '.join([t] * (n + 1))})")
print("    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {")
for i in range(n):
    print(f"  %a{i} = math.exp %x : {t}")
print(f'  %o = trace.op "aten.sum.default"({values}) : ({", ".join([t] * n)}) -> {t}')
print(f"  return %o, {values} : {', '.join([t] * (n + 1))}")
print("}")
print(f"func.func @backward({', '.join(f'%s{i}: {t}' for i in range(n))}, %g: {t}) -> {t} {{")
print(f'  %b = trace.op "aten.sum.default"({saved}, %g) : ({", ".join([t] * (n + 1))}) -> {t}')
print(f"  return %b : {t}")
print("}")
