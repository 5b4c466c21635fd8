"""The command line of ``tl-ascend``: its argparse parser, and nothing else.

This module imports only the standard library and nothing of the package, so that ``tl-ascend
--help``, ``--version`` and ``tl-ascend COMMAND --help`` answer without importing tilelang and
torch (seconds): the ``tl_ascend`` launcher loads this file by its path, before anything imports
``ascend_backend`` (whose ``__init__`` registers the target with tilelang). The commands
themselves are in ascend_backend/cli.py; each subparser names its command in ``handler``.

The two facts of the package the help text needs, the stage names (``pipeline.STAGES``) and the
cache's default cap (``buildcache.DEFAULT_MAX_MB``), are read from those modules' source files
(their literal assignments, with ``ast``) rather than imported.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
from collections.abc import Sequence

ARCH_CHOICES = ("dav-3510", "dav-c220")
EXTRA_VIEWS = ("memory", "sync")
def _constant(module: str, name: str):
    """A literal constant of a module of the package, read from its source beside this file without
    importing it (one truth: the module's own assignment)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{module}.py")
    with open(path) as fh:
        tree = ast.parse(fh.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{path} assigns no literal {name}")


#: ascend_backend.pipeline.STAGES, in pipeline order.
STAGES: list[str] = list(_constant("pipeline", "STAGES"))
#: ascend_backend.buildcache.DEFAULT_MAX_MB.
DEFAULT_MAX_MB: int = _constant("buildcache", "DEFAULT_MAX_MB")


def add_cache_parser(sub, fmt) -> None:
    """The ``cache`` subcommand (its own function: other commands are added beside it)."""
    sp = sub.add_parser(
        "cache", formatter_class=fmt, help="show or prune the build cache (emulator and NPU builds)",
        description="The build cache holds the emulator's runtime libraries, precompiled headers and "
                    "kernels, and NPU kernel libraries, under TL_ASCEND_CACHE_DIR (default "
                    "~/.cache/tilelang-ascendc). It is kept under TL_ASCEND_CACHE_MAX_MB megabytes "
                    f"(default {DEFAULT_MAX_MB}) by removing the least recently used entries after each build.",
        epilog="examples:\n"
               "  tl-ascend cache info\n"
               "  tl-ascend cache prune                  # orphaned temps, then down to the cap\n"
               "  tl-ascend cache prune --max-size 200M  # down to 200 MB (least recently used first)\n"
               "  tl-ascend cache prune --all            # every build (they are rebuilt on demand)\n\n"
               "exit codes: 0 done; 2 a usage error or a cache that cannot be read or written "
               "(the message says what to do).\n")
    csub = sp.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    csub.add_parser("info", help="location, size, cap, entries and bytes by kind")
    pp = csub.add_parser("prune", help="remove orphaned temps, then least recently used entries down to a size")
    g = pp.add_mutually_exclusive_group()
    g.add_argument("--all", action="store_true", help="remove every build (rebuilt on demand)")
    g.add_argument("--max-size", metavar="SIZE",
                   help="prune down to SIZE (500M, 2G; a plain number is megabytes); default: the cap")
    sp.set_defaults(handler="cache")




def add_tune_parser(sub, fmt) -> None:
    """The ``tune`` subcommand."""
    sp = sub.add_parser(
        "tune", formatter_class=fmt, help="rank configurations of a kernel factory by modelled time",
        description="Compile a kernel factory of FILE with each configuration (keyword arguments), emulate it and "
                    "rank the configurations by the timing model's cycles (MODELLED, not measured; "
                    "docs/timing-model.md). Configurations run in parallel worker processes; results are cached "
                    "under TL_ASCEND_CACHE_DIR/tune, keyed by the generated code and the emulator.",
        epilog="the configurations: --space K=V1,V2,... (repeatable: every combination), or those of a factory "
               "decorated with @ascend_backend.autotune.autotune(configs=...). --param K=V fixes the other "
               "arguments (the problem).\n\nexamples:\n"
               "  tl-ascend tune examples/gemm.py --kernel matmul --param M=4096 --param N=4096 --param K=4096 "
               "--space block_M=128,256 --space block_N=128,256\n"
               "  tl-ascend tune examples/attention.py --kernel flashattn --param seq_q=4096 --param seq_kv=4096 "
               "--param dim=128 --param num_stages=2 --space block_M=128,256 --space block_N=64,128\n\n"
               "exit codes: 0 a best configuration; 1 none compiled and ran; 2 user error; 3 internal compiler "
               "error.\n")
    sp.add_argument("file", metavar="FILE.py", help="a Python file defining the kernel factory")
    sp.add_argument("--arch", choices=ARCH_CHOICES, default="dav-3510",
                    help="Ascend AI-core architecture to model (default: dav-3510)")
    sp.add_argument("--kernel", metavar="NAME", help="the factory to tune (default: the only one)")
    sp.add_argument("--param", metavar="K=V", action="append", default=[],
                    help="a keyword argument shared by every configuration (repeatable)")
    sp.add_argument("--space", metavar="K=V1,V2", action="append", default=[],
                    help="values to try for one keyword argument (repeatable: every combination)")
    sp.add_argument("--blocks", choices=("first_wave", "all"), default="first_wave",
                    help="emulate the first wave of blocks and scale by the waves (default), or every block "
                         "(when blocks differ, e.g. causal attention)")
    sp.add_argument("--workers", type=int, default=None, help="worker processes (default: min(configs, CPUs, 2))")
    sp.add_argument("--top", type=int, default=0, help="show only the best N configurations")
    sp.add_argument("--no-cache", action="store_true", help="measure every configuration again")
    sp.add_argument("--no-progress", action="store_true", help="no progress bar")
    sp.set_defaults(handler="tune")


# ---------------------------------------------------------------------------------------------
# Argument parser
# ---------------------------------------------------------------------------------------------
_SELECTION_HELP = """\
kernel selection:
  --kernel NAME picks the top-level object NAME of FILE: a PrimFunc, a function returning one,
  a @tilelang.jit function (its PrimFunc via JITImpl.get_tir, not compiled for CUDA), an
  @ascend_backend.jit factory, or a function returning an ascend_backend.testing.Case.
  Without --kernel: example()'s Case if FILE has example(); else the single top-level
  function that returns a PrimFunc with its defaults (+ --param); else the candidates are
  listed and the exit code is 2.
  --param K=V (repeatable) passes keyword arguments to the factory; values are parsed as
  bool (true/false), none, int, float, else a string.
"""

_EXIT_HELP = """\
exit codes: 0 ok; 1 mismatch, emulator error or bisheng failure; 2 user error (usage, file,
kernel selection, a kernel the compiler rejects, with file:line; a Case or reference that does
not fit; an unwritable output path; an environment fault: no C++ compiler, an unusable cache
directory, a full disk); 3 internal compiler error; 130 interrupted.
"""


def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(
        prog="tl-ascend", formatter_class=fmt,
        description="Inspect, run (on the CPU emulator) and build TileLang kernels for the ascendc target.",
        epilog="examples:\n"
               "  tl-ascend inspect examples/gemm.py\n"
               "  tl-ascend inspect examples/gemm.py --kernel matmul --param M=512 --param trans_A=true "
               "--stage frontend insert_sync\n"
               "  tl-ascend run examples/elementwise.py --timeline add.svg\n"
               "  tl-ascend build examples/gemm.py --arch dav-c220 --out build/gemm\n\n"
               "`tl-ascend COMMAND --help` describes each command.\n\n" + _EXIT_HELP)
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def common(sp: argparse.ArgumentParser, select: bool = True) -> None:
        sp.add_argument("file", metavar="FILE.py", help="a Python file defining TileLang kernels")
        sp.add_argument("--arch", choices=ARCH_CHOICES, default="dav-3510",
                        help="Ascend AI-core architecture (default: dav-3510)")
        if select:
            sp.add_argument("--kernel", metavar="NAME",
                            help="top-level kernel, factory or Case function to use")
        sp.add_argument("--param", metavar="K=V", action="append", default=[],
                        help="keyword argument for the factory (repeatable)")

    stage_list = ", ".join(STAGES)
    sp = sub.add_parser(
        "inspect", formatter_class=fmt, help="show IR after any stage, the Ascend C, memory map, sync table",
        description="Compile one kernel of FILE and print what the compiler made of it. With no view "
                    "option: the Ascend C, then the memory map, then the sync table.",
        epilog=f"stages (in pipeline order): {stage_list}; 'all' = every stage plus the memory map and the "
               "sync table.\n\n" + _SELECTION_HELP + "\nexamples:\n"
               "  tl-ascend inspect examples/rmsnorm.py\n"
               "  tl-ascend inspect examples/gemm.py --stage all\n"
               "  tl-ascend inspect examples/gemm.py --stage lower_tile_ops insert_sync --sync-table\n"
               "  tl-ascend inspect examples/gemm.py --kernel matmul --param trans_B=true --arch dav-c220\n"
               "  tl-ascend inspect examples/elementwise.py --kernel axpby_1d --param N=8192 --source\n\n"
               + _EXIT_HELP)
    common(sp)
    sp.add_argument("--stage", nargs="+", action="extend", metavar="STAGE",
                    choices=[*STAGES, *EXTRA_VIEWS, "all"],
                    help=f"print the IR after STAGE ({stage_list}; 'codegen' is the Ascend C; "
                         "also 'memory', 'sync', or 'all'); repeatable")
    sp.add_argument("--source", action="store_true",
                    help="print the generated Ascend C (same as --stage codegen)")
    sp.add_argument("--memory-map", action="store_true",
                    help="print the memory map (buffer, scope, offset, size, %% of capacity)")
    sp.add_argument("--sync-table", action="store_true",
                    help="print the sync table (flag, event, id, producer, consumer, buffer)")
    sp.add_argument("--timings", action="store_true", help="print the compile time of each stage")
    sp.set_defaults(handler="inspect")

    sp = sub.add_parser(
        "run", formatter_class=fmt,
        help="run a kernel on the emulator (random inputs, or example()'s Case) against a reference",
        description="Run a kernel of FILE on the CPU emulator and print the emulator report, the max error per "
                    "output against a reference and PASS/FAIL. Two ways: FILE's example() Case (or --case NAME: "
                    "an ascend_backend.testing.Case with the kernel, inputs, outputs, reference and tolerances), "
                    "or a kernel picked as `inspect` picks it (--kernel NAME, --param K=V) run on random inputs of "
                    "its signature (tilelang's TensorSupplyType.Auto, seeded by --seed), compared with --ref "
                    "when given.",
        epilog="with example() in FILE and no --kernel, the Case runs; --param K=V then goes to the Case "
               "function. Random inputs: the outputs are the tensors the kernel writes (zeroed before the "
               "call); --ref FUNC gets the other arguments in parameter order and returns the outputs (one "
               "tensor, or a tuple/list in parameter order), as a TileLang ref_program does. FUNC is a "
               "function of FILE, MODULE:FUNC (an importable module) or PATH.py:FUNC. --arg gives the "
               "symbolic dimensions (T.dynamic) and scalar parameters.\n\n" + _SELECTION_HELP + "\nexamples:\n"
               "  tl-ascend run examples/elementwise.py\n"
               "  tl-ascend run examples/gemm.py --arch dav-c220 --timeline gemm.svg\n"
               "  tl-ascend run examples/softmax.py --timeline -      # text timeline on stdout\n"
               "  tl-ascend run mykernels.py --case example_large --no-strict\n"
               "  tl-ascend run examples/gemm.py --kernel matmul --param M=256 --param N=256 --param K=256 "
               "--ref refs.py:matmul_ref --seed 1\n\n"
               "exit codes: 0 PASS; 1 mismatch or emulator error (races, deadlock, out-of-bounds: the "
               "report is printed); 2 user error; 3 internal compiler error.\n")
    common(sp)
    sp.add_argument("--case", metavar="NAME", help="function returning the Case (default: example)")
    sp.add_argument("--ref", metavar="[MODULE:]FUNC",
                    help="reference for a --kernel run: FUNC of FILE, MODULE:FUNC or PATH.py:FUNC")
    sp.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: 0)")
    sp.add_argument("--arg", metavar="NAME=V", action="append", default=[],
                    help="a symbolic dimension or scalar parameter of the kernel (repeatable)")
    sp.add_argument("--atol", type=float, default=None,
                    help="absolute tolerance against --ref (default 1e-2; a Case has its own)")
    sp.add_argument("--rtol", type=float, default=None,
                    help="relative tolerance against --ref (default 1e-2; a Case has its own)")
    sp.add_argument("--timeline", metavar="PATH",
                    help="write the modelled pipe timeline as SVG to PATH ('-': as text on stdout)")
    sp.add_argument("--no-strict", action="store_true",
                    help="report races and flag errors without failing the run on them")
    sp.set_defaults(handler="run")

    sp = sub.add_parser(
        "build", formatter_class=fmt,
        help="write the .cpp and print (and run, if present) the bisheng command",
        description="Write the kernel's Ascend C (with a host wrapper launch_<kernel>) to DIR/<kernel>.cpp "
                    "and print the exact bisheng command that builds DIR/lib<kernel>.so. The command is run "
                    "only when bisheng is on PATH; otherwise the CLI says so and exits 0.",
        epilog=_SELECTION_HELP + "\nexamples:\n"
               "  tl-ascend build examples/gemm.py --out build/gemm\n"
               "  tl-ascend build examples/gemm.py --kernel matmul --param M=1024 --arch dav-c220\n\n"
               "exit codes: 0 written (and built, when bisheng is present); 1 bisheng failed; 2 user error; "
               "3 internal compiler error.\n")
    common(sp)
    sp.add_argument("--out", metavar="DIR", help="output directory (default: build/<kernel>)")
    sp.set_defaults(handler="build")

    sp = sub.add_parser(
        "check", formatter_class=fmt, help="static sync lint of an Ascend C source (no inputs needed)",
        description="Check the synchronization of an Ascend C source without running it: SetFlag/WaitFlag "
                    "pairs on every path (loops included), event ids, double sets, cross-core flags per "
                    "mode, PipeBarrier<PIPE_ALL> in loops, overlapping MTE2/MTE3 copies, reads of buffers "
                    "never written, and every cross-pipe dependency on a buffer with no flag between the two "
                    "ops (unless --auto-sync on covers that pipe pair). See docs/check.md.",
        epilog="output: file:line: error|warning: message (gcc style), or --json.\n\nexamples:\n"
               "  tl-ascend check add_custom.asc\n"
               "  tl-ascend check kernel.cpp --arch dav-c220 --auto-sync off   # generated code\n"
               "  tl-ascend check mmad.asc -D SCENARIO_NUM=2 --json\n\n"
               "exit codes: 0 no errors (warnings allowed); 1 errors; 2 the file cannot be read or parsed "
               "(one line naming the line) or a usage error.\n")
    sp.add_argument("file", metavar="FILE.cpp", help="an Ascend C source (.cpp, .asc, .h)")
    sp.add_argument("--arch", choices=ARCH_CHOICES, default="dav-3510",
                    help="architecture to check for (__NPU_ARCH__, per-arch rules; default: dav-3510)")
    sp.add_argument("--auto-sync", choices=("on", "off"), default="on",
                    help="bisheng's --cce-auto-sync (default on, as bisheng; generated code is built with off)")
    sp.add_argument("--json", action="store_true", help="print the result as JSON")
    sp.add_argument("-D", dest="define", metavar="NAME[=VALUE]", action="append", default=[],
                    help="define a preprocessor macro (repeatable), as -D on the bisheng command line")
    sp.add_argument("--kernel", metavar="NAME", help="check only this __global__ kernel")
    sp.add_argument("--no-includes", action="store_true",
                    help='do not read local #include "x.h" headers beside the file')
    sp.add_argument("-v", "--verbose", action="store_true",
                    help="also print the kernels found, paths explored and analysis notes (stderr)")
    sp.set_defaults(handler="check")
    add_cache_parser(sub, fmt)
    add_tune_parser(sub, fmt)
    return p


def version() -> str:
    """``__version__`` of ascend_backend/__init__.py, read from the file beside this one (importing
    the package would import tilelang and torch, seconds for ``--version``)."""
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "__init__.py")) as fh:
            m = re.search(r'^__version__ = "([^"]+)"', fh.read(), re.M)
        return m.group(1) if m else "?"
    except OSError:
        return "?"


def parse(argv: Sequence[str] | None) -> argparse.Namespace | int:
    """The parsed command line, or the exit code when argparse answered itself (``--help``,
    ``--version``, a usage error) or no command was given (the help is printed, exit 2)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    if not getattr(args, "handler", None):
        parser.print_help(sys.stdout)
        return 2
    return args


