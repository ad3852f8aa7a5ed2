"""Packaging as a Python user expects: the type stubs cover the module, the installed
distribution carries its metadata, stubs and `py.typed`, and the source distribution holds what
a build from it needs.

The installed-distribution and sdist checks need `pip install ./crates/shale-py` and `maturin`
(`.ci/run` has both); without them they are skipped with the reason, and under CI=true they fail.
"""

import ast
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import types

import pytest

import shale

HERE = pathlib.Path(__file__).resolve().parent
PKG = HERE.parent
REPO = PKG.parent.parent


def need(what):
    msg = f"{what}: not available here"
    if os.environ.get("CI"):
        pytest.fail(msg + " (CI=true: it must be)")
    pytest.skip(msg)


def workspace_version():
    text = (REPO / "Cargo.toml").read_text()
    m = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    assert m, "no version in the workspace Cargo.toml"
    return m.group(1)


def stub_tree():
    return ast.parse((PKG / "shale.pyi").read_text())


def test_stubs_declare_every_public_name_and_method():
    tree = stub_tree()
    top = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            top[node.name] = node
        elif isinstance(node, ast.AnnAssign):
            top[node.target.id] = node
    # (An installed package also has its extension module, `shale.shale`, as an attribute.)
    public = {
        n
        for n in dir(shale)
        if not n.startswith("_") and not isinstance(getattr(shale, n), types.ModuleType)
    }
    assert sorted(public - set(top)) == [], "names of the module missing from shale.pyi"
    undeclared = {}
    for name in public:
        node = top[name]
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(shale, name)
        declared = {
            m.name for m in node.body if isinstance(m, ast.FunctionDef)
        } | {m.target.id for m in node.body if isinstance(m, ast.AnnAssign)}
        # What a class inherits from a built-in base (an exception's `args`) needs no stub.
        inherited = set()
        for base in cls.__mro__[1:]:
            if base.__module__ == "builtins":
                inherited |= set(dir(base))
        missing = {a for a in dir(cls) if not a.startswith("_")} - declared - inherited
        if missing:
            undeclared[name] = sorted(missing)
    assert undeclared == {}, "methods missing from shale.pyi"


def test_stubs_name_only_what_the_module_has():
    extra = []
    for node in stub_tree().body:
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            if not hasattr(shale, node.name):
                extra.append(node.name)
                continue
            cls = getattr(shale, node.name)
            for m in node.body:
                if isinstance(m, ast.FunctionDef) and not m.name.startswith("_"):
                    if not hasattr(cls, m.name):
                        extra.append(f"{node.name}.{m.name}")
    assert extra == [], "shale.pyi declares names the module does not have"


def installed():
    from importlib import metadata

    try:
        return metadata.distribution("shale")
    except metadata.PackageNotFoundError:
        need("the installed `shale` distribution (pip install ./crates/shale-py)")


def test_installed_distribution_metadata():
    dist = installed()
    md = dist.metadata
    assert md["Name"] == "shale"
    assert md["Version"] == workspace_version()
    assert "Apache-2.0" in (md.get("License-Expression") or md.get("License") or "")
    assert md["Requires-Python"] == ">=3.9"
    classifiers = md.get_all("Classifier") or []
    assert "Programming Language :: Rust" in classifiers
    assert "Programming Language :: Python :: 3" in classifiers
    # The long description is the package's README: it shows the switch from rocksdict.
    assert "import shale as rocksdict" in (md.get_payload() or "")


def test_installed_distribution_has_stubs_and_py_typed():
    files = {str(f) for f in (installed().files or [])}
    assert "shale/py.typed" in files, sorted(files)
    assert "shale/__init__.pyi" in files, sorted(files)
    assert any(f.startswith("shale/") and f.endswith(".so") for f in files), sorted(files)
    assert any(f.endswith("LICENSE") for f in files), sorted(files)


def maturin():
    exe = shutil.which("maturin") or os.path.join(os.path.dirname(sys.executable), "maturin")
    if not os.path.exists(exe):
        need("maturin (pip install maturin)")
    return exe


def test_sdist_holds_what_a_build_needs(tmp_path):
    out = tmp_path / "dist"
    subprocess.run(
        [maturin(), "sdist", "-o", str(out)], cwd=PKG, check=True, capture_output=True
    )
    (sdist,) = list(out.glob("*.tar.gz"))
    assert sdist.name == f"shale-{workspace_version()}.tar.gz"
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
        top = t.getnames()[0].split("/", 1)[0]
        pkg_info = t.extractfile(f"{top}/PKG-INFO").read().decode()
    for need_file in [
        "pyproject.toml",
        "Cargo.toml",
        "Cargo.lock",
        "crates/shale/Cargo.toml",
        "crates/shale/src/lib.rs",
        "crates/shale-py/Cargo.toml",
        "crates/shale-py/src/lib.rs",
        "crates/shale-py/shale.pyi",
    ]:
        assert need_file in names, f"{need_file} missing from {sdist.name}"
    assert any(n.endswith("LICENSE") for n in names), sorted(names)
    assert "Name: shale" in pkg_info
    assert f"Version: {workspace_version()}" in pkg_info
    assert "import shale as rocksdict" in pkg_info
