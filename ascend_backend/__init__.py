"""tilelang-ascendc: the "ascendc" target for TileLang.

``import ascend_backend`` registers the target with tilelang, so that
``tilelang.lower(func, target="ascendc")`` returns Ascend C, and provides
``ascend_backend.compile`` (a callable kernel on the emulator or an NPU) and
``ascend_backend.jit`` (a drop-in for ``tilelang.jit``).
"""

from __future__ import annotations

__version__ = "0.1.0"

import os as _os

# In a source checkout (not an installed wheel) passes/ and templates/ sit beside this package;
# make them importable as ascend_backend.passes / ascend_backend.templates, as in the wheel.
_top = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(_os.path.dirname(__file__), "passes")) and _os.path.isfile(
        _os.path.join(_top, "passes", "__init__.py")):
    __path__.append(_top)  # noqa: F821 - the package's own __path__

# Statement spans (the DSL line of every op) are recorded only when this is set before a
# kernel is built; errors point at the user's line with it.
from tilelang.env import env as _tl_env  # noqa: E402

_tl_env.TILELANG_ENABLE_IR_SPAN = "1"

from .arch import ARCHES, DEFAULT_ARCH, get_arch  # noqa: E402
from .errors import (  # noqa: E402
    AlignmentError,
    AscendCompileError,
    DslError,
    EventIdError,
    InternalCompilerError,
    MemoryBudgetError,
    RuntimeUnavailableError,
    ShapeError,
    TargetError,
    UnsupportedError,
)
from .target import register as _register  # noqa: E402

_register()

from .jit import jit  # noqa: E402
from .kernel import AscendKernel, compile, lower  # noqa: E402, A004

__all__ = [
    "ARCHES", "DEFAULT_ARCH", "get_arch", "compile", "jit", "lower", "AscendKernel",
    "AscendCompileError", "UnsupportedError", "AlignmentError", "MemoryBudgetError", "TargetError",
    "ShapeError", "DslError", "EventIdError", "RuntimeUnavailableError", "InternalCompilerError", "__version__",
]
