"""C++ names for the DSL's names, and user text made safe for C++ comments and strings (used by
codegen only).

Every identifier the generated code declares for a user's name -- a buffer, a loop variable, a
block index, a scalar argument, a symbolic dimension -- goes through one table per kernel entry:
a name is kept as it is when it is safe, else suffixed (``do`` -> ``do_1``). Unsafe are C++
keywords and the types, functions and macros the generated code spells (collected from the
templates and the emulator's kernel_operator.h, plus a list of what codegen writes itself), names
that look like the ones codegen derives from a buffer's name (``A_gm`` for tensor ``A``,
``x_slots``, ``x_peer``), and names C++ reserves (a leading underscore, a double underscore).
Two different variables with one DSL name get two names.

User text that codegen writes into a comment or a string literal (the DSL file's name, buffer and
variable names inside the sync reasons, T.dynamic names in printed expressions) goes through
:func:`c_text`, which leaves nothing there that C++ reads as anything but that comment or string.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata

CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm atomic_cancel atomic_commit atomic_noexcept auto bitand bitor bool break case
catch char char8_t char16_t char32_t class compl concept const consteval constexpr constinit const_cast continue
co_await co_return co_yield decltype default delete do double dynamic_cast else enum explicit export extern false
float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or or_eq
private protected public reflexpr register reinterpret_cast requires return short signed sizeof static
static_assert static_cast struct switch synchronized template this thread_local throw true try typedef typeid
typename union unsigned using virtual void volatile wchar_t while xor xor_eq final override import module
""".split())

# What codegen itself writes outside the templates (types, API calls, helpers, fixed variables).
CODEGEN_NAMES = frozenset("""
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t half bfloat16_t float double bool
fp8_e4m3fn_t fp8_e5m2_t int4b_t hifloat8_t
LocalTensor GlobalTensor TPipe TBuf TPosition GetWithOffset InitBuffer SetGlobalBuffer GetValue SetValue
GetBlockIdx GetSubBlockIdx GetTaskRation GetBlockNum HardEvent RoundMode QuantMode_t SetFlag WaitFlag PipeBarrier
SetAtomicAdd SetAtomicMax SetAtomicMin SetAtomicNone AscendC GM_ADDR KERNEL_TASK_TYPE_DEFAULT ASCEND_IS_AIC
ASCEND_IS_AIV CFG_ROW_MAJOR CFG_ROW_MAJOR_UB FixpipeConfig CO2Layout INFINITY NAN printf main
expf logf sqrtf fabsf exp2f log2f tanhf floorf ceilf powf roundf truncf fminf fmaxf
FixpipeParamsV220 FixpipeParamsArch3510 PIPE_S PIPE_V PIPE_M PIPE_MTE1 PIPE_MTE2 PIPE_MTE3 PIPE_FIX PIPE_ALL
min_i max_i tail_i pipe workspace stream l1_buf l0a_buf l0b_buf l0c_buf ub_buf bt_buf fb_buf peer_ub peer_l1
""".split())

# Suffixes codegen appends to a buffer's name (its GlobalTensor, its slots, its view in a peer's
# memory): a user name ending so could meet a derived one.
DERIVED_SUFFIXES = ("_gm", "_slots", "_peer", "_l1_peer")


def _strip_template(text: str) -> str:
    text = re.sub(r"\{#.*?#\}", " ", text, flags=re.S)
    text = re.sub(r"\{\{.*?\}\}|\{%.*?%\}", " ", text, flags=re.S)
    text = re.sub(r'"[^"\n]*"', " ", text)  # string literals
    text = re.sub(r"\.\s*[A-Za-z_]\w*", " ", text)  # members (mp.m, fp.nSize) are no names of the scope
    return re.sub(r"//[^\n]*", " ", text)


@functools.lru_cache(maxsize=1)
def reserved() -> frozenset:
    """Every identifier a user's name may not take as it is."""
    here = os.path.dirname(os.path.abspath(__file__))
    names = set(CPP_KEYWORDS) | set(CODEGEN_NAMES)
    tdir = os.path.join(os.path.dirname(here), "templates")
    if not os.path.isdir(tdir):
        from ascend_backend import templates

        tdir = os.path.dirname(templates.__file__)
    # The op macros expand inside the kernel's body: their calls, types and local variables (a loop
    # counter i_, c_, r_, n_; fp, mp) share the scope of the user's names. (kernel.cpp.j2 spells only
    # what CODEGEN_NAMES lists.)
    with open(os.path.join(tdir, "ops.j2")) as fh:
        names |= set(re.findall(r"\b[A-Za-z_]\w*\b", _strip_template(fh.read())))
    inc = os.path.join(here, "emulator", "include")
    for root, _dirs, files in os.walk(inc):
        for f in files:
            if f.endswith(".h"):
                with open(os.path.join(root, f)) as fh:
                    names |= set(re.findall(r"#\s*define\s+([A-Za-z_]\w*)", fh.read()))
    # ... and every macro of the headers those include (the C and C++ libraries': NULL, errno, stdin,
    # EOF, assert), which the preprocessor would substitute for a user's name
    from .cxx_macros import MACROS

    return frozenset(names | MACROS)


