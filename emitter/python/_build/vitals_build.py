"""A PEP 517 build backend for the vitals package, standard library only.

With setuptools as the backend, pip would first download setuptools into
an isolated build environment, which fails offline. This backend needs
nothing from PyPI.

The wheel is self-contained: when the package is built from the vitals
source tree (emitter/python inside it), the backend builds libvitals.so
with the tree's Makefile into a temporary folder and puts it in the
wheel as vitals/libvitals.so, so the installed package keeps working
after the tree is gone. Such a wheel is tagged for this platform
(py3-none-linux_x86_64: the library is loaded with ctypes, so any
Python 3 will do). Built without the tree (from the sdist, or a copy of
emitter/python alone), or with ``--config-settings bundle=no``, the wheel is pure
Python and the package loads the libvitals.so.0 installed by
``make install`` through the system loader.
"""

import base64
import hashlib
import io
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

NAME = "vitals"
VERSION = "0.1.0"
PURE_TAG = "py3-none-any"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREE = os.path.normpath(os.path.join(ROOT, "..", ".."))
LIB = "libvitals.so"
METADATA = """Metadata-Version: 2.1
Name: vitals
Version: {v}
Summary: Vital signs for training runs: push metrics to a vitalsd collector
License: see the source tree
Requires-Python: >=3.8

ctypes binding of libvitals (standard library only). See vitals/__init__.py.
""".format(v=VERSION)
WHEEL = """Wheel-Version: 1.0
Generator: vitals_build
Root-Is-Purelib: {pure}
Tag: {t}
"""


def _say(msg):
    sys.stderr.write("vitals_build: %s\n" % msg)


def _in_tree():
    """True when ROOT is emitter/python of a vitals source tree."""
    return all(os.path.exists(os.path.join(TREE, p))
               for p in ("Makefile", "include/vitals.h", "emitter/io.c"))


def _want_bundle(config_settings):
    v = (config_settings or {}).get("bundle", "auto")
    if v not in ("auto", "yes", "no"):
        raise ValueError("vitals_build: bundle=%r: expected auto, yes "
                         "or no" % (v,))
    return v


def _build_library(tmp):
    """Build libvitals.so from the tree into tmp; return its bytes.

    Raises RuntimeError with make's output when the build fails."""
    out = os.path.join(tmp, "build")
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SANITIZER"):
        env.pop(k, None)
    # WERROR= : a newer compiler's new warning must not stop an install.
    cmd = ["make", "-C", TREE, "--no-print-directory", "-s", "-j2",
           "B=" + out, "WERROR=", os.path.join(out, LIB)]
    _say("building %s: %s" % (LIB, " ".join(cmd)))
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    except OSError as e:
        raise RuntimeError("cannot run make: %s" % e)
    if p.returncode != 0:
        raise RuntimeError("building %s failed (exit %d):\n%s"
                           % (LIB, p.returncode,
                              p.stdout.decode(errors="replace")))
    with open(os.path.join(out, LIB), "rb") as f:
        return f.read()


def _system_library():
    """True if the system loader finds an installed libvitals.so.0."""
    import ctypes
    try:
        ctypes.CDLL("libvitals.so.0")
        return True
    except OSError:
        return False


def _package_files():
    pkg = os.path.join(ROOT, NAME)
    out = []
    for name in sorted(os.listdir(pkg)):
        # _where.py was written by earlier versions of this backend.
        if name.endswith(".py") and name != "_where.py":
            with open(os.path.join(pkg, name), "rb") as f:
                out.append((NAME + "/" + name, f.read()))
    return out


def _platform_tag():
    return "py3-none-" + sysconfig.get_platform().replace("-", "_") \
        .replace(".", "_")


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "%s,sha256=%s,%d" % (path, digest.rstrip(b"=").decode(),
                                len(data))


def _wheel(directory, files, tag=PURE_TAG):
    dist = "%s-%s.dist-info" % (NAME, VERSION)
    name = "%s-%s-%s.whl" % (NAME, VERSION, tag)
    wheel = WHEEL.format(pure="true" if tag == PURE_TAG else "false", t=tag)
    files = files + [(dist + "/METADATA", METADATA.encode()),
                     (dist + "/WHEEL", wheel.encode()),
                     (dist + "/top_level.txt", (NAME + "\n").encode())]
    record = [_record_line(p, d) for p, d in files]
    record.append(dist + "/RECORD,,")
    files.append((dist + "/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(directory, name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            # The library must stay executable (0755), the rest 0644.
            mode = 0o755 if path.endswith(".so") else 0o644
            info.external_attr = (0o100000 | mode) << 16
            z.writestr(info, data)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    bundle = _want_bundle(config_settings)
    files = _package_files()
    if bundle == "no":
        return _wheel(wheel_directory, files)
    if not _in_tree():
        if bundle == "yes":
            raise RuntimeError("bundle=yes: %s is not emitter/python of "
                               "a vitals source tree" % ROOT)
        _say("not in a vitals source tree: a pure wheel; the package "
             "will load libvitals.so.0 installed by `make install`")
        return _wheel(wheel_directory, files)
    tmp = tempfile.mkdtemp(prefix="vitals-build-")
    try:
        data = _build_library(tmp)
    except RuntimeError as e:
        if bundle == "auto" and _system_library():
            _say("%s\nfalling back to the installed libvitals.so.0" % e)
            return _wheel(wheel_directory, files)
        raise RuntimeError(
            "%s\nvitals_build: install the build dependencies (sh "
            "scripts/deps.sh), or `make install` the library and build "
            "with --config-settings bundle=no" % e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    files.append((NAME + "/" + LIB, data))
    return _wheel(wheel_directory, files, _platform_tag())


def build_editable(wheel_directory, config_settings=None,
                   metadata_directory=None):
    # A .pth file puts the source folder on sys.path (PEP 660); the
    # package then finds the tree's build/libvitals.so.
    return _wheel(wheel_directory,
                  [(NAME + "_editable.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, VERSION)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ("pyproject.toml", "README.md", "_build/vitals_build.py"):
            t.add(os.path.join(ROOT, rel), arcname=base + "/" + rel)
        for path, data in _package_files():
            info = tarfile.TarInfo(base + "/" + path)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        pkg_info = tarfile.TarInfo(base + "/PKG-INFO")
        pkg_info.size = len(METADATA.encode())
        t.addfile(pkg_info, io.BytesIO(METADATA.encode()))
    return name
