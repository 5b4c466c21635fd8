"""Any DSL name is safe in the generated code: C++ keywords, the API's names, the names codegen
itself declares (pipe, ub_buf, workspace, A_gm for a tensor A, the op macros' loop counters) and the
compiler's own buffers (tmp1_float32, c_part, sub_idx) -- 33 such names in one kernel that compiles
and runs on the emulator against torch, both arches. A name that is safe stays as it is."""

import re

import pytest
import tilelang.language as T
import torch

import ascend_backend
from ascend_backend.cnames import Names, reserved
from ascend_backend.npu import host_wrapper

NAMES = ["new", "auto", "A_gm", "workspace", "stream", "int", "main", "do", "float", "c", "pipe", "ub_buf", "min_i",
         "tmp1_float32", "c_peer", "Add", "bx", "fp", "mp", "printf", "DataCopy", "register", "l1_buf", "half",
         "void", "goto", "this", "GetBlockIdx", "INFINITY", "short", "sub_idx", "i", "n"]


def names_kernel():
    @T.prim_func
    def names(new: T.Tensor((64, 64), "float16"), auto: T.Tensor((64, 64), "float16"),
              A_gm: T.Tensor((64, 64), "float32"), workspace: T.Tensor((64, 64), "float16"),
              stream: T.Tensor((64,), "float32"), int: T.int32, main: T.float32):
        with T.Kernel(2) as pid:
            do = T.alloc_shared((32, 64), "float16")
            float = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((32, 64), "float32")
            printf = T.alloc_fragment((64,), "float32")
            pipe = T.alloc_fragment((64,), "float32")
            ub_buf = T.alloc_fragment((32, 64), "float32")
            tmp1_float32 = T.alloc_fragment((32, 64), "float32")
            min_i = T.alloc_fragment((32, 64), "float32")
            c_peer = T.alloc_fragment((32, 64), "float32")
            bx = T.alloc_fragment((32, 64), "float32")
            fp = T.alloc_fragment((32, 64), "float32")
            mp = T.alloc_fragment((32, 64), "float32")
            DataCopy = T.alloc_fragment((32, 64), "float32")
            register = T.alloc_fragment((32, 64), "float32")
            l1_buf = T.alloc_fragment((32, 64), "float32")
            Add = T.alloc_fragment((32, 64), "float32")
            half = T.alloc_var("int32")
            void = T.alloc_local((1,), "float32")
            goto = T.alloc_var("float32")
            this = T.alloc_local((1,), "float32")
            GetBlockIdx = T.alloc_var("int32")
            INFINITY = T.alloc_var("float32")
            short = T.alloc_var("int32")
            T.copy(new[pid * 32, 0], do)
            T.copy(auto[0, 0], float)
            T.gemm(do, float, c, clear_accum=True)
            T.copy(stream[0], printf)
            T.copy(printf, pipe)
            half = int + pid
            void[0] = main
            goto = void[0] * 2.0
            this[0] = 1.0
            GetBlockIdx = 2
            INFINITY = 0.25
            short = int * 2
            for x, y in T.Parallel(32, 64):
                ub_buf[x, y] = c[x, y] + pipe[y]
            T.clear(tmp1_float32)
            for i in T.serial(2):
                for n in T.serial(2):
                    for sub_idx in T.serial(2):
                        for x, y in T.Parallel(32, 64):
                            tmp1_float32[x, y] = tmp1_float32[x, y] + ub_buf[x, y] * void[0] + half + i + n + sub_idx
            for x, y in T.Parallel(32, 64):
                min_i[x, y] = tmp1_float32[x, y] + goto
            T.copy(min_i, c_peer)
            for x, y in T.Parallel(32, 64):
                bx[x, y] = c_peer[x, y] + this[0]
            for x, y in T.Parallel(32, 64):
                fp[x, y] = bx[x, y] + GetBlockIdx
            for x, y in T.Parallel(32, 64):
                mp[x, y] = fp[x, y] + INFINITY
            for x, y in T.Parallel(32, 64):
                DataCopy[x, y] = mp[x, y] + short
            T.copy(DataCopy, register)
            T.copy(register, l1_buf)
            T.copy(l1_buf, Add)
            T.copy(Add, A_gm[pid * 32, 0])
            T.copy(new[pid * 32:(pid + 1) * 32, :], workspace[pid * 32:(pid + 1) * 32, :])

    return names


