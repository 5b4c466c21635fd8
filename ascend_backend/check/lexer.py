"""Preprocessor and tokenizer for ``tl-ascend check``.

The grammar (grammar.lark) is LALR(1), which C++ is not; this module makes the token stream
LALR-friendly before the parser sees it:

* ``#if``/``#ifdef``/``#elif``/``#else``/``#endif`` are evaluated for one arch and one core
  (``__NPU_ARCH__`` and the per-core ``__DAV_*`` macros); ``#define``d macros are expanded;
  ``#include "x.h"`` pulls in a header beside the file when it exists (system headers and
  missing files are skipped).
* ``<``/``>`` that open and close template argument lists become ``TLT``/``TGT`` (so ``a < b``
  stays a comparison), and identifiers that name types become ``TNAME`` (known Ascend C and
  C types, names the file declares as types, and ``X y``-style declarations).
* The file is cut into top-level items. Host code (functions that are neither ``__global__``
  nor ``__aicore__``) is dropped unparsed; the kernel subset is what is left.

Every token keeps its line, so diagnostics point at the user's file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

# ---------------------------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------------------------


@dataclass
class Tok:
    type: str  # NAME, TNAME, NUMBER, STRING, CHAR, TLT, TGT, CORE_COND, SCOPE_MACRO, or the literal
    value: str
    line: int  # global line (see SourceMap)
    col: int = 0


class CheckSyntaxError(Exception):
    """Input the checker cannot read or parse; ``line`` is a global line (see SourceMap)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass
class SourceMap:
    """Global line numbers over the main file and the headers it includes."""

    files: list = field(default_factory=list)  # (name, first global line, number of lines)

    def add(self, name: str, nlines: int) -> int:
        base = sum(n for _, _, n in self.files)
        self.files.append((name, base, nlines))
        return base

    def locate(self, gline: int) -> tuple[str, int]:
        for name, base, n in self.files:
            if base < gline <= base + n:
                return name, gline - base
        name = self.files[0][0] if self.files else "<source>"
        return name, gline


