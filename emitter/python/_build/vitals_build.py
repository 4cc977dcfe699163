"""A PEP 517 build backend for the vitals package, standard library only.

With setuptools as the backend, pip would first download setuptools into
an isolated build environment, which fails offline. This backend needs
nothing: it zips vitals/*.py into a pure wheel, plus vitals/_where.py,
which records the build/ folder of the source tree the wheel was made
from, so that an installed package finds the libvitals.so built there.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "vitals"
VERSION = "0.1.0"
TAG = "py3-none-any"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
Root-Is-Purelib: true
Tag: {t}
""".format(t=TAG)


def _package_files():
    pkg = os.path.join(ROOT, NAME)
    out = []
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py") and name != "_where.py":
            with open(os.path.join(pkg, name), "rb") as f:
                out.append((NAME + "/" + name, f.read()))
    tree_build = os.path.normpath(os.path.join(ROOT, "..", "..", "build"))
    out.append((NAME + "/_where.py",
                ("# Written by the build backend: the build/ folder of the "
                 "source tree\n# this package was installed from.\n"
                 "BUILD_DIR = %r\n" % tree_build).encode()))
    return out


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "%s,sha256=%s,%d" % (path, digest.rstrip(b"=").decode(),
                                len(data))


def _wheel(directory, files):
    dist = "%s-%s.dist-info" % (NAME, VERSION)
    name = "%s-%s-%s.whl" % (NAME, VERSION, TAG)
    files = files + [(dist + "/METADATA", METADATA.encode()),
                     (dist + "/WHEEL", WHEEL.encode()),
                     (dist + "/top_level.txt", (NAME + "\n").encode())]
    record = [_record_line(p, d) for p, d in files]
    record.append(dist + "/RECORD,,")
    files.append((dist + "/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(directory, name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            z.writestr(path, data)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    return _wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None,
                   metadata_directory=None):
    # A .pth file puts the source folder on sys.path (PEP 660).
    return _wheel(wheel_directory,
                  [(NAME + "_editable.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, VERSION)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ("pyproject.toml", "README.md", "_build/vitals_build.py"):
            t.add(os.path.join(ROOT, rel), arcname=base + "/" + rel)
        for path, data in _package_files():
            if path.endswith("_where.py"):
                continue
            info = tarfile.TarInfo(base + "/" + path)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        pkg_info = tarfile.TarInfo(base + "/PKG-INFO")
        pkg_info.size = len(METADATA.encode())
        t.addfile(pkg_info, io.BytesIO(METADATA.encode()))
    return name
