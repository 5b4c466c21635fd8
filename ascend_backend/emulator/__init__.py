"""CPU emulator of the Ascend C API subset used by tilelang-ascendc (clean-room).

``run_source(source, kernel, args, block_dim, arch="dav-3510", ...)`` compiles an Ascend C
source with g++ against the emulator headers and runs it on torch CPU tensors, returning a
:class:`Report` (races, flag errors, deadlocks, out-of-bounds accesses, op counts and the
timing model's estimate). See docs/emulator.md.
"""

from .cache import EmulatorEnvironmentError
from .report import EmulatorCompileError, EmulatorError, Report
from .runner import compile_source, parse_kernels, run_source

__all__ = ["EmulatorCompileError", "EmulatorEnvironmentError", "EmulatorError", "Report",
           "compile_source", "parse_kernels", "run_source"]
