"""Finding and loading libvitals.so, and the C prototypes.

The library is searched, in order:

1. ``$VITALS_LIB``: the library file, or a folder holding ``libvitals.so``;
2. the package folder (``vitals/libvitals.so``): the copy that
   ``pip install ./emitter/python`` builds and bundles;
3. the ``build/`` folder of the source tree, relative to this file, when
   the package is used from the tree (``PYTHONPATH=emitter/python``);
4. the system loader path (``libvitals.so.0``, ``libvitals.so``:
   ``make install`` and ``ldconfig``, ``$LD_LIBRARY_PATH``).

Hot functions (vt_log, vt_emit) are called through ``ctypes.PyDLL``: they
never block, so they keep the GIL, which saves releasing and taking it on
every sample. Functions that may wait (vt_open, vt_flush, vt_close,
vt_shutdown, vt_default) go through ``ctypes.CDLL`` and release it.

The ``*_raw`` variants of the hot functions have no ``argtypes``: ctypes
then skips a ``from_param`` conversion per argument, which halves the cost
of a call (0.44 -> 0.22 us). Their callers must pass exactly bytes, a
``c_void_p``, a ``c_uint64``, a ``c_int64`` and a ``c_double``.
"""

import ctypes
import os

LIB_NAME = "libvitals.so"


class Opts(ctypes.Structure):
    """struct vt_opts of vitals.h."""

    _fields_ = [
        ("endpoint", ctypes.c_char_p),
        ("run", ctypes.c_char_p),
        ("host", ctypes.c_char_p),
        ("rank", ctypes.c_int),
        ("local_rank", ctypes.c_int),
        ("world_size", ctypes.c_int),
        ("max_buffer_bytes", ctypes.c_size_t),
        ("flush_interval_ms", ctypes.c_uint),
        ("close_timeout_ms", ctypes.c_uint),
        ("curve_server_key_file", ctypes.c_char_p),
        ("curve_key_file", ctypes.c_char_p),
    ]


class Stats(ctypes.Structure):
    """struct vt_stats of vitals.h."""

    _fields_ = [
        (name, ctypes.c_uint64)
        for name in ("logged", "dropped", "sent", "acked", "resent",
                     "rejected", "pending")
    ]


def candidates():
    """The places searched for the library, in order."""
    out = []
    env = os.environ.get("VITALS_LIB")
    if env:
        out.append(os.path.join(env, LIB_NAME) if os.path.isdir(env)
                   else env)
    here = os.path.dirname(os.path.abspath(__file__))
    out.append(os.path.join(here, LIB_NAME))
    out.append(os.path.normpath(os.path.join(here, "..", "..", "..",
                                             "build", LIB_NAME)))
    out.append("libvitals.so.0")
    out.append(LIB_NAME)
    return out


def _prototypes(fast, slow):
    c_int, c_uint, c_u64 = ctypes.c_int, ctypes.c_uint, ctypes.c_uint64
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    protos = [
        (fast, "vt_log", [cp, c_u64, ctypes.c_double], c_int),
        (fast, "vt_emit", [vp, cp, c_u64, ctypes.c_double], c_int),
        (fast, "vt_emit_at", [vp, cp, c_u64, ctypes.c_int64,
                              ctypes.c_double], c_int),
        (fast, "vt_phase", [cp, c_u64], c_int),
        (fast, "vt_phase_end", [cp, c_u64], c_int),
        (fast, "vt_emit_phase", [vp, cp, c_u64], c_int),
        (fast, "vt_emit_phase_end", [vp, cp, c_u64], c_int),
        (fast, "vt_get_stats", [vp, ctypes.POINTER(Stats)], None),
        (fast, "vt_strerror", [c_int], cp),
        (fast, "vt_errmsg", [vp], cp),
        (fast, "vt_incarnation", [vp], c_u64),
        (fast, "vt_version", [], c_uint),
        (fast, "vt_opts_init", [ctypes.POINTER(Opts)], None),
        (slow, "vt_open", [ctypes.POINTER(Opts), ctypes.POINTER(vp)], c_int),
        (slow, "vt_close", [vp], None),
        (slow, "vt_flush", [vp, c_uint], c_int),
        (slow, "vt_end", [vp, c_uint], c_int),
        (slow, "vt_mark_failed", [vp], None),
        (slow, "vt_default", [], vp),
        (slow, "vt_shutdown", [], None),
    ]
    funcs = {}
    for lib, name, args, res in protos:
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = res
        funcs[name] = f
    for name in ("vt_log", "vt_emit", "vt_emit_at", "vt_phase",
                 "vt_phase_end", "vt_emit_phase", "vt_emit_phase_end"):
        f = fast[name]  # a new function object, not the one above
        f.restype = c_int
        funcs[name + "_raw"] = f
    return funcs


def load():
    """Load the library.

    Returns (functions by name, path) or (None, message saying where it
    was looked for and why each failed). Never raises.
    """
    tried = []
    for path in candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            slow = ctypes.CDLL(path)
            fast = ctypes.PyDLL(path)
            funcs = _prototypes(fast, slow)
        except (OSError, AttributeError) as e:
            tried.append("%s (%s)" % (path, e))
            continue
        major = funcs["vt_version"]() >> 16
        if major != 0:
            tried.append("%s (version %d, this binding speaks 0)"
                         % (path, major))
            continue
        return funcs, path
    return None, ("libvitals.so not found; set VITALS_LIB to its path. "
                  "Tried: " + "; ".join(tried))
