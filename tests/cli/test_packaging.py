"""The installed package holds every subpackage of the checkout.

pyproject.toml lists packages by hand (passes/ and templates/ live outside ascend_backend/), so a
new subpackage left off the list installs fine in editable mode and fails on a clean install.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    tomllib = pytest.importorskip("tomli")


def _listed() -> tuple[set[str], dict[str, str]]:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(conf["packages"]), dict(conf["package-dir"])


def test_every_subpackage_is_listed_for_install():
    packages, dirs = _listed()
    found = set()
    for top, name in (("ascend_backend", "ascend_backend"), ("passes", "ascend_backend.passes"),
                      ("templates", "ascend_backend.templates")):
        assert dirs.get(name) == top, f"package-dir must map {name} to {top}/"
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            found.add(".".join([name, *rel.parts]))
    missing = sorted(found - packages)
    assert not missing, f"add {missing} to [tool.setuptools] packages in pyproject.toml"
