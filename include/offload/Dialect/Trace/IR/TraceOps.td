//===- TraceOps.td - Framework-traced ops ------------------*- tablegen -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_TRACE_TRACEOPS_TD
#define OFFLOAD_DIALECT_TRACE_TRACEOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "offload/Interfaces/StorageViewOpInterface.td"
include "offload/Interfaces/TracedOpInterface.td"

def Trace_Dialect : Dialect {
  let name = "trace";
  let cppNamespace = "::mlir::trace";
  let summary = "Carrier for framework-traced graphs (PyTorch FX / ATen)";
  let description = [{
    One generic op, `trace.op`, stands for any framework op: it names the
    framework op (`aten.mm.default`), keeps the FX node name, and holds the
    call's non-tensor arguments as attributes, with `#trace.operand<i>`
    marking where tensor operand `i` goes. `trace.view` is the same for
    ops whose result aliases their source (`aten.view`, `aten.t`, ...); it
    implements the project's `StorageViewOpInterface`. Both implement
    `TracedOpInterface`, through which the analyses read `target`, `node`,
    `args` and `kwargs`. A `trace.op` is free of side effects unless it lists
    the operands it mutates in `mutates` or draws random numbers (`rng`).
    `!trace.generator` is a framework random-number generator passed to the
    graph as an input.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

class Trace_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Trace_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Trace_OperandAttr : Trace_Attr<"Operand", "operand"> {
  let summary = "Position of a tensor operand inside a call's arguments";
  let description = [{
    `#trace.operand<i>` inside `args` or `kwargs` stands for the op's
    operand `i`, so nested argument structures (`aten.cat([a, b], 1)`)
    survive the round trip: `args = [[#trace.operand<0>, #trace.operand<1>], 1]`.
  }];
  let parameters = (ins "int64_t":$index);
  let assemblyFormat = "`<` $index `>`";
}

def Trace_PyObjectAttr : Trace_Attr<"PyObject", "py"> {
  let summary = "A framework constant that is not a plain number or string";
  let description = [{
    Holds the source spelling of a framework constant such as a dtype, a
    device or a memory format: `#trace.py<"torch.bfloat16">`.
  }];
  let parameters = (ins StringRefParameter<>:$repr);
  let assemblyFormat = "`<` $repr `>`";
}

class Trace_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Trace_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Trace_GeneratorType : Trace_Type<"Generator", "generator"> {
  let summary = "A framework random-number generator";
  let description = [{
    A generator object the traced graph receives as an input (a
    `torch.Generator` placeholder) and hands to the ops that draw from it,
    such as the `rng_state` of PyTorch's
    `higher_order.graphsafe_run_with_rng_state`. It is no tensor: it has no
    device storage, and the offload passes never save, copy or free it. The
    ops that draw from it say so with `rng` (see `trace.op`).

    Example:

    ```mlir
    func.func @forward(%x: tensor<8xf32>, %gen: !trace.generator)
    ```
  }];
}

class Trace_Op<string mnemonic, list<Trait> traits = []>
    : Op<Trace_Dialect, mnemonic, traits>;

def Trace_OpOp : Trace_Op<"op", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>, TracedOpInterface]> {
  let summary = "A framework op, named by its target";
  let description = [{
    Calls the framework op `target` on `inputs`. `node` is the name of the
    FX node it came from; `args` and `kwargs` hold the call's arguments,
    with `#trace.operand<i>` marking tensor operands; `mutates` lists the
    operands the op writes in place. Ops without `mutates` have no side
    effects; ops with it write the default resource, so no pass moves them
    or moves other effects across them. `rng` marks an op that draws random
    numbers: it reads and advances random-number state (the framework's
    global generator, or a `!trace.generator` operand), so it reads and
    writes the `trace.random_state` resource, and no pass reorders two such
    ops (their results depend on their order) or moves other effects on that
    resource across them; copies and ops without effects still cross them.
    `recomputed` marks a backward op
    that computes again what a forward op computed (the framework's
    partitioner chose to recompute the value instead of saving it); the
    report lists these ops and their predicted time.

    Example:

    ```mlir
    %0 = trace.op "aten.mm.default"(%a, %b)
        {node = "mm", args = [#trace.operand<0>, #trace.operand<1>]}
        : (tensor<8x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<8x1024xbf16>
    ```
  }];
  let arguments = (ins
    StrAttr:$target,
    Variadic<AnyType>:$inputs,
    OptionalAttr<StrAttr>:$node,
    OptionalAttr<ArrayAttr>:$args,
    OptionalAttr<DictionaryAttr>:$kwargs,
    OptionalAttr<DenseI64ArrayAttr>:$mutates,
    UnitAttr:$rng,
    UnitAttr:$recomputed);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $target `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)
  }];
  let hasVerifier = 1;
}

def Trace_ViewOp : Trace_Op<"view", [
    Pure, TracedOpInterface,
    DeclareOpInterfaceMethods<StorageViewOpInterface>]> {
  let summary = "A framework op whose result aliases its source";
  let description = [{
    Like `trace.op`, for framework ops that return a view of their first
    tensor argument (`aten.view`, `aten.t`, `aten.transpose`,
    `aten.slice`, ...). The result shares storage with `source`, so it keeps
    the source's memory alive.

    Example:

    ```mlir
    %1 = trace.view "aten.t.default"(%w) {node = "t"}
        : (tensor<1024x4096xbf16>) -> tensor<4096x1024xbf16>
    ```
  }];
  let arguments = (ins
    StrAttr:$target,
    AnyType:$source,
    OptionalAttr<StrAttr>:$node,
    OptionalAttr<ArrayAttr>:$args,
    OptionalAttr<DictionaryAttr>:$kwargs);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $target `(` $source `)` attr-dict `:` functional-type($source, $result)
  }];
  let hasVerifier = 1;
}

#endif // OFFLOAD_DIALECT_TRACE_TRACEOPS_TD
