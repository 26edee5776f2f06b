"""Prints a training step of N tiny saved values: forward is a chain of N
exps, each result saved; backward reads them in reverse, one multiply each.
The kept offloads fill the H2D link, so past them plan=hidden drops every
candidate left: the input of test/Transforms/plan-hidden-tiny-values.mlir
(test/Unit/PlanHiddenTest.cpp builds the same step)."""

import sys

n = int(sys.argv[1])
t = "tensor<16xf32>"
results = ", ".join([t] * (n + 1))
print(f"func.func @forward(%x: {t}) -> ({results})")
print("    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {")
previous = "%x"
for i in range(n):
    print(f"  %a{i} = math.exp {previous} : {t}")
    previous = f"%a{i}"
saved = ", ".join(f"%a{i}" for i in range(n))
print(f"  return {previous}, {saved} : {results}")
print("}")
arguments = ", ".join(f"%s{i}: {t}" for i in range(n))
print(f"func.func @backward({arguments}, %g: {t}) -> {t} {{")
previous = "%g"
for i in reversed(range(n)):
    print(f"  %b{i} = arith.mulf {previous}, %s{i} : {t}")
    previous = f"%b{i}"
print(f"  return {previous} : {t}")
print("}")
