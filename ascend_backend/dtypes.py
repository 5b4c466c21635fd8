"""One table of the data types the backend knows; every per-dtype fact is derived from it.

``DType`` members compare equal to TileLang's dtype strings (``DType.FLOAT16 == "float16"``), so
a buffer's dtype reads naturally in passes, while its C type, size, torch dtype and the type a
host wrapper passes a scalar of it as all come from this one place.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


@dataclass(frozen=True)
class _Info:
    bytes: int
    ctype: str  # the Ascend C spelling of an element
    torch: str  # attribute of the torch module
    kind: str  # "float" | "int" | "uint" | "bool"
    bits: int = 0  # storage bits when not a whole number of bytes (int4)


_INFO: dict[str, _Info] = {
    "float16": _Info(2, "half", "float16", "float"),
    "bfloat16": _Info(2, "bfloat16_t", "bfloat16", "float"),
    "float32": _Info(4, "float", "float32", "float"),
    "float64": _Info(8, "double", "float64", "float"),
    "int8": _Info(1, "int8_t", "int8", "int"),
    "int16": _Info(2, "int16_t", "int16", "int"),
    "int32": _Info(4, "int32_t", "int32", "int"),
    "int64": _Info(8, "int64_t", "int64", "int"),
    "uint8": _Info(1, "uint8_t", "uint8", "uint"),
    "uint16": _Info(2, "uint16_t", "uint16", "uint"),
    "uint32": _Info(4, "uint32_t", "uint32", "uint"),
    "uint64": _Info(8, "uint64_t", "uint64", "uint"),
    "bool": _Info(1, "bool", "bool", "bool"),
    "float8_e4m3fn": _Info(1, "fp8_e4m3fn_t", "float8_e4m3fn", "float"),
    "float8_e5m2": _Info(1, "fp8_e5m2_t", "float8_e5m2", "float"),
    # E8M0 (a power of two): the MX scale factors of T.gemm_blockscaled (MmadMx, dav-3510)
    "float8_e8m0fnu": _Info(1, "fp8_e8m0_t", "float8_e8m0fnu", "float"),
    "int4": _Info(1, "int4b_t", "int8", "int", bits=4),
}


class DType(str, enum.Enum):
    """A scalar type. The value is TileLang's (and TVM's) name for it."""

    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    UINT64 = "uint64"
    BOOL = "bool"
    FLOAT8_E4M3FN = "float8_e4m3fn"
    FLOAT8_E5M2 = "float8_e5m2"
    FLOAT8_E8M0FNU = "float8_e8m0fnu"
    INT4 = "int4"

    def __str__(self) -> str:
        return self.value

    @property
    def _info(self) -> _Info:
        return _INFO[self.value]

    @property
    def bytes(self) -> int:
        """Bytes one element occupies (int4 is stored one per byte until it is packed)."""
        return self._info.bytes

    @property
    def ctype(self) -> str:
        """The Ascend C type of one element (also what a scalar kernel argument is declared as)."""
        return self._info.ctype

    @property
    def host_ctype(self) -> str:
        """The C type a host wrapper passes a scalar argument of this dtype as: the kernel's own
        type for integers and float32, float for the 16-bit floats (the wrapper converts)."""
        if self in (DType.FLOAT16, DType.BFLOAT16):
            return "float"
        return self.ctype

    @property
    def is_float(self) -> bool:
        return self._info.kind == "float"

    @property
    def is_int(self) -> bool:
        return self._info.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self._info.kind in ("int", "float")

    @property
    def bits(self) -> int:
        return self._info.bits or 8 * self._info.bytes

    def torch_dtype(self):
        """The torch dtype of a tensor argument of this dtype."""
        import torch

        return getattr(torch, self._info.torch)

    @property
    def int_range(self) -> tuple[int, int] | None:
        """(min, max) of an integer dtype, None for floats."""
        if not self.is_int and self is not DType.BOOL:
            return None
        if self is DType.BOOL:
            return 0, 1
        if self.is_signed:
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        return 0, (1 << self.bits) - 1


def dtype(name) -> DType:
    """The DType of a TileLang/TVM dtype (a string, a tvm DataType or a DType)."""
    if isinstance(name, DType):
        return name
    text = str(name)
    try:
        return DType(text)
    except ValueError:
        raise KeyError(f"unknown dtype {text!r}") from None


def known(name) -> bool:
    return str(name) in _INFO


__all__ = ["DType", "dtype", "known"]