_TOKEN_RE = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<number>(?:0[xX][0-9a-fA-F']+|0[bB][01']+|(?:\d[\d']*\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))[uUlLfF]*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<string>(?:u8|[uUL])?"(?:[^"\\]|\\.)*")
  | (?P<char>'(?:[^'\\]|\\.)*')
  | (?P<punct><<=|>>=|<<<|>>>|\.\.\.|->\*|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||\+=|-=|\*=|/=|%=|&=|\|=|\^=
              |\#\#|[{}\[\]();:,.?~!%^&*+\-=<>|/#])
""", re.VERBOSE)

# C/C++ keywords the grammar uses as literals; an identifier equal to one of these is that keyword.
KEYWORDS = {
    "if", "else", "for", "while", "do", "return", "break", "continue", "switch", "case", "default",
    "class", "struct", "union", "enum", "namespace", "using", "typedef", "template", "typename",
    "public", "private", "protected", "const", "constexpr", "static", "inline", "extern", "volatile",
    "virtual", "explicit", "friend", "mutable", "operator", "sizeof", "alignof", "decltype", "auto",
    "void", "bool", "char", "short", "int", "long", "float", "double", "unsigned", "signed",
    "true", "false", "nullptr", "this", "new", "delete", "static_cast", "reinterpret_cast",
    "const_cast", "dynamic_cast", "static_assert", "goto", "noexcept", "override", "final",
    "__global__", "__aicore__", "__vector__", "__cube__", "__mix__", "__gm__", "__ubuf__",
    "__cbuf__", "__ca__", "__cb__", "__cc__", "__fbuf__", "__inline__", "__simd_vf__",
    "__simd_callee__", "__schedmode__", "__restrict__", "__restrict", "__forceinline__",
    "thread_local", "register",
}
# Spellings that mean the same to the grammar.
_KEYWORD_ALIASES = {"__restrict": "__restrict__", "__forceinline__": "__inline__"}
# Dropped outright: they carry nothing the checker needs.
_DROP = {"__restrict__", "__restrict", "register", "thread_local", "mutable"}

# Type names the checker knows without seeing their declaration (the kernel_operator.h side).
KNOWN_TYPES = {
    # C / fixed width / Ascend scalar types
    "size_t", "ssize_t", "ptrdiff_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
    "uint16_t", "uint32_t", "uint64_t", "half", "bfloat16_t", "float16_t", "int4b_t", "fp8_e4m3fn_t",
    "fp8_e5m2_t", "fp8_e8m0_t", "hifloat8_t", "fp4x2_e2m1_t", "fp4x2_e1m2_t", "event_t", "pipe_t",
    "GM_ADDR", "TEventID", "uintptr_t", "intptr_t",
    # Ascend C classes and structs
    "LocalTensor", "GlobalTensor", "TPipe", "TQue", "TQueBind", "TBuf", "TBufPool", "TQueSync",
    "LocalMemAllocator", "TensorDesc", "ListTensorDesc", "ShapeInfo",
    "DataCopyParams", "DataCopyExtParams", "DataCopyPadParams", "DataCopyPadExtParams",
    "DataCopyEnhancedParams", "DataCopyCO12DstParams", "Nd2NzParams", "Dn2NzParams", "Nz2NdParamsFull",
    "LoadData2DParams", "LoadData2DParamsV2", "LoadData2dTransposeParams", "LoadData2dTransposeParamsV2",
    "LoadData3DParamsV1", "LoadData3DParamsV2", "LoadData3DParamsV2Pro", "LoadData2DMxParams",
    "MmadParams", "MmadMxParams", "FixpipeParamsV220", "FixpipeParamsArch3510", "FixpipeConfig",
    "FixpipeParamsM300", "QuantParams",
    "BinaryRepeatParams", "UnaryRepeatParams", "BrcbRepeatParams", "GatherMaskParams",
    "GatherRepeatParams", "CopyRepeatParams", "ReduceRepeatParams", "InitConstValueParams",
    "SliceInfo", "NdDmaLoopInfo", "NdDmaConfig", "MrgSort4Info", "MrgSortSrcList", "Sort32Params",
    "TransposeParamsExt", "TransDataTo5HDParams", "VdeqInfo", "CopyInParams",
    # enums
    "TPosition", "QuePosition", "HardEvent", "RoundMode", "ReduceOrder", "CMPMODE", "SELMODE",
    "Hardware", "TransposeType", "BlockMode", "DataFormat", "CO2Layout", "QuantMode_t", "MemDsbT",
    "ReduceType", "PaddingMode", "AtomicDtype", "MaskMode", "AippInputFormat", "CubeFormat",
    "LayoutMode", "GatherMaskMode", "Reg", "RegTensor", "MaskReg", "UnalignReg",
}

# Identifiers the interpreter treats as the core switch (``if ASCEND_IS_AIV { ... }``).
CORE_CONDS = {"ASCEND_IS_AIV", "ASCEND_IS_AIC", "ASCEND_IS_NOT_AIV", "ASCEND_IS_NOT_AIC"}

_QUAL_RE = re.compile(r"^__[a-z][a-z0-9_]*__$")

# All-caps names directly followed by a block: ``__VEC_SCOPE__ { ... }`` and the like.
_SCOPE_MACRO_RE = re.compile(r"^_*[A-Z][A-Z0-9_]*_*$")


# ---------------------------------------------------------------------------------------------
# Preprocessor
# ---------------------------------------------------------------------------------------------


@dataclass
class Macro:
    name: str
    params: list | None  # None: object-like
    body: list  # tokens (type, value)


def predefined_macros(arch: str, core: str) -> dict[str, Macro]:
    """The macros bisheng predefines when it compiles ``core`` (AIC or AIV) for ``arch``."""

    def obj(name: str, value: str) -> Macro:
        return Macro(name, None, _lex_line(value, 0))

    c220 = arch == "dav-c220"
    m = {"__NPU_ARCH__": obj("__NPU_ARCH__", "2201" if c220 else "3510")}
    if c220:
        m["__CCE_AICORE__"] = obj("__CCE_AICORE__", "220")
        m["__DAV_C220_CUBE__" if core == "AIC" else "__DAV_C220_VEC__"] = obj("_", "1")
    else:
        m["__DAV_CUBE__" if core == "AIC" else "__DAV_VEC__"] = obj("_", "1")
    m["__CCE__"] = obj("__CCE__", "1")
    return m


def _strip_comments(text: str) -> str:
    """Comments replaced by spaces (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            if j < 0:
                j = n
            # a // comment continued with a backslash runs onto the next line
            while j > 0 and j < n and text[j - 1] == "\\":
                k = text.find("\n", j + 1)
                out.append("\n")
                j = n if k < 0 else k
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            if j < 0:
                j = n - 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j + 2]))
            i = j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            j = i
            while j < n and text[j] not in "/\"'":
                j += 1
            if j == i:
                out.append(c)
                j += 1
            else:
                out.append(text[i:j])
            i = j
    return "".join(out)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) with backslash-continued lines joined onto their first line."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        start = i
        cur = lines[i]
        while cur.endswith("\\") and i + 1 < len(lines):
            i += 1
            cur = cur[:-1] + " " + lines[i]
        out.append((start + 1, cur))
        i += 1
    return out


