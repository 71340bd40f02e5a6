"""Fresh machines: `make install` never installs into the system Python, and nothing names this machine's folders.

The bootstrap is exercised for real against two interpreters `python3 -m pip install uv` fails on: a Python whose
stdlib carries PEP 668's ``EXTERNALLY-MANAGED`` marker (a copy of this interpreter's layout, as Debian ships it)
and a venv created ``--without-pip``. uv comes from the package index or pip's cache; where neither is reachable
the bootstrap tests skip, saying so.
"""
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Absolute folders of developer machines and CI images that must never appear in tracked files.
MACHINE_PATHS = r"(^|[^A-Za-z0-9_.])/(work|root|home|opt/wheels|opt/pypi|Users)/"


pytestmark = pytest.mark.slow


def test_no_absolute_machine_paths_in_tracked_files():
    done = subprocess.run(["git", "grep", "-InE", MACHINE_PATHS], cwd=REPO, capture_output=True, text=True)
    if done.returncode == 128:
        pytest.skip(f"not a git checkout: {done.stderr.strip()}")
    assert done.returncode == 1, "absolute machine paths in tracked files:\n" + done.stdout


def test_makefile_has_no_machine_default_for_torch_wheels():
    with open(os.path.join(REPO, "Makefile")) as f:
        lines = [line.strip() for line in f if line.startswith("TORCH_WHEELS")]
    assert lines == ["TORCH_WHEELS ?="]


def _externally_managed_python(root):
    """A copy of this interpreter's prefix layout (binary copied, stdlib linked) with PEP 668's marker."""
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    stdlib = sysconfig.get_paths()["stdlib"]
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    bindir, libdir = os.path.join(root, "bin"), os.path.join(root, "lib", version)
    os.makedirs(bindir)
    os.makedirs(os.path.join(libdir, "site-packages"))
    shutil.copy2(base, os.path.join(bindir, version))
    for name in os.listdir(stdlib):
        if name not in ("site-packages", "dist-packages", "EXTERNALLY-MANAGED"):
            os.symlink(os.path.join(stdlib, name), os.path.join(libdir, name))
    shared = sysconfig.get_config_var("LIBDIR") or ""
    for name in os.listdir(shared) if os.path.isdir(shared) else ():
        if name.startswith("libpython"):  # for interpreters linked with an $ORIGIN-relative runpath
            os.symlink(os.path.join(shared, name), os.path.join(root, "lib", name))
    # Located in a subprocess: importing pip here would switch off setuptools' distutils shim for this whole
    # session (its meta-path finder yields to pip), breaking later in-process imports of setuptools.
    pip_dir = subprocess.run([sys.executable, "-c", "import os, pip; print(os.path.dirname(pip.__file__))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    os.symlink(pip_dir, os.path.join(libdir, "site-packages", "pip"))
    with open(os.path.join(libdir, "EXTERNALLY-MANAGED"), "w") as f:
        f.write("[externally-managed]\nError=This Python is managed by the test's fake distribution.\n")
    python = os.path.join(bindir, version)
    probe = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True)
    if probe.returncode != 0 or os.path.realpath(probe.stdout.strip()) != os.path.realpath(root):
        pytest.skip(f"cannot build a relocated copy of {base}: {probe.stderr.strip() or probe.stdout.strip()}")
    return python


def _pipless_venv(root):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root], check=True)
    return os.path.join(root, "bin", "python")


@pytest.mark.parametrize("kind,refusal", [("externally-managed", "externally-managed-environment"),
                                          ("without-pip", "No module named pip")])
def test_make_install_bootstraps_uv_without_touching_the_python(tmp_path, kind, refusal):
    python = (_externally_managed_python if kind == "externally-managed" else _pipless_venv)(str(tmp_path / "py"))
    # The old bootstrap, `python3 -m pip install uv`, fails on this interpreter (--dry-run: even if it did not,
    # nothing is installed).
    old = subprocess.run([python, "-m", "pip", "install", "--dry-run", "--no-index", "uv"], capture_output=True,
                         text=True)
    assert old.returncode != 0 and refusal in old.stderr, old.stderr[-800:]

    boot = tmp_path / "uv-bootstrap"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    # `UV=` on the command line: behave as on a machine without uv on PATH.
    done = subprocess.run(["make", "-s", "-C", REPO, "uv", f"PYTHON={python}", f"UV_BOOTSTRAP={boot}", "UV="],
                          capture_output=True, text=True, env=env, timeout=300)
    if done.returncode != 0 and any(s in done.stderr for s in ("No matching distribution", "Could not find a version",
                                                               "NewConnectionError", "Network is unreachable",
                                                               "Temporary failure in name resolution")):
        pytest.skip(f"offline and uv is not in pip's cache: cannot fetch uv ({done.stderr.strip()[-200:]})")
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
    uv = done.stdout.strip().splitlines()[-1]
    assert uv == f"{boot}/bin/uv"
    version = subprocess.run([uv, "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("uv "), version
    # Nothing was installed into the interpreter itself.
    check = subprocess.run([python, "-c", "import importlib.util as u; print(u.find_spec('uv') is None)"],
                           capture_output=True, text=True)
    assert check.stdout.strip() == "True", check
    # A second `make uv` finds the bootstrapped copy and does nothing.
    again = subprocess.run(["make", "-s", "-C", REPO, "uv", f"PYTHON={python}", f"UV_BOOTSTRAP={boot}", "UV="],
                           capture_output=True, text=True, env=env, timeout=60)
    assert again.returncode == 0 and again.stdout.strip() == uv and "installing" not in again.stdout
