//===- OffloadToLLVM.h - Lowering the copies to offload_rt -------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_CONVERSION_OFFLOADTOLLVM_OFFLOADTOLLVM_H
#define OFFLOAD_CONVERSION_OFFLOADTOLLVM_OFFLOADTOLLVM_H

namespace mlir {
class DialectRegistry;
class LLVMTypeConverter;
class RewritePatternSet;
class TypeConverter;

namespace offload {

/// Maps the `#offload.host` memory space to LLVM address space 0: a host
/// buffer's descriptor is an ordinary memref descriptor.
void populateOffloadMemorySpaceConversion(TypeConverter &typeConverter);

/// Patterns lowering offload.offload_buffer, offload.load_buffer and
/// memref.dealloc of host buffers to calls of the offload_rt MLIR wrappers
/// (offload_rt_mlir_*; see include/offload_rt/offload_rt.h).
void populateOffloadToLLVMConversionPatterns(LLVMTypeConverter &typeConverter,
                                             RewritePatternSet &patterns);

/// Lets --convert-to-llvm lower the offload dialect.
void registerConvertOffloadToLLVMInterface(DialectRegistry &registry);

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_CONVERSION_OFFLOADTOLLVM_OFFLOADTOLLVM_H
