//===- TracedOpInterface.td - Ops that stand for framework calls -*- tablegen -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_INTERFACES_TRACEDOPINTERFACE_TD
#define OFFLOAD_INTERFACES_TRACEDOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def TracedOpInterface : OpInterface<"TracedOpInterface"> {
  let cppNamespace = "::mlir::offload";
  let description = [{
    An op that stands for one call of a framework op recorded by a tracer
    (a PyTorch FX node calling an ATen op): it names the framework op and the
    graph node, and keeps the call's non-tensor arguments. The analyses read
    traced ops through this interface only (the cost model's FLOP counts,
    the producer names in the report and in `deny-ops`), so a carrier
    dialect other than `trace` joins by implementing it. `trace.op` and
    `trace.view` implement it with their attributes of the same names.
  }];

  let methods = [
    InterfaceMethod<
      "The framework op this op calls, e.g. `aten.mm.default`.",
      "::llvm::StringRef", "getTarget">,
    InterfaceMethod<
      "The name of the graph node the op came from, if it was recorded.",
      "::std::optional<::llvm::StringRef>", "getNode">,
    InterfaceMethod<[{
        The call's positional arguments, with the carrier's markers for the
        tensor operands (`#trace.operand<i>` in the trace dialect); null if
        they were not recorded.
      }],
      "::mlir::ArrayAttr", "getArgsAttr">,
    InterfaceMethod<[{
        The call's keyword arguments, with the same markers; null if they
        were not recorded.
      }],
      "::mlir::DictionaryAttr", "getKwargsAttr">,
  ];

  let extraClassDeclaration = [{
    /// The argument the call passes as keyword `name`, or else as positional
    /// argument `position`; null if it passes neither.
    ::mlir::Attribute getArgument(::llvm::StringRef name,
                                  ::std::optional<unsigned> position);
  }];
}

#endif // OFFLOAD_INTERFACES_TRACEDOPINTERFACE_TD
