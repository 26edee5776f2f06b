//===- TracedOpInterface.cpp - Ops that stand for framework calls ---------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Interfaces/TracedOpInterface.h"

using namespace mlir;
using namespace mlir::offload;

#include "offload/Interfaces/TracedOpInterface.cpp.inc"

Attribute TracedOpInterface::getArgument(StringRef name,
                                         std::optional<unsigned> position) {
  if (DictionaryAttr kwargs = getKwargsAttr())
    if (Attribute value = kwargs.get(name))
      return value;
  ArrayAttr args = getArgsAttr();
  if (!args || !position || *position >= args.size())
    return nullptr;
  return args[*position];
}