def preprocessor_macros(cxx: str = "g++") -> frozenset:
    """The macros a kernel's translation unit defines on the emulator, on either arch, as the
    preprocessor lists them (``cxx -dM -E`` of kernel_operator.h), without those C++ reserves
    (a leading underscore): what ascend_backend/cxx_macros.py holds (``python -m ascend_backend.cnames``
    rewrites it; a test compares the two)."""
    import subprocess

    from .emulator.cache import ARCHES, COMMON_FLAGS, INCLUDE_DIR

    found: set = set()
    for flag in ARCHES.values():
        out = subprocess.run([cxx, *COMMON_FLAGS, flag, f"-I{INCLUDE_DIR}", "-x", "c++", "-dM", "-E", "-"],
                             input='#include "kernel_operator.h"\n', capture_output=True, text=True, check=True)
        found |= {m.group(1) for m in re.finditer(r"^#define ([A-Za-z]\w*)", out.stdout, re.M)}
    return frozenset(found)


def _write_macros(path: str) -> None:
    names = sorted(preprocessor_macros())
    lines, line = [], ""
    for n in names:
        if len(line) + len(n) + 1 > 110:
            lines.append(line)
            line = ""
        line = f"{line} {n}" if line else n
    lines.append(line)
    body = "\n".join(lines)
    with open(path, "w") as fh:
        fh.write(f'''"""The macros a kernel's translation unit defines on the emulator (kernel_operator.h and the C and
C++ library headers it includes, both arches): a user's name equal to one would be replaced by the
preprocessor, so cnames.reserved() holds them. Written by `python -m ascend_backend.cnames` from
the preprocessor (cnames.preprocessor_macros); tests/compiler/test_names.py checks that it still
lists every macro g++ defines there.
"""

MACROS = frozenset("""
{body}
""".split())
''')


def sanitize(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "v"
    return f"v{out}" if out[0].isdigit() else out


def safe(name: str, extra: frozenset | set = frozenset()) -> bool:
    return (name not in reserved() and name not in extra and not name.startswith("_") and "__" not in name
            and not name.endswith(DERIVED_SUFFIXES))


# The generated kernel entries are C++ functions of this namespace (templates/kernel.cpp.j2), not
# extern "C" symbols: a DSL name equal to a C library, libm or emulator-runtime symbol (getpid, erf,
# usleep, emu_run) then names a function of its own, whose mangled symbol nothing else defines or
# calls, instead of clashing with the headers' declaration or interposing the library's function.
ENTRY_NAMESPACE = "tl_ascend"


def entry_name(name: str) -> str:
    """The C++ name of a kernel entry called ``name`` in the DSL: kept unless the generated body
    refers to it unqualified (a keyword, an API call or type, a helper such as ``min_i``: it would
    hide that inside the namespace) or C++ reserves it (a leading underscore, a double underscore),
    else ``<name>_kernel``. ``main`` is an ordinary name inside a namespace."""
    out = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_]", "_", name) or "k")
    if not out[0].isalpha():
        out = "k" + out
    taken = reserved() - {"main"}
    while out in taken:
        out = f"{out}_kernel"
    return out


_C_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\134", '"': '\\"'}


def c_text(text: object) -> str:
    """``text`` as it may stand in a ``//`` comment or between the quotes of a C++ string literal:
    a line break would end the comment and make the rest C++ statements, a backslash at a line's
    end would splice the next line into the comment, a quote would end the string, and Unicode
    format characters (bidirectional overrides, zero-width marks) would make the source read
    differently from what compiles. Those become escapes (``\\n``, ``\\134``, ``\\"``,
    ``\\u202e``: octal, never hex, so no digit after one extends it); other text is kept."""
    out = []
    for c in str(text):
        if c in _C_ESCAPES:
            out.append(_C_ESCAPES[c])
        elif unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn"):
            o = ord(c)
            if o < 0x80 or 0xDC80 <= o <= 0xDCFF:  # the latter: a byte of a name that is not UTF-8 (surrogateescape)
                out.append(f"\\{o & 0xFF:03o}")
            else:
                out.append(f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")
        else:
            out.append(c)
    return "".join(out)


class CxxCode(str):
    """C++ text codegen built itself (a kernel body): rendered as it is, where any other value a
    template prints goes through :func:`c_text`."""

    __slots__ = ()


class Names:
    """The C++ names of one kernel entry: buffers by IR name, variables by identity (a TVM Var)."""

    def __init__(self, extra: set | None = None) -> None:
        self.extra = frozenset(extra or ())
        self.used: set = set()
        self.buffers: dict = {}
        self.vars: dict = {}

    def fresh(self, base: str) -> str:
        name = sanitize(base)
        if name.startswith("_"):
            name = "v" + name.lstrip("_")
        name = re.sub(r"_{2,}", "_", name)  # a___b: one replace of "__" would leave "__", never safe
        # The suffix goes after the name without its trailing underscores: "c_" + "_1" would hold a
        # double underscore, which is never safe (an endless search).
        stem, n = name.rstrip("_") or "v", 1
        while not safe(name, self.extra) or name in self.used:
            name = f"{stem}_{n}"
            n += 1
        self.used.add(name)
        return name

    def buffer(self, name: str) -> str:
        if name not in self.buffers:
            self.buffers[name] = self.fresh(name)
        return self.buffers[name]

    def var(self, v) -> str:
        if v not in self.vars:
            self.vars[v] = self.fresh(str(v.name))
        return self.vars[v]


__all__ = ["Names", "reserved", "safe", "sanitize", "c_text", "entry_name", "ENTRY_NAMESPACE", "CxxCode",
           "preprocessor_macros", "CPP_KEYWORDS", "DERIVED_SUFFIXES"]


if __name__ == "__main__":
    _write_macros(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cxx_macros.py"))
