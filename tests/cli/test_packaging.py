"""What `pip install .` installs: every subpackage of the checkout, metadata whose runtime
requirements leave the test tools to the `dev` extra (with project URLs and classifiers), and a
package that imports and runs without those tools.

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


# ---------------------------------------------------------------------------------------------
# What `pip install .` installs: its metadata, and a package that runs without the test tools
# ---------------------------------------------------------------------------------------------
TEST_TOOLS = ("pytest", "pytest-xdist", "hypothesis", "ruff")


def _built_metadata(tmp_path: Path):
    """The METADATA `pip install .` would install, made by the build backend from a copy of the
    checkout (the editable install's metadata is as old as its last `pip install -e`)."""
    import email
    import shutil
    import subprocess

    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.so")
    for d in ("ascend_backend", "passes", "templates", "tl_ascend"):
        shutil.copytree(ROOT / d, src / d, ignore=ignore)
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, src / f)
    out = tmp_path / "meta"
    out.mkdir()
    code = ("import sys, setuptools.build_meta as b; "
            "print(b.prepare_metadata_for_build_wheel(sys.argv[1]))")
    proc = subprocess.run([sys.executable, "-c", code, str(out)], cwd=src, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Deprecat" not in proc.stderr, proc.stderr[-3000:]  # setuptools' deprecations end in build failures
    dist_info = proc.stdout.strip().splitlines()[-1]
    return email.message_from_string((out / dist_info / "METADATA").read_text())


def test_metadata_test_tools_are_dev_extra_only_and_urls_classifiers(tmp_path):
    meta = _built_metadata(tmp_path)
    requires = meta.get_all("Requires-Dist") or []
    runtime = [r for r in requires if "extra ==" not in r]
    dev = [r for r in requires if 'extra == "dev"' in r]
    names = [r.split(";")[0].strip().split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in runtime]
    for tool in TEST_TOOLS:
        assert tool not in names, f"{tool} is a runtime dependency: {runtime}"
        assert any(r.lower().startswith(tool) for r in dev), f"{tool} missing from the dev extra: {dev}"
    assert {"tilelang", "torch", "jinja2", "lark", "rich"} <= set(names), runtime
    urls = meta.get_all("Project-URL") or []
    assert urls and all("https://" in u for u in urls), urls
    classifiers = meta.get_all("Classifier") or []
    assert meta.get("License-Expression") == "Apache-2.0", meta.items()
    assert any(c.startswith("Programming Language :: Python :: 3") for c in classifiers), classifiers


def test_package_imports_and_runs_without_the_test_tools():
    """Every module of the package imports with pytest, xdist and hypothesis unimportable, and the
    CLI answers; a module importing one of them at run time fails this."""
    import subprocess

    code = r"""
import sys
for name in ("pytest", "_pytest", "xdist", "hypothesis"):
    sys.modules[name] = None  # `import pytest` now raises ImportError
import importlib, os, pkgutil
import ascend_backend, ascend_backend.passes, ascend_backend.templates
failed = []
# In a checkout ascend_backend.__path__ also holds the checkout's root (for passes/, templates/):
# walk the package's own folders only.
roots = [(os.path.dirname(ascend_backend.__file__), "ascend_backend."),
         (ascend_backend.passes.__path__[0], "ascend_backend.passes."),
         (ascend_backend.templates.__path__[0], "ascend_backend.templates.")]
mods = [m for path, prefix in roots for m in pkgutil.walk_packages([path], prefix)]
assert len(mods) > 30, mods
for mod in mods:
    try:
        importlib.import_module(mod.name)
    except ImportError as exc:
        failed.append(f"{mod.name}: {exc}")
assert not failed, failed
from ascend_backend.cli import main
assert main(["--version"]) == 0
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=str(ROOT / "examples"))
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout[-2000:] + proc.stderr[-3000:]
