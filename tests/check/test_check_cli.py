"""``tl-ascend check`` on the command line (in-process) and the parts of the C++ subset it reads."""

from __future__ import annotations

import json

import pytest
from check_helpers import drop, found, line_of, src

from ascend_backend.check import CheckError, check, check_source
from ascend_backend.cli import main

CLEAN = src("""
    #include "kernel_operator.h"
    using namespace AscendC;
    extern "C" __global__ __aicore__ void k(GM_ADDR x, GM_ADDR y)
    {
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
        GlobalTensor<float> xGm, yGm;
        xGm.SetGlobalBuffer((__gm__ float*)x, 256);
        yGm.SetGlobalBuffer((__gm__ float*)y, 256);
        LocalTensor<float> a(TPosition::VECCALC, 0, 256);
        DataCopy(a, xGm, 256);
        SetFlag<HardEvent::MTE2_MTE3>(0);      // @set
        WaitFlag<HardEvent::MTE2_MTE3>(0);     // @wait
        DataCopy(yGm, a, 256);                 // @out
    }
""")
BAD = drop(CLEAN, "wait")


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_clean_file_exits_0(tmp_path, capsys):
    p = tmp_path / "k.cpp"
    p.write_text(CLEAN)
    rc, out, err = cli(capsys, "check", str(p), "--auto-sync", "off")
    assert rc == 0 and out == ""
    assert "0 errors, 0 warnings (dav-3510, auto-sync off)" in err


def test_errors_are_gcc_style_and_exit_1(tmp_path, capsys):
    p = tmp_path / "k.cpp"
    p.write_text(BAD)
    rc, out, err = cli(capsys, "check", str(p), "--arch", "dav-c220")
    assert rc == 1
    lines = out.splitlines()
    assert lines and all(ln.startswith(f"{p}:") for ln in lines)
    assert f"{p}:{line_of(BAD, 'set')}: error: SetFlag<HardEvent::MTE2_MTE3>(0) is never waited" in out
    assert f"{p}:{line_of(BAD, 'out')}: error: RAW on a (UB)" in out
    assert "WaitFlag<HardEvent::MTE2_MTE3>(0)" in out  # says what to add


def test_json_output(tmp_path, capsys):
    p = tmp_path / "k.cpp"
    p.write_text(BAD)
    rc, out, _ = cli(capsys, "check", str(p), "--json")
    assert rc == 1
    data = json.loads(out)
    assert data["errors"] >= 1 and data["arch"] == "dav-3510" and data["auto_sync"] is True
    assert {d["check"] for d in data["diagnostics"]} >= {"set-never-waited", "missing-sync"}
    assert data["kernels"][0]["name"] == "k" and data["kernels"][0]["cores"] == ["AIV"]


def test_unreadable_and_unparseable_inputs_exit_2(tmp_path, capsys):
    rc, out, err = cli(capsys, "check", str(tmp_path / "missing.cpp"))
    assert rc == 2 and "no such file" in err and "Traceback" not in err
    rc, _, err = cli(capsys, "check", str(tmp_path))
    assert rc == 2 and "directory" in err
    p = tmp_path / "broken.cpp"
    broken = CLEAN.replace("DataCopy(yGm, a, 256);", "DataCopy(yGm, a, 256) +;")
    p.write_text(broken)
    rc, out, err = cli(capsys, "check", str(p))
    assert rc == 2 and out == ""
    assert err.strip().count("\n") == 0  # one line
    assert err.startswith(f"{p}:{line_of(broken, 'out')}: error:") and "Traceback" not in err


def test_defines_select_the_code(tmp_path, capsys):
    text = src("""
        #include "kernel_operator.h"
        using namespace AscendC;
        __global__ __vector__ void k(GM_ADDR x)
        {
        #if MODE == 2
            SetFlag<HardEvent::V_MTE3>(0);
        #endif
            WaitFlag<HardEvent::V_MTE3>(0);
        }
    """)
    p = tmp_path / "k.asc"
    p.write_text(text)
    assert cli(capsys, "check", str(p))[0] == 1
    assert cli(capsys, "check", str(p), "-D", "MODE=2")[0] == 0


