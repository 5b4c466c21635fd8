"""Per-arch facts the compiler decides with (docs/ascend-c-facts.md)."""

from __future__ import annotations

from dataclasses import dataclass

from .ir.enums import Layout, Scope

KB = 1024


@dataclass(frozen=True)
class Arch:
    """One Ascend AI-core architecture."""

    name: str  # the name users write: "dav-3510" or "dav-c220"
    bisheng_arch: str  # value of bisheng's --npu-arch
    capacity: dict  # usable bytes per on-chip memory (Scope -> bytes)
    l0c_dtype_bytes: int = 4
    # Same-pipe vector ops are ordered by the hardware on 3510 (PipeBarrier<PIPE_V> emits nothing);
    # on c220 dependent vector ops need an explicit barrier.
    needs_vector_barrier: bool = True
    l0a_layout: Layout = Layout.ZZ
    l0b_layout: Layout = Layout.ZN
    # Data paths between the cores (docs/ascend-c-facts.md): Fixpipe L0C -> UB and DataCopy
    # UB -> L1 exist on dav-3510 only; on dav-c220 the Cube and the Vector cores meet in GM.
    l0c_to_ub: bool = False
    ub_to_l1: bool = False
    # Cross-core flag mode 4 (the AIC and one AIV) exists on dav-3510 only.
    cross_core_mode4: bool = False
    # Parameter structs of the Cube API: LoadData2DParamsV2 and FixpipeParamsArch3510 on dav-3510,
    # LoadData2DParams and FixpipeParamsV220 on dav-c220.
    load_data_v2: bool = False
    fixpipe_arch3510: bool = False

    @property
    def macro(self) -> str:
        return "EMU_ARCH_C220" if self.name == "dav-c220" else "EMU_ARCH_3510"


DAV_C220 = Arch(
    name="dav-c220",
    bisheng_arch="dav-2201",
    capacity={Scope.UB: 192 * KB - 8 * KB, Scope.L1: 512 * KB, Scope.L0A: 64 * KB, Scope.L0B: 64 * KB,
              Scope.L0C: 128 * KB},
    needs_vector_barrier=True,
    l0a_layout=Layout.ZZ,
)

DAV_3510 = Arch(
    name="dav-3510",
    bisheng_arch="dav-3510",
    capacity={Scope.UB: 248 * KB, Scope.L1: 512 * KB, Scope.L0A: 64 * KB, Scope.L0B: 64 * KB,
              Scope.L0C: 256 * KB},
    needs_vector_barrier=False,
    l0a_layout=Layout.NZ,
    l0c_to_ub=True,
    ub_to_l1=True,
    cross_core_mode4=True,
    load_data_v2=True,
    fixpipe_arch3510=True,
)

ARCHES = {a.name: a for a in (DAV_3510, DAV_C220)}
# Other spellings people use for the same chips.
ALIASES = {"dav-c310": "dav-3510", "3510": "dav-3510", "ascend950": "dav-3510", "dav-2201": "dav-c220",
           "c220": "dav-c220", "910b": "dav-c220", "ascend910b": "dav-c220"}
DEFAULT_ARCH = "dav-3510"

ALIGN = {Scope.UB: 32, Scope.L1: 32, Scope.L0A: 512, Scope.L0B: 512, Scope.L0C: 1024}


def get_arch(name: str | None) -> Arch:
    from .errors import TargetError

    key = (name or DEFAULT_ARCH).lower()
    key = ALIASES.get(key, key)
    if key not in ARCHES:
        raise TargetError(
            f"unknown Ascend arch {name!r}",
            hint=f"use one of {sorted(ARCHES)} (aliases: {sorted(ALIASES)})",
        )
    return ARCHES[key]