def _lex_line(text: str, line: int) -> list[Tok]:
    toks = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if not m:
            ch = text[pos]
            if ch in "@$`\\":
                pos += 1
                continue
            raise CheckSyntaxError(f"unexpected character {ch!r}", line)
        kind = m.lastgroup
        val = m.group()
        if kind == "ws":
            pass
        elif kind == "number":
            toks.append(Tok("NUMBER", val, line, pos + 1))
        elif kind == "name":
            toks.append(Tok("NAME", val, line, pos + 1))
        elif kind == "string":
            toks.append(Tok("STRING", val, line, pos + 1))
        elif kind == "char":
            toks.append(Tok("CHARLIT", val, line, pos + 1))
        else:
            toks.append(Tok(val, val, line, pos + 1))
        pos = m.end()
    return toks


class Preprocessor:
    """Runs the preprocessor of one file (and the local headers it includes) for one arch/core."""

    def __init__(self, arch: str, core: str, defines: dict[str, str] | None = None,
                 follow_includes: bool = True, smap: SourceMap | None = None) -> None:
        self.macros: dict[str, Macro] = predefined_macros(arch, core)
        for k, v in (defines or {}).items():
            self.macros[k] = Macro(k, None, _lex_line(str(v), 0))
        self.follow = follow_includes
        self.smap = smap or SourceMap()
        self.included: set[str] = set()
        self.tokens: list[Tok] = []
        self._file_bases: dict[str, int] = {}

    # -- public -------------------------------------------------------------------------------
    def run(self, text: str, name: str, path: str | None = None) -> list[Tok]:
        self._file(text, name, path)
        return self._expand(self.tokens)

    # -- files --------------------------------------------------------------------------------
    def _file(self, text: str, name: str, path: str | None) -> None:
        base = self._file_bases.get(name)
        if base is None:
            base = self.smap.add(name, text.count("\n") + 1)
            self._file_bases[name] = base
        if path:
            self.included.add(os.path.realpath(path))
        stack: list[list[bool]] = []  # [taking, some branch taken, parent taking]
        taking = True
        for lineno, raw in _logical_lines(_strip_comments(text)):
            gline = base + lineno
            s = raw.strip()
            if s.startswith("#"):
                d = s[1:].strip()
                word = re.match(r"[a-z_]*", d).group()
                rest = d[len(word):].strip()
                if word in ("if", "ifdef", "ifndef"):
                    parent = taking
                    if word == "if":
                        cond = parent and self._eval_if(rest, gline)
                    elif word == "ifdef":
                        cond = parent and rest.split()[0] in self.macros if rest else False
                    else:
                        cond = parent and (rest.split()[0] not in self.macros if rest else True)
                    stack.append([cond, cond, parent])
                    taking = cond
                elif word == "elif":
                    if not stack:
                        raise CheckSyntaxError("#elif without #if", gline)
                    top = stack[-1]
                    cond = top[2] and not top[1] and self._eval_if(rest, gline)
                    top[0] = cond
                    top[1] = top[1] or cond
                    taking = cond
                elif word == "else":
                    if not stack:
                        raise CheckSyntaxError("#else without #if", gline)
                    top = stack[-1]
                    top[0] = top[2] and not top[1]
                    top[1] = True
                    taking = top[0]
                elif word == "endif":
                    if not stack:
                        raise CheckSyntaxError("#endif without #if", gline)
                    stack.pop()
                    taking = stack[-1][0] if stack else True
                elif not taking:
                    continue
                elif word == "define":
                    self._define(rest, gline)
                elif word == "undef":
                    self.macros.pop(rest.split()[0] if rest else "", None)
                elif word == "include":
                    self._include(rest, path)
                elif word == "error":
                    raise CheckSyntaxError(f"#error {rest}", gline)
                # #pragma, #line, #warning: nothing to do
                continue
            if taking and s:
                self.tokens.extend(_lex_line(raw, gline))
        if stack:
            raise CheckSyntaxError("#if without #endif", base + text.count("\n") + 1)

    def _include(self, rest: str, path: str | None) -> None:
        m = re.match(r'"([^"]+)"', rest)
        if not m or not self.follow or not path:
            return  # <system> headers: the API is known to the checker
        target = os.path.join(os.path.dirname(path), m.group(1))
        real = os.path.realpath(target)
        if real in self.included or not os.path.isfile(target):
            return
        try:
            with open(target, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return
        if "__aicore__" not in text and "#define" not in text:
            self.included.add(real)
            return  # a host-side helper (data_utils.h and the like)
        self._file(text, os.path.relpath(target) if not os.path.isabs(path) else target, target)

    def _define(self, rest: str, gline: int) -> None:
        m = re.match(r"([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)$", rest)
        if not m:
            return
        name, params, body = m.group(1), m.group(3), m.group(4)
        try:
            toks = _lex_line(body, gline)
        except CheckSyntaxError:
            return
        if m.group(2) is not None:
            plist = [p.strip() for p in params.split(",")] if params.strip() else []
            if any(t.value in ("#", "##") for t in toks) or "..." in plist:
                return  # stringizing/pasting/variadic macros stay unexpanded (calls)
            self.macros[name] = Macro(name, plist, toks)
        else:
            self.macros[name] = Macro(name, None, toks)

    # -- #if expressions ----------------------------------------------------------------------
    def _eval_if(self, expr: str, gline: int) -> bool:
        try:
            toks = _lex_line(expr, gline)
        except CheckSyntaxError:
            return False
        # defined X / defined(X) before expansion
        out: list[Tok] = []
        i = 0
        while i < len(toks):
            t = toks[i]
            if t.type == "NAME" and t.value == "defined":
                if i + 1 < len(toks) and toks[i + 1].value == "(":
                    nm = toks[i + 2].value if i + 2 < len(toks) else ""
                    i += 4
                else:
                    nm = toks[i + 1].value if i + 1 < len(toks) else ""
                    i += 2
                out.append(Tok("NUMBER", "1" if nm in self.macros else "0", gline))
                continue
            out.append(t)
            i += 1
        out = self._expand(out)
        py = []
        for t in out:
            if t.type == "NAME":
                py.append("True" if t.value == "true" else "0")  # unknown identifiers are 0, as in C
            elif t.type == "NUMBER":
                py.append(_c_int_literal(t.value))
            elif t.value == "&&":
                py.append(" and ")
            elif t.value == "||":
                py.append(" or ")
            elif t.value == "!":
                py.append(" not ")
            elif t.value == "/":
                py.append("//")
            elif t.value in ("?", ":"):
                return False
            else:
                py.append(t.value)
        try:
            return bool(eval("".join(py), {"__builtins__": {}}, {}))  # noqa: S307 - digits and operators only
        except Exception:  # noqa: BLE001 - an #if we cannot evaluate is taken as false
            return False

    # -- macro expansion ----------------------------------------------------------------------
    def _expand(self, toks: list[Tok], hide: frozenset = frozenset(), depth: int = 0) -> list[Tok]:
        if depth > 32:
            return toks
        out: list[Tok] = []
        i = 0
        n = len(toks)
        while i < n:
            t = toks[i]
            mac = self.macros.get(t.value) if t.type == "NAME" and t.value not in hide else None
            if mac is None:
                out.append(t)
                i += 1
                continue
            if mac.params is None:
                body = [Tok(b.type, b.value, t.line, t.col) for b in mac.body]
                out.extend(self._expand(body, hide | {mac.name}, depth + 1))
                i += 1
                continue
            if i + 1 >= n or toks[i + 1].value != "(":
                out.append(t)
                i += 1
                continue
            # collect arguments
            args: list[list[Tok]] = [[]]
            j = i + 2
            level = 0
            while j < n:
                v = toks[j].value
                if v in ("(", "[", "{"):
                    level += 1
                elif v in (")", "]", "}"):
                    if level == 0 and v == ")":
                        break
                    level -= 1
                elif v == "," and level == 0:
                    args.append([])
                    j += 1
                    continue
                args[-1].append(toks[j])
                j += 1
            if j >= n:
                out.append(t)
                i += 1
                continue
            if len(mac.params) == 0 and args == [[]]:
                args = []
            if len(args) != len(mac.params):
                out.append(t)
                i += 1
                continue
            exp_args = {p: self._expand(a, hide, depth + 1) for p, a in zip(mac.params, args, strict=True)}
            body: list[Tok] = []
            for b in mac.body:
                if b.type == "NAME" and b.value in exp_args:
                    body.extend(Tok(a.type, a.value, t.line, t.col) for a in exp_args[b.value])
                else:
                    body.append(Tok(b.type, b.value, t.line, t.col))
            out.extend(self._expand(body, hide | {mac.name}, depth + 1))
            i = j + 1
        return out


def _c_int_literal(text: str) -> str:
    t = text.replace("'", "").rstrip("uUlL")
    if re.fullmatch(r"0[0-7]+", t):
        return str(int(t, 8))
    if re.fullmatch(r"0[bB][01]+", t):
        return str(int(t[2:], 2))
    return t if re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)", t) else "0"