# ---------------------------------------------------------------------------------------------
# The subset
# ---------------------------------------------------------------------------------------------
def test_entry_qualifiers_and_kernel_cores():
    text = src("""
        #include "kernel_operator.h"
        __global__ __vector__ void v(GM_ADDR x) {}
        __global__ __cube__ void c(GM_ADDR x) {}
        __global__ __mix__(1, 2) void m(GM_ADDR x) {}
        extern "C" __global__ __aicore__ void a(GM_ADDR x) { KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1); }
        template <typename T, int N>
        __global__ __vector__ void t(GM_ADDR x) {}
        int32_t main() { t<float, 4><<<1, nullptr, nullptr>>>(nullptr); return 0; }
    """)
    res = check(text)
    cores = {k["name"]: (k["cores"], k["aivs_per_aic"]) for k in res.kernels}
    assert cores == {"v": (["AIV"], 1), "c": (["AIC"], 1), "m": (["AIC", "AIV"], 2), "a": (["AIC", "AIV"], 1),
                     "t": (["AIV"], 1)}


def test_arch_conditional_code():
    text = src("""
        #include "kernel_operator.h"
        using namespace AscendC;
        __global__ __vector__ void k(GM_ADDR x)
        {
        #if defined(__NPU_ARCH__) && __NPU_ARCH__ == 3510
            SetFlag<HardEvent::V_MTE3>(0);   // @set
        #endif
            WaitFlag<HardEvent::V_MTE3>(0);  // @wait
        }
    """)
    assert found(text, arch="dav-3510") == set()
    assert found(text, arch="dav-c220") == {("wait-without-set", line_of(text, "wait"), "error")}


def test_host_code_is_skipped_and_local_headers_are_read(tmp_path):
    (tmp_path / "kernel.h").write_text(src("""
        #include "kernel_operator.h"
        class Op {
        public:
            __aicore__ inline void Run()
            {
                AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID1);   // @hdr
            }
        };
    """))
    main_text = src("""
        #include <vector>
        #include "kernel.h"
        __global__ __vector__ void k(GM_ADDR x)
        {
            Op op;
            op.Run();
        }
        std::vector<float> host(std::vector<float>& x) { auto f = [&](int i) { return x[i]; }; return x; }
        int32_t main() { k<<<8, nullptr, nullptr>>>(nullptr); return 0; }
    """)
    p = tmp_path / "main.asc"
    p.write_text(main_text)
    from ascend_backend.check import check_file

    res = check_file(str(p))
    assert [(d.file.endswith("kernel.h"), d.check) for d in res.diagnostics] == [(True, "set-never-waited")]
    assert check_file(str(p), follow_includes=False).diagnostics == []


def test_unparseable_kernel_names_the_line():
    text = src("""
        __global__ __vector__ void k(GM_ADDR x)
        {
            int a = 1;
            a = a +* ;
        }
    """)
    with pytest.raises(CheckError) as exc:
        check_source(text, filename="bad.cpp")
    assert str(exc.value).startswith("bad.cpp:4: error:")


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_loop_ids_from_the_loop_variable(arch):
    text = src("""
        #include "kernel_operator.h"
        using namespace AscendC;
        __global__ __vector__ void k(GM_ADDR x, int32_t n)
        {
            for (int32_t i = 0; i < 2; ++i) {
                SetFlag<HardEvent::V_MTE3>(i % 2);
            }
            for (int32_t j = 0; j < n; ++j) {
                WaitFlag<HardEvent::V_MTE3>(j % 2);   // @w
                SetFlag<HardEvent::V_MTE3>(j % 2);
            }
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID1);
        }
    """)
    assert found(text, arch=arch) == set()
