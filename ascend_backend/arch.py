"""Per-arch facts the compiler decides with (docs/ascend-c-facts.md)."""

from __future__ import annotations

from dataclasses import dataclass

KB = 1024


@dataclass(frozen=True)
class Arch:
    """One Ascend AI-core architecture."""

    name: str  # the name users write: "dav-3510" or "dav-c220"
    bisheng_arch: str  # value of bisheng's --npu-arch
    capacity: dict  # usable bytes per on-chip memory
    l0c_dtype_bytes: int = 4
    # Same-pipe vector ops are ordered by the hardware on 3510 (PipeBarrier<PIPE_V> emits nothing);
    # on c220 dependent vector ops need an explicit barrier.
    needs_vector_barrier: bool = True
    cross_core_via_gm: bool = True
    l0a_layout: str = "ZZ"
    l0b_layout: str = "ZN"

    @property
    def macro(self) -> str:
        return "EMU_ARCH_C220" if self.name == "dav-c220" else "EMU_ARCH_3510"


DAV_C220 = Arch(
    name="dav-c220",
    bisheng_arch="dav-2201",
    capacity={"UB": 192 * KB - 8 * KB, "L1": 512 * KB, "L0A": 64 * KB, "L0B": 64 * KB, "L0C": 128 * KB},
    needs_vector_barrier=True,
    cross_core_via_gm=True,
    l0a_layout="ZZ",
)

DAV_3510 = Arch(
    name="dav-3510",
    bisheng_arch="dav-3510",
    capacity={"UB": 248 * KB, "L1": 512 * KB, "L0A": 64 * KB, "L0B": 64 * KB, "L0C": 256 * KB},
    needs_vector_barrier=False,
    cross_core_via_gm=False,
    l0a_layout="NZ",
)

ARCHES = {a.name: a for a in (DAV_3510, DAV_C220)}
# Other spellings people use for the same chips.
ALIASES = {"dav-c310": "dav-3510", "3510": "dav-3510", "ascend950": "dav-3510", "dav-2201": "dav-c220",
           "c220": "dav-c220", "910b": "dav-c220", "ascend910b": "dav-c220"}
DEFAULT_ARCH = "dav-3510"

ALIGN = {"UB": 32, "L1": 32, "L0A": 512, "L0B": 512, "L0C": 1024}


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
