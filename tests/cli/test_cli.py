"""tl-ascend, run in-process: ``main([...])`` with stdout/stderr captured."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest

from ascend_backend.cli import main, parse_params, parse_value
from ascend_backend.pipeline import STAGES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples")
GEMM = os.path.join(EX, "gemm.py")
ELEMENTWISE = os.path.join(EX, "elementwise.py")
RMSNORM = os.path.join(EX, "rmsnorm.py")
SOFTMAX = os.path.join(EX, "softmax.py")


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def write(tmp_path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


# ---------------------------------------------------------------------------------------------
# --param values
# ---------------------------------------------------------------------------------------------
def test_parse_values():
    assert parse_value("512") == 512 and isinstance(parse_value("512"), int)
    assert parse_value("0x10") == 16
    assert parse_value("1e-6") == pytest.approx(1e-6)
    assert parse_value("2.5") == 2.5
    assert parse_value("true") is True and parse_value("False") is False
    assert parse_value("none") is None
    assert parse_value("float16") == "float16"
    assert parse_value("'12'") == "12"
    assert parse_params(["M=512", "trans_A=true", "dtype=bfloat16"]) == {
        "M": 512, "trans_A": True, "dtype": "bfloat16"}


def test_bad_param_syntax(capsys):
    rc, _, err = cli(capsys, "inspect", GEMM, "--kernel", "matmul", "--param", "M512")
    assert rc == 2
    assert "KEY=VALUE" in err


# ---------------------------------------------------------------------------------------------
# inspect
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [ELEMENTWISE, GEMM, RMSNORM, SOFTMAX])
def test_inspect_default_shows_source_memory_and_sync(capsys, path):
    rc, out, err = cli(capsys, "inspect", path)
    assert rc == 0, err
    assert "Case from example()" in out
    src = out.index("==== codegen (Ascend C) ====")
    mem = out.index("==== memory map ====")
    sync = out.index("==== sync table ====")
    assert src < mem < sync
    assert '__global__ __aicore__ void' in out and 'namespace tl_ascend {' in out
    assert "% of capacity" in out
    # the memory map names every on-chip buffer with its scope
    assert re.search(r"\b(UB|L1|L0A|L0B|L0C)\b", out[mem:sync])


def test_inspect_gemm_tables_content(capsys):
    rc, out, _ = cli(capsys, "inspect", GEMM)
    assert rc == 0
    mem = out[out.index("==== memory map ===="):out.index("==== sync table ====")]
    for buf, scope in (("A_shared", "L1"), ("B_shared", "L1"), ("C_local", "L0C")):
        assert re.search(rf"{buf}\s*│\s*{scope}\s*│", mem), (buf, scope, mem)
    sync = out[out.index("==== sync table ===="):]
    for col in ("flag", "event", "id", "producer", "consumer", "buffer"):
        assert col in sync
    assert "MTE2_MTE1" in sync and "Mmad" in sync and "gemm.py:" in sync


@pytest.mark.parametrize("stage", STAGES)
def test_inspect_each_stage(capsys, stage):
    rc, out, err = cli(capsys, "inspect", GEMM, "--stage", stage)
    assert rc == 0, err
    title = "frontend IR" if stage == "frontend" else ("codegen (Ascend C)" if stage == "codegen"
                                                       else f"after {stage}")
    assert f"==== {title} ====" in out
    # only the stage asked for: no default tables
    assert "==== memory map ====" not in out
    body = out.split(f"==== {title} ====", 1)[1]
    if stage == "codegen":
        assert "Mmad" in body and "Fixpipe" in body
    else:
        assert "program gemm" in body and "gemm.py:" in body


def test_cli_doc_lists_every_stage_in_pipeline_order():
    text = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    para = text.split("* `--stage STAGE ...`:")[1].split("Two views")[0]
    assert re.findall(r"`(\w+)`", para) == STAGES


def test_architecture_doc_has_a_row_per_stage_in_pipeline_order():
    text = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    table = text.split("## The passes")[1].split("\n\n")[1]
    assert [row.split("|")[1].strip() for row in table.splitlines()[2:]] == STAGES


def test_inspect_stages_differ(capsys):
    rc, out, _ = cli(capsys, "inspect", GEMM, "--stage", "frontend", "plan_memory")
    assert rc == 0
    front = out.split("==== frontend IR ====")[1].split("==== after plan_memory ====")[0]
    plan = out.split("==== after plan_memory ====")[1]
    # the frontend does not know scopes yet; after plan_memory every tile buffer has one
    assert "A_shared: ?" in front
    assert "A_shared: L1" in plan
    assert "copy A" in front
    assert "Nd2Nz" in plan or "DataCopy" in plan


def test_inspect_all(capsys):
    rc, out, _ = cli(capsys, "inspect", RMSNORM, "--stage", "all")
    assert rc == 0
    heads = re.findall(r"^==== (.*) ====$", out, flags=re.M)
    assert heads == ["frontend IR", *[f"after {s}" for s in STAGES[1:-1]], "codegen (Ascend C)",
                     "memory map", "sync table"]


def test_inspect_source_flag_and_timings(capsys):
    rc, out, _ = cli(capsys, "inspect", ELEMENTWISE, "--source", "--timings")
    assert rc == 0
    assert "==== codegen (Ascend C) ====" in out
    assert "==== memory map ====" not in out
    assert "compile time per stage" in out and "lower_tile_ops" in out


def test_inspect_arch_c220(capsys):
    rc, out, _ = cli(capsys, "inspect", GEMM, "--arch", "dav-c220", "--source")
    assert rc == 0
    assert "for dav-c220" in out and "arch dav-c220" in out


def test_kernel_and_params(capsys):
    rc, out, err = cli(capsys, "inspect", GEMM, "--kernel", "matmul", "--param", "M=512", "--param",
                       "trans_A=true", "--stage", "frontend")
    assert rc == 0, err
    assert "factory, M=512, trans_A=True" in out
    assert "buffer A: GM 256x512xfloat16" in out  # trans_A: A is (K, M)
    assert "buffer C: GM 512x256xfloat16" in out
    assert "trans_A=True" in out


def test_kernel_pick_other_factory(capsys):
    rc, out, _ = cli(capsys, "inspect", ELEMENTWISE, "--kernel", "axpby_1d", "--param", "N=8192", "--source")
    assert rc == 0
    assert "void axpby(" in out
    assert "8192" in out


def test_params_without_kernel_go_to_example(capsys):
    rc, _, err = cli(capsys, "inspect", GEMM, "--param", "M=512")
    assert rc == 2
    assert "example()" in err and "'M'" in err and "--kernel" in err


def test_unknown_param_for_factory(capsys):
    rc, _, err = cli(capsys, "inspect", GEMM, "--kernel", "matmul", "--param", "Q=1")
    assert rc == 2
    assert "matmul" in err and "'Q'" in err


def test_single_factory_picked_without_kernel(tmp_path, capsys):
    path = write(tmp_path, "one.py", """
        import tilelang.language as T

        def scale(N=1024, block=256):
            @T.prim_func
            def scale2(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
                with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
                    s = T.alloc_shared((block,), "float32")
                    T.copy(A[bx * block], s)
                    for i in T.Parallel(block):
                        s[i] = s[i] * 2.0
                    T.copy(s, B[bx * block])
            return scale2

        def helper(x):
            return x
    """)
    rc, out, err = cli(capsys, "inspect", path, "--source")
    assert rc == 0, err
    assert "void scale2(" in out
    rc, out, err = cli(capsys, "inspect", path, "--param", "N=2048", "--source")
    assert rc == 0, err
    assert "N=2048" in out and "2048" in out.split("====")[-1]


def test_several_kernels_listed(tmp_path, capsys):
    path = write(tmp_path, "two.py", """
        import tilelang.language as T

        def k1(N=256):
            @T.prim_func
            def a(A: T.Tensor((N,), "float32")):
                with T.Kernel(1, threads=128) as bx:
                    s = T.alloc_shared((N,), "float32")
                    T.copy(A[0], s)
                    T.copy(s, A[0])
            return a

        def k2(N=256):
            return k1(N)
    """)
    rc, out, err = cli(capsys, "inspect", path)
    assert rc == 2
    assert "defines 2 kernels" in err and "k1(N=256)" in err and "k2(N=256)" in err
    assert "--kernel" in err


def test_tilelang_jit_and_ascend_jit(tmp_path, capsys):
    path = write(tmp_path, "jits.py", """
        import tilelang
        import tilelang.language as T
        import ascend_backend

        def _body(M, N, block_M=32, block_N=128):
            @T.prim_func
            def add(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16"),
                    C: T.Tensor((M, N), "float16")):
                with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                    a = T.alloc_shared((block_M, block_N), "float16")
                    b = T.alloc_shared((block_M, block_N), "float16")
                    T.copy(A[by * block_M, bx * block_N], a)
                    T.copy(B[by * block_M, bx * block_N], b)
                    for i, j in T.Parallel(block_M, block_N):
                        a[i, j] = a[i, j] + b[i, j]
                    T.copy(a, C[by * block_M, bx * block_N])
            return add

        @tilelang.jit(out_idx=[-1])
        def add_tl(M=256, N=256):
            return _body(M, N)

        @ascend_backend.jit
        def add_asc(M=128, N=256):
            return _body(M, N)

        @tilelang.jit
        def add_eager(A, B, block_M: int = 32, block_N: int = 128):
            M, N = T.const("M, N")
            A: T.Tensor((M, N), T.float16)
            B: T.Tensor((M, N), T.float16)
            C = T.empty((M, N), T.float16)
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                a = T.alloc_shared((block_M, block_N), T.float16)
                b = T.alloc_shared((block_M, block_N), T.float16)
                T.copy(A[by * block_M, bx * block_N], a)
                T.copy(B[by * block_M, bx * block_N], b)
                for i, j in T.Parallel(block_M, block_N):
                    a[i, j] = a[i, j] + b[i, j]
                T.copy(a, C[by * block_M, bx * block_N])
            return C
    """)
    rc, out, err = cli(capsys, "inspect", path, "--kernel", "add_tl", "--param", "M=512",
                       "--stage", "frontend")
    assert rc == 0, err
    assert "(tilelang.jit, M=512)" in out and "buffer A: GM 512x256xfloat16" in out
    rc, out, err = cli(capsys, "inspect", path, "--kernel", "add_asc", "--stage", "frontend")
    assert rc == 0, err
    assert "(ascend_backend.jit)" in out and "buffer A: GM 128x256xfloat16" in out
    rc, out, err = cli(capsys, "inspect", path, "--kernel", "add_eager", "--param", "M=64",
                       "--param", "N=128", "--stage", "frontend")
    assert rc == 0, err
    assert "buffer A: GM 64x128xfloat16" in out
    # the eager kernel cannot be elaborated without its shapes: a user error naming the call
    rc, _, err = cli(capsys, "inspect", path, "--kernel", "add_eager")
    assert rc == 2
    assert "add_eager" in err and "M" in err
    # no --kernel: the two lazy kernels both qualify (the eager one needs shapes)
    rc, _, err = cli(capsys, "inspect", path)
    assert rc == 2
    assert "add_tl" in err and "add_asc" in err and "defines 2 kernels" in err


# ---------------------------------------------------------------------------------------------
# user errors and exit codes
# ---------------------------------------------------------------------------------------------
def test_missing_file(capsys, tmp_path):
    rc, out, err = cli(capsys, "inspect", str(tmp_path / "nope.py"))
    assert rc == 2
    assert "no such file" in err and "Traceback" not in err + out


def test_file_that_fails_to_import(tmp_path, capsys):
    path = write(tmp_path, "broken.py", """
        import math

        x = math.sqrt(-1)
    """)
    rc, out, err = cli(capsys, "inspect", path)
    assert rc == 2
    assert "cannot import" in err and "ValueError: math domain error" in err
    assert f"{path}:4" in err
    assert "Traceback" not in err + out


def test_syntax_error_file(tmp_path, capsys):
    path = write(tmp_path, "syntax.py", "def f(:\n    pass\n")
    rc, _, err = cli(capsys, "run", path)
    assert rc == 2
    assert "SyntaxError" in err and "Traceback" not in err


def test_bad_kernel_name(capsys):
    rc, out, err = cli(capsys, "inspect", GEMM, "--kernel", "does_not_exist")
    assert rc == 2
    assert "no kernel 'does_not_exist'" in err
    assert "matmul(" in err and "example()" in err  # the candidates are listed


def test_unsupported_kernel_exit_2_with_file_line(tmp_path, capsys):
    path = write(tmp_path, "bad_kernel.py", """
        import tilelang.language as T


        def bad(M=256, N=256, block=64):
            @T.prim_func
            def k(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
                with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
                    s = T.alloc_shared((block, N), "float16")
                    T.copy(A[bx * block, 0], s)
                    for i, j in T.Parallel(block, N):
                        s[i, j] = T.sin(s[i, j])
                    T.copy(s, B[bx * block, 0])
            return k
    """)
    line = next(i for i, t in enumerate(open(path).read().splitlines(), 1) if "T.sin" in t)
    rc, out, err = cli(capsys, "inspect", path)
    assert rc == 2
    assert f"bad_kernel.py:{line}" in err
    assert "unsupported" in err and "hint:" in err
    assert "Traceback" not in err + out


def test_memory_budget_error_prints_table(tmp_path, capsys):
    path = write(tmp_path, "huge.py", """
        import tilelang.language as T


        def huge(M=1024, N=1024):
            @T.prim_func
            def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
                with T.Kernel(1, threads=128) as bx:
                    s = T.alloc_shared((M, N), "float32")
                    T.copy(A[0, 0], s)
                    T.copy(s, B[0, 0])
            return k
    """)
    rc, _, err = cli(capsys, "build", path, "--out", str(tmp_path / "out"))
    assert rc == 2
    assert "memory budget" in err and "huge.py:9" in err
    assert "capacity" in err and "defined at" in err  # the per-buffer table
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_internal_compiler_error_exit_3(monkeypatch, capsys):
    import ascend_backend.passes.plan_memory as pm

    def boom(kernel):
        raise RuntimeError("planted")

    monkeypatch.setattr(pm, "plan_memory", boom)
    rc, out, err = cli(capsys, "inspect", ELEMENTWISE)
    assert rc == 3
    assert "internal compiler error in stage 'plan_memory'" in err and "planted" in err
    assert "Traceback" not in err + out


def test_usage_errors(capsys):
    assert cli(capsys, "inspect", GEMM, "--stage", "nosuchstage")[0] == 2
    assert cli(capsys, "inspect", GEMM, "--arch", "dav-9999")[0] == 2
    assert cli(capsys, "frobnicate")[0] == 2
    rc, out, _ = cli(capsys)
    assert rc == 2 and "inspect" in out


@pytest.mark.parametrize("cmd", ["inspect", "run", "build"])
def test_help_has_examples(capsys, cmd):
    rc, out, _ = cli(capsys, cmd, "--help")
    assert rc == 0
    assert "examples:" in out and f"tl-ascend {cmd} examples/" in out
    assert "--arch" in out
    assert "exit codes" in out
    if cmd != "run":
        assert "--kernel" in out and "--param" in out and "example()" in out


def test_top_level_help(capsys):
    rc, out, _ = cli(capsys, "--help")
    assert rc == 0
    for cmd in ("inspect", "run", "build"):
        assert cmd in out


# ---------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------
def test_run_elementwise_passes(capsys, tmp_path):
    svg = tmp_path / "t.svg"
    rc, out, err = cli(capsys, "run", ELEMENTWISE, "--timeline", str(svg))
    assert rc == 0, err + out
    assert "Emulator report (dav-3510" in out and ": OK" in out
    assert "max abs error" in out
    assert re.search(r"│\s*C\s*│\s*256x256\s*│\s*float16\s*│\s*[0-9.e+-]+\s*│\s*0/65536\s*│\s*PASS", out), out
    assert out.rstrip().endswith("PASS")
    assert svg.exists() and "<svg" in svg.read_text()[:500]


def test_run_mismatch_exit_1(tmp_path, capsys):
    path = write(tmp_path, "wrong_ref.py", f"""
        import sys
        sys.path.insert(0, {EX!r})
        from elementwise import add_2d


        def example():
            import torch
            from ascend_backend.testing import Case

            a = torch.ones(256, 256, dtype=torch.float16)
            b = torch.ones(256, 256, dtype=torch.float16)
            c = torch.empty_like(a)
            return Case(func=add_2d(), inputs=[a, b, c], outputs=[2], reference=lambda a, b, c: [a + b + 1])
    """)
    rc, out, err = cli(capsys, "run", path)
    assert rc == 1
    assert "FAIL" in out and "65536/65536" in out
    assert out.rstrip().endswith("FAIL")


def test_run_emulator_error_exit_1(monkeypatch, capsys):
    from ascend_backend.emulator import EmulatorError, Report
    from ascend_backend.kernel import AscendKernel

    report = Report(ok=False, arch="dav-3510", block_dim=1, kernel_type="AIV_ONLY",
                    deadlock={"message": "WaitFlag V_MTE3 id 0 never set (planted)"})

    def fail(self, *args):
        raise EmulatorError("deadlock: WaitFlag V_MTE3 id 0 never set (planted)", report=report)

    monkeypatch.setattr(AscendKernel, "__call__", fail)
    rc, out, err = cli(capsys, "run", ELEMENTWISE)
    assert rc == 1
    assert "emulator error" in err and "planted" in err
    assert "deadlock: WaitFlag V_MTE3 id 0 never set (planted)" in out  # the report
    assert "Traceback" not in err + out


def test_run_without_example(tmp_path, capsys):
    path = write(tmp_path, "noex.py", "def f():\n    return 1\n")
    rc, _, err = cli(capsys, "run", path)
    assert rc == 2
    assert "example()" in err and "Case" in err


# ---------------------------------------------------------------------------------------------
# build
# ---------------------------------------------------------------------------------------------
def test_build_writes_cpp_and_prints_bisheng(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    out_dir = tmp_path / "gemm"
    rc, out, err = cli(capsys, "build", GEMM, "--arch", "dav-c220", "--out", str(out_dir))
    assert rc == 0, err
    cpp = out_dir / "gemm.cpp"
    assert cpp.exists()
    text = cpp.read_text()
    assert "__global__ __aicore__ void gemm(" in text and "tl_ascend::gemm<<<" in text and "launch_gemm" in text
    cmd_line = next(line for line in out.splitlines() if line.startswith("bisheng -"))
    assert "--npu-arch=dav-2201" in cmd_line and "-xasc" in cmd_line
    # the device runs exactly the syncs the emulator checked (auto_sync=False): no bisheng auto-sync
    assert "--cce-auto-sync=off" in cmd_line
    assert str(cpp) in cmd_line and str(out_dir / "libgemm.so") in cmd_line
    assert "not on PATH" in out


def test_build_kernel_param(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    rc, out, err = cli(capsys, "build", ELEMENTWISE, "--kernel", "axpby_1d", "--param", "N=8192",
                       "--out", str(tmp_path))
    assert rc == 0, err
    assert (tmp_path / "axpby.cpp").exists()
    assert "--npu-arch=dav-3510" in out


def test_inspect_modern_style_ascend_jit(tmp_path, capsys):
    path = write(tmp_path, "modern.py", '''
        import tilelang.language as T

        import ascend_backend


        @ascend_backend.jit
        def add(A, B):
            M, N = T.const("M N")
            A: T.Tensor((M, N), "float16")
            B: T.Tensor((M, N), "float16")
            C = T.empty((M, N), "float16")
            with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 32), threads=128) as (bx, by):
                a = T.alloc_shared((32, 64), "float16")
                b = T.alloc_shared((32, 64), "float16")
                T.copy(A[by * 32, bx * 64], a)
                T.copy(B[by * 32, bx * 64], b)
                for i, j in T.Parallel(32, 64):
                    a[i, j] = a[i, j] + b[i, j]
                T.copy(a, C[by * 32, bx * 64])
            return C
    ''')
    rc, out, err = cli(capsys, "inspect", path, "--param", "M=64", "--param", "N=128", "--stage", "codegen")
    assert rc == 0, err
    assert "Add(a, a, b, 2048);" in out and "block_dim = 4" in out


# ---------------------------------------------------------------------------------------------
# every stage of every example, both arches
# ---------------------------------------------------------------------------------------------
EXAMPLES = sorted(os.path.join(EX, f) for f in os.listdir(EX) if f.endswith(".py"))


def _example_arches(path: str) -> tuple:
    """The example's ARCHES (a module-level tuple), default both."""
    import ast

    for node in ast.parse(open(path).read()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "ARCHES" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ("dav-3510", "dav-c220")


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_inspect_every_stage_of_every_example(capsys, path, arch):
    rc, out, err = cli(capsys, "inspect", path, "--arch", arch, "--stage", "all")
    # an example may name the arches whose dtypes it needs (fp8: dav-3510 only); the others
    # refuse it with the reason, not a traceback
    if arch not in _example_arches(path):
        assert rc != 0 and f"only on {_example_arches(path)[0]}" in err + out and "Traceback" not in out + err
        return
    assert rc == 0, err
    assert "Traceback" not in out + err
    for stage in STAGES:
        title = "frontend IR" if stage == "frontend" else ("codegen (Ascend C)" if stage == "codegen"
                                                           else f"after {stage}")
        assert f"==== {title} ====" in out, stage
    # the IR after the last pass is a whole program; the source is there too
    assert out.count("program ") >= len(STAGES) - 1 and "__global__ __aicore__" in out
