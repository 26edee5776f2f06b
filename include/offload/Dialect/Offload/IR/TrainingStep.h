//===- TrainingStep.h - The forward/backward contract -----------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// A training step is a forward function carrying `offload.backward = @bwd` and
// `offload.num_outputs = N : i64`. Forward results past the first N are saved
// for backward and arrive, in order and with equal types, as the leading
// arguments of @bwd. TrainingStep checks that contract and gives names to its
// parts, so passes never index results and arguments by hand.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_OFFLOAD_IR_TRAININGSTEP_H
#define OFFLOAD_DIALECT_OFFLOAD_IR_TRAININGSTEP_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/BitVector.h"

#include <string>

namespace mlir {
namespace offload {

class TrainingStep {
public:
  /// Checks the contract on `forward` (which must carry `offload.backward`)
  /// and emits a diagnostic at the offending location on failure. With
  /// `requireBodies`, both functions must also have what the passes need: a
  /// single-block body in an SSACFG region (no graph region), ending in a
  /// return-like terminator with one operand of each result's type.
  /// Symbol lookups go through `tables` where given (a verifier's cache).
  static FailureOr<TrainingStep> get(FunctionOpInterface forward,
                                     bool requireBodies = true,
                                     SymbolTableCollection *tables = nullptr);

  /// The part of the contract `forward`'s own attributes state, without
  /// looking at backward: `offload.backward` is a flat symbol reference,
  /// `offload.num_outputs` an i64 within the result count.
  static LogicalResult verifyAttributes(FunctionOpInterface forward);

  /// Every training step in `module`, in function order. Fails (with
  /// diagnostics) if any forward function breaks the contract.
  static LogicalResult collect(ModuleOp module,
                               SmallVectorImpl<TrainingStep> &steps);

  /// True if `op` is a forward function (carries `offload.backward`).
  static bool isForward(Operation *op);

  FunctionOpInterface getForward() const { return forward; }
  FunctionOpInterface getBackward() const { return backward; }
  unsigned getNumOutputs() const { return numOutputs; }
  unsigned getNumSaved() const;

  /// The forward function's return-like terminator.
  Operation *getForwardReturn() const;
  /// The value returned as saved result `i` (0-based among saved results).
  Value getSavedValue(unsigned i) const;
  /// The index of saved result `i` among all forward results.
  unsigned getSavedResultIndex(unsigned i) const { return numOutputs + i; }
  /// The backward argument that receives saved result `i`.
  BlockArgument getBackwardArgument(unsigned i) const;

  /// The calls of forward and of backward in the module. Fails, with why in
  /// `why`, when a use of either symbol is not a call (a `func.constant`),
  /// but for forward's `offload.backward`, or when the uses cannot all be
  /// listed (an unregistered op may hold a symbol table).
  LogicalResult getCalls(SmallVectorImpl<CallOpInterface> &forwardCalls,
                         SmallVectorImpl<CallOpInterface> &backwardCalls,
                         std::string &why) const;

  /// Per saved value (by saved index): why it cannot become host resident,
  /// or "". offload-insert-offloads retypes forward's result, backward's
  /// argument and the calls of both; a caller that reads the value, passes
  /// backward something else, or a use of the functions that is not a call
  /// would no longer match.
  SmallVector<std::string> getRetypeBlockers() const;

  /// Drops the saved results in `dropped` (indices among all forward
  /// results) from the step's interface: forward's return and results,
  /// backward's arguments, and the calls of both. The caller checks that the
  /// interface may shrink (canShrinkSavedInterface, SharedStorage.h).
  ///
  /// offload-plan's placements (`offload.placement`) at the top level of
  /// forward and backward are renumbered to match: a dropped saved value
  /// becomes `carrierOf[i]` (a saved index, the value whose copy now carries
  /// it) where that is given and >= 0, else leaves them; a placement left
  /// naming nothing is erased. Indices the step does not have stay as they
  /// are (offload-schedule-copies drops them with a remark).
  void dropSavedResults(const llvm::BitVector &dropped,
                        ArrayRef<int> carrierOf = {}) const;

private:
  TrainingStep(FunctionOpInterface forward, FunctionOpInterface backward,
               unsigned numOutputs)
      : forward(forward), backward(backward), numOutputs(numOutputs) {}

  // Op handles are cheap, non-owning references; `mutable` lets the const
  // accessors call the interfaces' non-const methods.
  mutable FunctionOpInterface forward;
  mutable FunctionOpInterface backward;
  unsigned numOutputs;
};

/// Whether `value` is an argument of forward that its caller donates
/// (`offload.donated`): the step holds its only reference.
bool isDonatedArgument(Value value);

/// The part of the contract that needs the symbol table: if `forward`
/// carries `offload.backward`, the backward function exists and matches
/// (TrainingStep::get), and its body reads host values only where allowed.
/// SymbolUserOpInterface::verifySymbolUses of the function ops calls it
/// (registerTrainingStepSymbolUseModels).
LogicalResult verifyTrainingStepSymbolUses(FunctionOpInterface forward,
                                           SymbolTableCollection &tables);

/// Checks that every host-resident value in `region` is read only by
/// `offload.load_to_gpu`, `offload.load_start`, a terminator, or a call;
/// emits an error at the first offending user otherwise.
LogicalResult verifyHostValueUses(Region &region);

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_DIALECT_OFFLOAD_IR_TRAININGSTEP_H