def test_33_risky_names_compile_and_run(arch):
    k = ascend_backend.compile(names_kernel(), target={"kind": "ascendc", "arch": arch}, runtime="emulator",
                               strict=True)
    a, b = torch.randn(64, 64).half(), torch.randn(64, 64).half()
    out, copy = torch.zeros(64, 64), torch.zeros(64, 64).half()
    e = torch.randn(64)
    k(a, b, out, copy, e, 3, 0.5)
    assert all(r.ok for r in k.reports)
    ub = a.float() @ b.float() + e
    pid = torch.arange(64).div(32, rounding_mode="floor")[:, None].float()
    tmp = 8 * ub * 0.5 + 8 * (3 + pid) + 12  # over i, n, sub_idx in {0, 1}: 4 + 4 + 4
    ref = tmp + 1.0 + 1.0 + 2 + 0.25 + 6  # goto, this, GetBlockIdx, INFINITY, short
    torch.testing.assert_close(out, ref, atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(copy, a)
    src = k.kernel_source
    for name in NAMES:  # every one of them is declared under some C++ name and none is left raw where unsafe
        assert name in src
    body = src[src.index('__global__'):]  # the kernel entry (the helpers before it declare min_i, max_i)
    decls = re.findall(r"\b(?:LocalTensor<\w+>|GlobalTensor<\w+>|GM_ADDR)\s+(\w+)", body)
    decls += re.findall(r"\b(?:int32_t|float) (\w+)\[1\];", body)  # scalar locals
    decls += re.findall(r"for \(int32_t (\w+) = 0; \1 < 2; \+\+\1\) \{  // test_names", body)  # the user's loops
    assert len(decls) > 33
    for d in decls:
        assert d not in reserved() or d in ("workspace", "pipe", "ub_buf", "l1_buf"), d  # codegen's own
    assert "GM_ADDR new_1" in src and "int32_t int_1" in src and "float main_1" in src
    assert "LocalTensor<float> ub_buf_1 = ub_buf.GetWithOffset" in src


def test_safe_names_stay_and_unsafe_ones_get_a_suffix():
    names = Names()
    assert [names.buffer(n) for n in ("acc_s", "do", "c", "i", "c_", "A_gm", "x_slots", "_tmp", "a__b", "A")] == \
        ["acc_s", "do_1", "c", "i", "c_1", "A_gm_1", "x_slots_1", "vtmp", "a_b", "A"]
    assert names.buffer("do_1") == "do_1_1"  # taken by the first `do`
    # names ending in an underscore (a template's counter, or reserved otherwise) get a suffix too
    assert [names.buffer(n) for n in ("i_", "r__", "_", "__")] == ["i_1", "r_1", "v", "v_1"]
    # three underscores or more: one replace of "__" left "__" and the search for a safe name never ended
    assert [Names().buffer(n) for n in ("a___b", "x_____y")] == ["a_b", "x_y"]


def test_the_host_wrapper_uses_the_entry_names():
    prog = ascend_backend.lower(names_kernel(), target="ascendc:dav-3510").program
    wrapper = host_wrapper(prog)
    assert "uint8_t* new_1, uint8_t* auto_1, uint8_t* A_gm_1, uint8_t* workspace_1, uint8_t* stream_1, int32_t int_1, " \
        "float main_1" in wrapper
    assert "names<<<blocks_0, nullptr, stream>>>(new_1, auto_1, A_gm_1, workspace_1, stream_1, int_1, main_1);" \
        in wrapper


# ---- names C++ and its headers already have (issue 26, item 5) ----
# The C library's macros (NULL, errno, stdin, EOF: the preprocessor would replace them), the C++
# types, the generated code's helpers (min_i) and the Ascend C API (GetBlockIdx, DataCopy, Sort,
# LocalTensor, TQue): as a kernel's name, its parameters' and its tiles'.
HEADER_NAMES = ["NULL", "int32_t", "min_i", "GetBlockIdx", "DataCopy", "LocalTensor", "errno", "EOF", "stdin", "Sort",
                "TQue", "M_E"]

_NAMED = '''
import tilelang.language as T


def {k}({p}: T.Tensor((64, 32), "float32"), {q}: T.Tensor((64, 32), "float32")):
    with T.Kernel(2) as bx:
        {t} = T.alloc_fragment((32, 32), "float32")
        {u} = T.alloc_fragment((32, 32), "float32")
        T.copy({p}[bx * 32, 0], {t})
        for i, j in T.Parallel(32, 32):
            {u}[i, j] = {t}[i, j] * 2.0 + 1.0
        T.copy({u}, {q}[bx * 32, 0])
'''


def _named_kernel(tmp_path, k: str, p: str, q: str, t: str, u: str):
    import importlib.util

    path = tmp_path / f"named_{k}.py"
    path.write_text(_NAMED.format(k=k, p=p, q=q, t=t, u=u))
    spec = importlib.util.spec_from_file_location(f"named_{k}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return T.prim_func(getattr(mod, k))


def _run_named(func, arch):
    k = ascend_backend.compile(func, target={"kind": "ascendc", "arch": arch}, runtime="emulator", strict=True)
    a, b = torch.randn(64, 32), torch.zeros(64, 32)
    k(a, b)
    torch.testing.assert_close(b, a * 2.0 + 1.0, rtol=0, atol=0)
    return k


def test_parameters_and_tiles_named_like_cxx_and_ascend_c_names_run(tmp_path, arch):
    # 12 names, two per kernel (a parameter and a tile): each is one g++ build
    for n in range(0, len(HEADER_NAMES), 2):
        first, second = HEADER_NAMES[n], HEADER_NAMES[n + 1]
        k = _run_named(_named_kernel(tmp_path, f"k{n}", first, "B", second, "y"), arch)
        src = k.kernel_source
        # renamed where declared when the generated code or its headers spell them; Sort and TQue (API
        # names the generated code does not use) stay: a local name hides the API's
        assert f"GM_ADDR {first}_1" if first in reserved() else f"GM_ADDR {first}," in src, src
        assert f"LocalTensor<float> {second}{'_1' if second in reserved() else ''} = ub_buf.GetWithOffset" in src


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in ("NULL", "DataCopy") else pytest.mark.slow)
                                  for n in HEADER_NAMES])
