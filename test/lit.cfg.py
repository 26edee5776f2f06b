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