# ---------------------------------------------------------------------------------------------
# Token classification
# ---------------------------------------------------------------------------------------------
# Tokens after which a closing '>' really closes a template argument list.
_AFTER_TARGS = {"(", ")", "::", "{", ",", ";", "&", "&&", "*", ">", "TGT", "...", "NAME", "TNAME", "=", "<<<",
                "[", "]", ":", "}"}
_ABORT_IN_TARGS = {";", "{", "}", "&&", "||"}


def _mark_templates(toks: list[Tok]) -> None:
    """Turn the '<'/'>' of template argument lists into TLT/TGT (in place; '>>' is split)."""
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.value == "<" and t.type == "<" and i > 0:
            prev = toks[i - 1]
            if prev.type == "NAME" or prev.type == "TNAME" or prev.value in (
                    "template", "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "operator"):
                close = _find_template_close(toks, i, always=prev.value == "template")
                if close is not None:
                    t.type = "TLT"
        i += 1


def _find_template_close(toks: list[Tok], start: int, always: bool = False) -> int | None:
    """Index of the '>' closing the template list opened at ``start`` (marking nested lists)."""
    depth = 0  # (), [] nesting inside the argument list
    i = start + 1
    n = len(toks)
    while i < n and i - start < 400:
        t = toks[i]
        v = t.value
        if t.type in ("STRING", "CHARLIT"):
            i += 1
            continue
        if v in _ABORT_IN_TARGS:
            return None
        if v in ("(", "["):
            depth += 1
        elif v in (")", "]"):
            if depth == 0:
                return None
            depth -= 1
        elif v == "<" and t.type == "<" and (toks[i - 1].type in ("NAME", "TNAME")):
            inner = _find_template_close(toks, i)
            if inner is not None:
                t.type = "TLT"
                i = inner + 1
                continue
        elif v in (">", ">>") and depth == 0 and t.type in (">", ">>"):
            if v == ">>":
                # split '>>': the first closes this list
                toks[i:i + 1] = [Tok(">", ">", t.line, t.col), Tok(">", ">", t.line, t.col + 1)]
                t = toks[i]
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            ok = always or nxt is None or nxt.value in _AFTER_TARGS or nxt.type in ("NAME", "TNAME")
            if not ok:
                return None
            t.type = "TGT"
            return i
        i += 1
    return None


def _collect_type_names(toks: list[Tok]) -> set[str]:
    names = set()
    n = len(toks)
    for i, t in enumerate(toks):
        v = t.value
        if v in ("class", "struct", "union", "enum", "typename") and i + 1 < n:
            j = i + 1
            if v == "enum" and j < n and toks[j].value in ("class", "struct"):
                j += 1
            if j < n and toks[j].type == "NAME":
                # 'typename T::x' names a dependent type, not T
                if v == "typename" and j + 1 < n and toks[j + 1].value == "::":
                    continue
                names.add(toks[j].value)
        elif v == "using" and i + 2 < n and toks[i + 1].type == "NAME" and toks[i + 2].value == "=":
            names.add(toks[i + 1].value)
        elif v == "typedef":
            j = i + 1
            depth = 0
            last = None
            while j < n and not (toks[j].value == ";" and depth == 0):
                if toks[j].value in ("(", "{", "<", "TLT"):
                    depth += 1
                elif toks[j].value in (")", "}", ">"):
                    depth -= 1
                elif toks[j].type == "NAME":
                    last = toks[j].value
                j += 1
            if last:
                names.add(last)
    return names


def _skip_targs(toks: list[Tok], i: int) -> int:
    """Index after the TGT matching the TLT at ``i``."""
    depth = 0
    n = len(toks)
    while i < n:
        if toks[i].type == "TLT":
            depth += 1
        elif toks[i].type == "TGT":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def classify(toks: list[Tok], extra_types: set[str] | None = None) -> list[Tok]:
    """Keywords, template brackets, type names, core switches. Returns the new token list."""
    out: list[Tok] = []
    skip_paren = 0
    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        # drop __attribute__((...)), alignas(...), [[...]]
        if t.type == "NAME" and t.value in ("__attribute__", "__declspec", "alignas", "__aligned__"):
            j = i + 1
            if j < n and toks[j].value == "(":
                level = 0
                while j < n:
                    if toks[j].value == "(":
                        level += 1
                    elif toks[j].value == ")":
                        level -= 1
                        if level == 0:
                            break
                    j += 1
            i = j + 1
            continue
        if t.value == "[" and i + 1 < n and toks[i + 1].value == "[":
            j = i + 2
            while j + 1 < n and not (toks[j].value == "]" and toks[j + 1].value == "]"):
                j += 1
            i = j + 2
            continue
        if t.type == "NAME":
            if t.value in _DROP:
                i += 1
                continue
            if t.value == "typename" and i + 2 < n and toks[i + 2].value in ("::", "<"):
                i += 1  # 'typename X::y': the dependent-name marker carries nothing here
                continue
            if t.value in KEYWORDS:
                v = _KEYWORD_ALIASES.get(t.value, t.value)
                t = Tok(v, v, t.line, t.col)
            elif t.value in CORE_CONDS:
                t = Tok("CORE_COND", t.value, t.line, t.col)
            elif _QUAL_RE.match(t.value) and i + 1 < n and (toks[i + 1].type == "NAME"
                                                              or toks[i + 1].value in KEYWORDS):
                t = Tok("QUAL", t.value, t.line, t.col)  # an address-space/attribute macro such as __kfc_workspace__
        out.append(t)
        i += 1
    del skip_paren
    toks = out
    _mark_templates(toks)
    types = set(KNOWN_TYPES) | _collect_type_names(toks) | (extra_types or set())
    n = len(toks)
    for i, t in enumerate(toks):
        if t.type != "NAME":
            continue
        prev = toks[i - 1].value if i else ""
        if prev in (".", "->"):
            continue  # a member name
        if t.value in types and not (i + 1 < n and toks[i + 1].value == "=" and prev in (",", "(", ";", "{")):
            t.type = "TNAME"
            continue
        # X y / X<...> y / X<...>& y / X* y = : a declaration of y with type X
        j = i + 1
        if j < n and toks[j].type == "TLT":
            j = _skip_targs(toks, j)
        if j < n and toks[j].type == "NAME" and prev not in ("goto",):
            if j == i + 1 or toks[j - 1].type == "TGT":
                t.type = "TNAME"
                continue
        if j > i + 1 and j + 1 < n and toks[j].value in ("&", "*", "&&") and toks[j + 1].type == "NAME":
            t.type = "TNAME"
            continue
        # X{...} / X<...>{...} in an expression: a temporary of type X
        if j < n and toks[j].value == "{" and prev in ("(", ",", "=", "return", "?", ":", "{"):
            t.type = "TNAME"
            continue
    # MACRO(Type, ...): a type handed to a function-like macro is just a name to the parser
    for i, t in enumerate(toks):
        if t.type == "TNAME" and 0 < i < n - 1 and toks[i + 1].value in (",", ")") and toks[i - 1].value in ("(", ","):
            k = _open_paren(toks, i)
            if k > 0 and toks[k - 1].type == "NAME" and _SCOPE_MACRO_RE.match(toks[k - 1].value):
                t.type = "NAME"
    # all-caps NAME { at statement start: a scope macro; CLASS( in a class: a constructor
    for i, t in enumerate(toks):
        if t.type == "NAME" and i + 1 < n and toks[i + 1].value == "{" and _SCOPE_MACRO_RE.match(t.value):
            prev = toks[i - 1].value if i else ";"
            if prev in (";", "{", "}", ")", "else", ":"):
                t.type = "SCOPE_MACRO"
    _mark_constructors(toks)
    return toks


def _open_paren(toks: list[Tok], i: int) -> int:
    """Index of the '(' enclosing position ``i`` (-1 if none)."""
    depth = 0
    while i >= 0:
        v = toks[i].value
        if v == ")":
            depth += 1
        elif v == "(":
            if depth == 0:
                return i
            depth -= 1
        elif v in (";", "{", "}"):
            return -1
        i -= 1
    return -1


_BEFORE_CTOR = {";", "{", "}", ":", "inline", "__aicore__", "explicit", "constexpr", "__inline__", ">", "TGT"}


def _mark_constructors(toks: list[Tok]) -> None:
    """Inside ``class X { ... }``, ``X (`` at the start of a member is a constructor (CTORNAME)."""
    stack: list[tuple[str | None, int]] = []  # (class name or None, brace depth)
    depth = 0
    pending: str | None = None
    n = len(toks)
    for i, t in enumerate(toks):
        v = t.value
        if v in ("class", "struct") and i + 1 < n and toks[i + 1].type in ("NAME", "TNAME"):
            pending = toks[i + 1].value
        elif v == ";" and pending is not None:
            pending = None  # a forward declaration
        elif v == "{":
            depth += 1
            stack.append((pending, depth))
            pending = None
        elif v == "}":
            if stack:
                stack.pop()
            depth -= 1
        elif t.type in ("NAME", "TNAME") and stack and stack[-1][0] == v and stack[-1][1] == depth:
            nxt = toks[i + 1].value if i + 1 < n else ""
            prev = toks[i - 1].value if i else ""
            if nxt == "(" and prev in _BEFORE_CTOR:
                t.type = "CTORNAME"


# ---------------------------------------------------------------------------------------------
# Items
# ---------------------------------------------------------------------------------------------


@dataclass
class Item:
    tokens: list[Tok]
    kind: str  # "kernel" (must parse), "decl" (parse if possible), "host" (dropped)
    line: int


def split_items(toks: list[Tok]) -> list[Item]:
    """Cut the token stream into top-level items (namespaces and extern "C" blocks are opened)."""
    items: list[Item] = []
    i = 0
    n = len(toks)
    start = 0
    while i < n:
        t = toks[i]
        v = t.value
        # namespace X { / extern "C" { : open the block, its items are top-level items
        if i == start and (v == "namespace" or (v == "extern" and i + 2 < n and toks[i + 1].type == "STRING"
                                                and toks[i + 2].value == "{")):
            j = i + 1
            while j < n and toks[j].value not in ("{", ";"):
                j += 1
            if j < n and toks[j].value == "{":
                close = _match(toks, j, "{", "}")
                inner = split_items(toks[j + 1:close])
                items.extend(inner)
                i = close + 1
                start = i
                continue
        if v == ";" :
            items.append(_make_item(toks[start:i + 1]))
            i += 1
            start = i
            continue
        if v == "{":
            close = _match(toks, i, "{", "}")
            head = toks[start:i]
            end = close + 1
            # class/struct/enum X { ... } [name] ;  or  T x = { ... };  take up to the ';'
            if _is_type_def(head) or any(h.value == "=" for h in head):
                j = end
                while j < n and toks[j].value != ";":
                    j += 1
                end = min(j + 1, n)
            items.append(_make_item(toks[start:end]))
            i = end
            start = i
            continue
        if v in ("(", "["):
            i = _match(toks, i, v, ")" if v == "(" else "]") + 1
            continue
        i += 1
    if start < n:
        items.append(_make_item(toks[start:n]))
    return [it for it in items if it.tokens]


def _is_type_def(head: list[Tok]) -> bool:
    vals = [h.value for h in head]
    for kw in ("class", "struct", "union", "enum"):
        if kw in vals:
            # 'struct X {' but not a function returning 'struct X'
            return "(" not in vals[:vals.index(kw)] and "(" not in vals[vals.index(kw):]
    return False


def _match(toks: list[Tok], i: int, open_: str, close: str) -> int:
    depth = 0
    n = len(toks)
    while i < n:
        v = toks[i].value
        if v == open_:
            depth += 1
        elif v == close:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise CheckSyntaxError(f"'{open_}' is never closed", toks[min(i, n) - 1].line if toks else 0)


def _make_item(tokens: list[Tok]) -> Item:
    line = tokens[0].line if tokens else 0
    vals = {t.value for t in tokens}
    device = bool(vals & {"__global__", "__aicore__", "__simd_vf__", "__simd_callee__"})
    if device:
        return Item(tokens, "kernel", line)
    # a function definition of the host: 'type name(...) {' without a device qualifier
    if tokens and tokens[-1].value == "}" and not _is_type_def(_head(tokens)) and \
            any(t.value == "(" for t in _head(tokens)) and not any(t.value == "=" for t in _head(tokens)):
        return Item(tokens, "host", line)
    return Item(tokens, "decl", line)


def _head(tokens: list[Tok]) -> list[Tok]:
    for k, t in enumerate(tokens):
        if t.value == "{":
            return tokens[:k]
    return tokens


def host_constants(toks: list[Tok]) -> dict[str, int]:
    """``constexpr T NAME = <number>;`` anywhere in the file (host functions included), for the
    template arguments of kernel launches; a name declared with two values is left out."""
    found: dict[str, int | None] = {}
    n = len(toks)
    for i, t in enumerate(toks):
        if t.value != "constexpr":
            continue
        j = i + 1
        while j < n and toks[j].value not in ("=", ";", "(", "{"):
            j += 1
        if j + 2 < n and toks[j].value == "=" and toks[j - 1].type == "NAME" and toks[j + 1].type == "NUMBER" \
                and toks[j + 2].value == ";":
            name = toks[j - 1].value
            try:
                val = int(toks[j + 1].value.rstrip("uUlL"), 0)
            except ValueError:
                continue
            found[name] = val if found.get(name, val) == val else None
    return {k: v for k, v in found.items() if v is not None}


def launch_template_args(toks: list[Tok]) -> dict[str, list[list[Tok]]]:
    """Template arguments of ``kernel<...><<<...>>>(...)`` launches in host code, by kernel name."""
    found: dict[str, list[list[Tok]]] = {}
    for i, t in enumerate(toks):
        if t.value == "<<<" and i > 0 and toks[i - 1].type == "TGT":
            # walk back to the TLT
            depth = 0
            j = i - 1
            while j >= 0:
                if toks[j].type == "TGT":
                    depth += 1
                elif toks[j].type == "TLT":
                    depth -= 1
                    if depth == 0:
                        break
                j -= 1
            if j > 0 and toks[j - 1].type in ("NAME", "TNAME"):
                args: list[list[Tok]] = [[]]
                level = 0
                for a in toks[j + 1:i - 1]:
                    if a.type == "TLT" or a.value in ("(", "["):
                        level += 1
                    elif a.type == "TGT" or a.value in (")", "]"):
                        level -= 1
                    if a.value == "," and level == 0:
                        args.append([])
                        continue
                    args[-1].append(a)
                found.setdefault(toks[j - 1].value, []).append(args)
    # several launches with different arguments (one per scenario, in host branches the checker does
    # not read): keep the arguments they agree on, leave the others unknown
    merged: dict[str, list[list[Tok]]] = {}
    for name, launches in found.items():
        first = launches[0]
        out = []
        for k, arg in enumerate(first):
            same = all(k < len(other) and [t.value for t in other[k]] == [t.value for t in arg] for other in launches)
            out.append(arg if same else [])
        merged[name] = out
    return merged