def test_a_kernel_named_like_a_cxx_or_ascend_c_name_runs(tmp_path, name):
    # the entry shares its namespace with the names the generated body spells, and the preprocessor
    # replaces a macro's name anywhere: g++ failed on each of these ("expected unqualified-id before
    # '__null'", "redeclared as different kind of entity", "reference to 'LocalTensor' is ambiguous",
    # the emulator's call of it "cannot resolve overloaded function 'DataCopy'")
    k = _run_named(_named_kernel(tmp_path, name, "A", "B", "x", "y"), "dav-3510")
    entry = f"{name}_kernel" if name in reserved() else name  # Sort, TQue: API names the code does not use
    assert f"__global__ __aicore__ void {entry}(" in k.kernel_source
    assert k.name == entry
    assert f"tl_ascend::{entry}<<<blocks_0" in host_wrapper(k.program)


def test_the_reserved_names_hold_every_macro_the_emulators_headers_define():
    # cxx_macros.py is the preprocessor's list, kept in the package (codegen must not need a compiler)
    import shutil

    from ascend_backend.cnames import preprocessor_macros
    from ascend_backend.cxx_macros import MACROS

    if shutil.which("g++") is None:
        pytest.skip("no g++ to list the macros with")
    missing = sorted(preprocessor_macros() - MACROS)
    assert not missing, f"macros the headers define now: {missing[:20]}; run `python -m ascend_backend.cnames`"
    assert {"NULL", "errno", "stdin", "EOF", "assert", "ASCEND_IS_AIC"} <= MACROS <= reserved()


# ---- user text in the generated source's comments (issue 26, item 5) ----
_HOSTILE = "k\nint\tinjected_a=1;\r\nint\tinjected_b=2;\\\n\x07\"\u202e\x1b[2J"  # T.dynamic splits at spaces


def test_user_text_never_leaves_a_comment(tmp_path):
    # A file name and a T.dynamic name with line breaks, a backslash at a line's end, a quote, a bell,
    # a bidi override and a terminal escape: the kernel compiles and runs, and none of it is C++ text.
    # (A newline in the file name turned the rest of the name into statements of the kernel.)
    import importlib.util

    src_text = f'''
import tilelang.language as T

N = T.dynamic({_HOSTILE!r})


@T.prim_func
def hostile(A: T.Tensor((N, 32), "float32"), B: T.Tensor((N, 32), "float32")):
    with T.Kernel(T.ceildiv(N, 32)) as bx:
        x = T.alloc_fragment((32, 32), "float32")
        T.copy(A[bx * 32, 0], x)
        for i, j in T.Parallel(32, 32):
            x[i, j] = x[i, j] + 1.0
        T.copy(x, B[bx * 32, 0])
'''
    path = tmp_path / f"{_HOSTILE.replace('/', '_')}.py"
    path.write_text(src_text)
    spec = importlib.util.spec_from_file_location("hostile_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    k = ascend_backend.compile(mod.hostile, target="ascendc", runtime="emulator", strict=True)
    a = torch.randn(96, 32)
    b = torch.zeros(96, 32)
    k(a, b)
    torch.testing.assert_close(b, a + 1.0, rtol=0, atol=0)
    src = k.kernel_source
    assert "injected_a=1" in src  # the text is there, in comments (the C name of N is k_int_injected_a_1_...)
    for line in src.splitlines():
        code = line.split("//", 1)[0]
        assert "injected_a=1" not in code and "injected_b=2" not in code, line
        assert not line.rstrip().endswith("\\"), line  # no line splices the next one into a comment
    assert not any(c in src for c in "\r\x07\x1b\u202e"), [c for c in "\r\x07\x1b\u202e" if c in src]
    assert "k\\nint\\tinjected_a=1;\\r\\nint\\tinjected_b=2;\\134\\n\\007\\\"\\u202e\\033[2J.py" in src
    # ... and the tables a terminal shows have no control character either
    from rich.console import Console

    from ascend_backend.reports import render_sync_table

    console = Console(record=True, width=400)
    console.print(render_sync_table(k.program))
    shown = console.export_text()
    assert "\x1b" not in shown and "\u202e" not in shown and "\\033[2J" in shown
