"""``tl-ascend``'s launcher: the installed command is ``tl_ascend:main``.

It is a package of its own because importing anything under ``ascend_backend`` runs
``ascend_backend/__init__.py``, which imports tilelang and torch to register the target (about 7
seconds). The launcher loads ascend_backend/cli_parser.py (standard library only) by its file
path, so ``--help``, ``--version`` and ``tl-ascend COMMAND --help`` answer at once; only a command
that runs imports the package (ascend_backend.cli.dispatch).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType


def _cli_parser() -> ModuleType:
    """ascend_backend/cli_parser.py, loaded without importing ascend_backend (``find_spec`` of a
    top-level package locates it without running its ``__init__``)."""
    name = "_tl_ascend_cli_parser"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec("ascend_backend")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("tl-ascend: the ascend_backend package is not installed (pip install tilelang-ascendc)")
    path = os.path.join(list(spec.submodule_search_locations)[0], "cli_parser.py")
    file_spec = importlib.util.spec_from_file_location(name, path)
    assert file_spec is not None and file_spec.loader is not None
    module = importlib.util.module_from_spec(file_spec)
    sys.modules[name] = module
    file_spec.loader.exec_module(module)
    return module


def main(argv: Sequence[str] | None = None) -> int:
    """``tl-ascend``: parse the command line, then run the command (docs/cli.md)."""
    args = _cli_parser().parse(argv)
    if isinstance(args, int):
        return args
    from ascend_backend.cli import dispatch

    return dispatch(args)
