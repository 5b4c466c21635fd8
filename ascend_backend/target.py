"""The "ascendc" target: normalisation of every accepted spelling, and the tilelang backend.

Accepted spellings (everywhere a target is accepted: tilelang.lower, ascend_backend.compile,
ascend_backend.jit, the CLI): ``"ascendc"`` (dav-3510), ``"ascendc:dav-c220"``,
``{"kind": "ascendc", "arch": "dav-c220"}`` and a TVM Target of kind ``ext_dev`` with key
``ascendc`` and ``model`` set to the arch. TVM cannot register a new target kind from Python,
and kind ``ascend`` belongs to tilelang's own Ascend backend, so the target lives on the
otherwise unowned kind ``ext_dev``; the arch rides in its ``model`` attribute.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .arch import Arch, get_arch
from .errors import TargetError

TARGET_KEY = "ascendc"


def parse_target(target: Any) -> Arch:
    """The arch a target spelling selects, or a TargetError saying what is accepted."""
    from tvm.target import Target

    if target is None:
        return get_arch(None)
    if isinstance(target, Arch):
        return target
    if isinstance(target, str):
        t = target.strip()
        if t == TARGET_KEY:
            return get_arch(None)
        for sep in (":", " -arch=", " --arch="):
            if t.startswith(TARGET_KEY + sep):
                return get_arch(t[len(TARGET_KEY + sep):].strip())
    elif isinstance(target, Mapping):
        if target.get("kind") == TARGET_KEY:
            unknown = set(target) - {"kind", "arch"}
            if unknown:
                raise TargetError(f"unknown option(s) {sorted(unknown)} for target 'ascendc'",
                                  hint='write {"kind": "ascendc", "arch": "dav-3510" | "dav-c220"}')
            return get_arch(target.get("arch"))
        if target.get("kind") == "ext_dev" and TARGET_KEY in target.get("keys", ()):
            return get_arch(target.get("model"))
    elif isinstance(target, Target):
        if target.kind.name == "ext_dev" and TARGET_KEY in list(target.keys):
            return get_arch(str(target.attrs.get("model", "")) or None)
    raise TargetError(
        f"target {target!r} is not an ascendc target",
        hint='use "ascendc" or {"kind": "ascendc", "arch": "dav-c220"} (arch: dav-3510, the default, or dav-c220)',
    )


def is_ascendc_target(target: Any) -> bool:
    try:
        parse_target(target)
        return True
    except TargetError:
        return False


def make_tvm_target(arch: Arch):
    from tvm.target import Target

    return Target({"kind": "ext_dev", "keys": [TARGET_KEY], "model": arch.name})


def _normalize(target: Any):
    """tilelang target normaliser: our spellings -> an ext_dev Target; others untouched."""
    try:
        if isinstance(target, str) and not target.strip().startswith(TARGET_KEY):
            return None
        if isinstance(target, Mapping) and target.get("kind") != TARGET_KEY:
            return None
        if not isinstance(target, str | Mapping):
            return None
        return make_tvm_target(parse_target(target))
    except TargetError:
        return None


_REGISTERED = False


def register() -> None:
    """Register the target normaliser and the backend with tilelang (idempotent)."""
    global _REGISTERED
    if _REGISTERED:
        return
    from tilelang.backend.device_codegen import DeviceCodegen
    from tilelang.backend.execution_backend import ExecutionBackendSpec
    from tilelang.backend.module import BackendModule, register_backend
    from tilelang.backend.pass_pipeline import PassPipeline
    from tilelang.backend.target import register_target_normalizer

    from .tilelang_backend import codegen_device, lower_module

    register_target_normalizer(TARGET_KEY, _normalize, override=True)

    def supports(t) -> bool:
        return TARGET_KEY in list(t.keys)

    register_backend(
        BackendModule(
            name=TARGET_KEY,
            target_kinds=("ext_dev",),
            supports_target=supports,
            pipelines={"ext_dev": PassPipeline("ext_dev", lower_module)},
            device_codegens={"ext_dev": DeviceCodegen(name=TARGET_KEY, build=codegen_device,
                                                      build_without_compile=codegen_device)},
            execution_backends=(ExecutionBackendSpec(TARGET_KEY),),
        )
    )
    _REGISTERED = True
