# -*- Python -*-

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "OFFLOAD"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.offload_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%offload_libs", config.offload_libs_dir))
config.substitutions.append(("%offload_src", config.offload_src_root))

# From traced IR to the LLVM dialect: the pipeline documented in
# docs/lowering.md, after the (optional) offload pipeline.
# The same in two halves, for tests that run passes between bufferization
# and the lowering (-buffer-deallocation-pipeline).
config.substitutions.append(
    (
        "%{bufferize}",
        "--convert-elementwise-to-linalg"
        " --one-shot-bufferize='bufferize-function-boundaries"
        " use-encoding-for-memory-space"
        " function-boundary-type-conversion=identity-layout-map'",
    )
)
config.substitutions.append(
    (
        "%{lower}",
        "--convert-offload-to-llvm --convert-linalg-to-loops"
        " --convert-scf-to-cf --expand-strided-metadata --lower-affine"
        " --finalize-memref-to-llvm=use-generic-functions --convert-math-to-llvm"
        " --convert-arith-to-llvm --convert-func-to-llvm"
        " --convert-cf-to-llvm --reconcile-unrealized-casts",
    )
)
config.substitutions.append(
    (
        "%{to-llvm}",
        "--convert-elementwise-to-linalg"
        " --one-shot-bufferize='bufferize-function-boundaries"
        " use-encoding-for-memory-space"
        " function-boundary-type-conversion=identity-layout-map'"
        " --convert-offload-to-llvm --convert-linalg-to-loops"
        " --convert-scf-to-cf --expand-strided-metadata --lower-affine"
        " --finalize-memref-to-llvm=use-generic-functions --convert-math-to-llvm"
        " --convert-arith-to-llvm --convert-func-to-llvm"
        " --convert-cf-to-llvm --reconcile-unrealized-casts",
    )
)
# JIT execution against offload_rt: the host-simulation backend unless
# `--param offload_rt_backend=cuda`.
config.environment["OFFLOAD_RT_BACKEND"] = lit_config.params.get(
    "offload_rt_backend", "sim")
config.substitutions.append(
    (
        "%mlir_runner",
        "%s -e main -entry-point-result=void -shared-libs=%s,%s,%s"
        % (
            os.path.join(config.llvm_tools_dir, "mlir-runner"),
            os.path.join(config.offload_libs_dir, "Runtime",
                         "liboffload_rt" + config.llvm_shlib_ext),
            os.path.join(config.llvm_tools_dir, "..", "lib",
                         "libmlir_c_runner_utils" + config.llvm_shlib_ext),
            os.path.join(config.llvm_tools_dir, "..", "lib",
                         "libmlir_runner_utils" + config.llvm_shlib_ext),
        ),
    )
)

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
# not, count and FileCheck come from the LLVM tools directory.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.offload_tools_dir, config.llvm_tools_dir]
tools = [
    "offload-opt",
    # Debian's mlir-opt, the host tool the plugin is loaded into.
    ToolSubst("host-mlir-opt", config.host_mlir_opt),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The mlir-opt plugin is built only when the project links libMLIR.so
# (MLIR_LINK_MLIR_DYLIB), like the host tool.
if config.offload_has_plugin:
    config.available_features.add("plugin")
