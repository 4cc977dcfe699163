"""vitals: push training metrics to a vitalsd collector.

One line per step::

    import vitals

    for step in range(steps):
        ...
        vitals.log(step, loss=loss, grad_norm=gn, tokens_per_sec=tps)

Names that are not Python identifiers go in a dict:
``vitals.log(step, {"train/loss": loss})``.

Values may be Python floats, ints and bools, numpy scalars, and 0-d (or
one-element) tensors: anything ``float(x)`` or ``x.item()`` turns into a
number; neither torch nor numpy is imported here. A CUDA tensor is not
converted on the spot (that would wait for the GPU): it is copied to the
host without blocking and logged when the copy is done (vitals.torch,
imported then). ``None`` values are skipped.

Telemetry never breaks training: ``log`` never raises. A bad value, a bad
name, a full buffer or a missing library is counted (``vitals.stats()``)
and reported once through the ``logging`` logger ``"vitals"``.

Identity and configuration come from the environment, as for the C
library: ``VITALS_ENDPOINT``, ``VITALS_RUN``, ``RANK``, ``LOCAL_RANK``,
``WORLD_SIZE`` (or Slurm's), ``VITALS_MAX_BUFFER``,
``VITALS_CLOSE_TIMEOUT_MS``. ``vitals.Emitter(run=..., endpoint=...,
rank=...)`` gives an explicit emitter.

Processes: a child made by ``fork()`` (``multiprocessing``, DataLoader
workers) gets its own emitter, with a new incarnation, on its first
``log``. The last samples are flushed (for at most the close timeout) at
normal interpreter exit by the library, and at the end of a
``multiprocessing`` child by this module; a child that ends with
``os._exit()`` should call ``vitals.end()`` first.

Ending: at a normal exit each emitter tells vitalsd it ended (so a
finished run is not reported as stalled). An exit caused by an unhandled
exception (other than ``KeyboardInterrupt``) does not: the run's silence
is then flagged. ``vitals.mark_failed()`` says the same for a run that
ends badly in another way (``sys.exit(1)`` after catching an error).

The library is found as ``_lib.py`` describes (``$VITALS_LIB`` first).
"""

import atexit
import ctypes
import logging
import operator
import os
import sys
import weakref

from . import _lib

__all__ = ["log", "phase", "phase_begin", "phase_end", "flush", "end", "mark_failed", "shutdown", "stats",
           "Emitter", "VitalsError", "available", "library_path", "version"]
__version__ = "0.1.0"

# vt_err codes of vitals.h (append-only there).
VT_OK, VT_EINVAL, VT_ENOMEM, VT_ENAME, VT_EFULL, VT_ETIMEDOUT = range(6)
VT_ETRANSPORT, VT_EFORKED, VT_ETOOMANY, VT_ETHREAD, VT_ECLOSED = range(6, 11)
_NOLIB = -1

_logger = logging.getLogger("vitals")
_funcs, _where = _lib.load()
library_path = _where if _funcs is not None else None
_load_error = None if _funcs is not None else _where


class VitalsError(Exception):
    """An emitter could not be opened (Emitter() only; log never raises)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def available():
    """True if libvitals.so was loaded."""
    return _funcs is not None


def version():
    """The C library's version as (major, minor, patch), or None."""
    if _funcs is None:
        return None
    v = _funcs["vt_version"]()
    return (v >> 16, (v >> 8) & 0xFF, v & 0xFF)


# ---- problems: counted, reported once per kind ----------------------------

_problems = {}


def _problem(kind, message):
    n = _problems.get(kind, 0)
    _problems[kind] = n + 1
    if n == 0:
        try:
            _logger.warning("vitals: %s (reported once; see "
                            "vitals.stats())", message)
        except Exception:
            pass


def _strerror(rc):
    if rc == _NOLIB:
        return _load_error
    try:
        return _funcs["vt_strerror"](rc).decode()
    except Exception:
        return "error %d" % rc


def _failed(rc, name):
    """A non-zero return of the C library for metric name."""
    if rc == _NOLIB:
        _problem("no_library", "telemetry is off: " + _load_error)
    elif rc == VT_EFULL:
        _problem("dropped", "buffer full: samples dropped (the collector "
                 "is slow or down; the count is stored with the run)")
    elif rc == VT_ENAME:
        _problem("bad_name", "metric name %r refused: %s"
                 % (name, _strerror(rc)))
    else:
        _problem("error_%d" % rc, "metric %r: %s" % (name, _strerror(rc)))


# ---- conversions ----------------------------------------------------------

_names = {}
_NAMES_MAX = 65536


def _name(name):
    """The encoded name, cached; None (counted) if it cannot be one."""
    try:
        b = (name if isinstance(name, str) else str(name)).encode("utf-8")
    except Exception:
        _problem("bad_name", "metric name %r is not text" % (name,))
        return None
    if len(_names) < _NAMES_MAX:
        _names[name] = b
    return b


def _value(v, name):
    """A float from a number-like value; None to skip it."""
    if v is None:
        return None
    if not isinstance(v, (str, bytes)):
        try:
            return float(v)
        except Exception:
            try:
                return float(v.item())
            except Exception:
                pass
    _problem("bad_value", "metric %r: value %s is not a number (a scalar "
             "or a one-element tensor)" % (name, _short(v)))
    return None


def _defer_cuda(step, name, v, emitter):
    """A CUDA tensor: float() would wait for the GPU. vitals.torch copies
    it to the host without blocking and logs it once the copy is done."""
    try:
        from . import torch as vtorch
        vtorch.defer(step, name, v, emitter)
    except Exception as e:
        _problem("cuda_value", "metric %r: CUDA tensor not logged: %r"
                 % (name, e))


def _short(v):
    try:
        s = repr(v)
    except Exception:
        s = "of type " + type(v).__name__
    return s if len(s) <= 60 else s[:57] + "..."


def _step(step):
    """A uint64 step from an int-like value; None (counted) if none."""
    try:
        s = operator.index(step)
    except TypeError:
        try:
            f = float(step)
            s = int(f) if f.is_integer() else None
        except Exception:
            s = None
    if s is None or s < 0 or s >= 1 << 64:
        _problem("bad_step", "step %s is not an integer in [0, 2^64)"
                 % _short(step))
        return None
    return s


# ---- the default emitter --------------------------------------------------

def _no_lib(name, step, value):
    return _NOLIB


_c_log = _funcs["vt_log_raw"] if _funcs is not None else _no_lib
_D = ctypes.c_double
_U = ctypes.c_uint64
_U64 = 1 << 64
_default_used = False


def _first_log(name, step, value):
    # The first sample of this process through the default emitter:
    # remembered so that a multiprocessing child flushes only if it
    # logged; afterwards log() calls the C function directly.
    global _vt_log, _default_used
    _default_used = True
    _vt_log = _c_log
    return _c_log(name, step, value)


_vt_log = _first_log


def log(step, metrics=None, /, **kw):
    """Record metrics at step on the default emitter.

    ``log(step, loss=..., grad_norm=...)`` or ``log(step, {"a/b": ...})``.
    Never raises and never blocks: problems are counted and reported once.
    """
    try:
        if type(step) is not int or not 0 <= step < _U64:
            step = _step(step)
            if step is None:
                return
        if metrics:
            log(step, **{str(k): v for k, v in metrics.items()})
        cstep = _U(step)
        for name, v in kw.items():
            b = _names.get(name)
            if b is None:
                b = _name(name)
                if b is None:
                    continue
            if type(v) is not float:
                if type(v) is not int and getattr(v, "is_cuda", False):
                    _defer_cuda(step, name, v, None)
                    continue
                v = _value(v, name)
                if v is None:
                    continue
            # Raw call: exactly bytes, c_uint64, c_double (see _lib).
            rc = _vt_log(b, cstep, _D(v))
            if rc:
                _failed(rc, name)
    except Exception as e:  # a telemetry bug must not stop training
        _problem("internal", "internal error: %r" % (e,))


# ---- phase markers --------------------------------------------------------

STEP_LATEST = (1 << 64) - 1  # VT_STEP_LATEST: the latest step logged
_phases = []  # the phases entered with phase(), innermost last


def _phase_call(f, h, name, step):
    # f is a raw C function (exactly bytes and c_uint64, see _lib).
    try:
        b = _names.get(name)
        if b is None:
            b = _name(name)
            if b is None:
                return
        if step is None:
            step = STEP_LATEST
        elif type(step) is not int or not 0 <= step < _U64:
            step = _step(step)
            if step is None:
                return
        rc = f(b, _U(step)) if h is None else f(h, b, _U(step))
        if rc:
            _failed(rc, "vitals/phase/" + str(name))
    except Exception as e:  # a telemetry bug must not stop training
        _problem("internal", "internal error: %r" % (e,))


def _no_phase(*args):
    return _NOLIB


_c_phase = _funcs["vt_phase_raw"] if _funcs is not None else _no_phase
_c_phase_end = (_funcs["vt_phase_end_raw"] if _funcs is not None
                else _no_phase)


def phase_begin(name, step=None):
    """This rank enters phase ``name`` ("data", "forward", "backward",
    "collective", "optimizer", "checkpoint", "eval", or a name of its
    own), leaving the phase it was in. ``step``: the step it is in
    (None: the latest step logged). Costs about one ``log`` of one
    metric; never raises. The emitter derives ``phase_time/NAME`` (ms per
    step) from the markers.
    """
    global _default_used
    _default_used = True
    _phase_call(_c_phase, None, name, step)


def phase_end(name, step=None):
    """This rank leaves phase ``name`` (and is in no named phase)."""
    _phase_call(_c_phase_end, None, name, step)


class phase:
    """``with vitals.phase("checkpoint"): ...``: the rank is in the phase
    for the block, then back in the phase it was in before (entered with
    another ``with vitals.phase``), or in none. Never raises.
    """

    __slots__ = ("name", "step", "_begin", "_end")

    def __init__(self, name, step=None):
        self.name = name
        self.step = step
        self._begin = phase_begin
        self._end = phase_end

    def __enter__(self):
        _phases.append(self.name)
        self._begin(self.name, self.step)
        return self

    def __exit__(self, *exc):
        if _phases and _phases[-1] == self.name:
            _phases.pop()
        if _phases:
            self._begin(_phases[-1], self.step)
        else:
            self._end(self.name, self.step)
        return False


def _timeout_ms(timeout):
    if timeout is None:
        try:
            return int(os.environ.get("VITALS_CLOSE_TIMEOUT_MS", "1000"))
        except ValueError:
            return 1000
    return max(0, int(timeout * 1000))


def flush(timeout=5.0):
    """Wait until the default emitter's samples are stored by vitalsd.

    Returns True if they were acknowledged within timeout seconds.
    """
    if _funcs is None:
        return False
    try:
        h = _funcs["vt_default"]()
        if not h:
            return False
        return _funcs["vt_flush"](h, _timeout_ms(timeout)) == 0
    except Exception as e:
        _problem("internal", "internal error: %r" % (e,))
        return False


def end(timeout=5.0):
    """Flush the default emitter and tell vitalsd this process ended
    normally (it is done at normal exit anyway). Logging afterwards is
    allowed. Returns True if acknowledged within timeout seconds.
    """
    try:
        return _end_default(_timeout_ms(timeout))
    except Exception as e:
        _problem("internal", "internal error: %r" % (e,))
        return False


def mark_failed():
    """Say this process ends because of an error: at exit its emitters
    send what they hold but not that they ended normally, so vitalsd
    flags the run's silence. (An unhandled exception does this itself.)
    """
    if _funcs is not None:
        _funcs["vt_mark_failed"](None)


def shutdown():
    """Flush (within the close timeout) and close the default emitter.

    A later log() opens a new one. Must not race with log() on other
    threads (the C library's rule for vt_shutdown).
    """
    global _vt_log
    if _funcs is not None:
        _funcs["vt_shutdown"]()
    _vt_log = _first_log


def _stats_of(h):
    st = _lib.Stats()
    if _funcs is not None and h:
        _funcs["vt_get_stats"](h, st)
    return {name: getattr(st, name) for name, _ in _lib.Stats._fields_}


def stats():
    """Counters of the default emitter, and the problems counted here.

    Keys: logged, dropped, sent, acked, resent, rejected, pending (the C
    library's), and problems: {kind: count} (bad_value, bad_step,
    bad_name, dropped, no_library, ...).
    """
    h = _funcs["vt_default"]() if _funcs is not None else None
    out = _stats_of(h)
    out["problems"] = dict(_problems)
    return out


# ---- explicit emitters ----------------------------------------------------

_emitters = weakref.WeakSet()


class Emitter:
    """An emitter with explicit options (None: as the environment says).

    ``Emitter(run="exp1", endpoint="tcp://host:7466", rank=3)``; then
    ``e.log(step, loss=...)``, ``e.flush()``, ``e.close()`` (or use it as
    a context manager). Opening raises VitalsError (no library, a bad
    endpoint or name); ``log`` never raises. In a child after fork() it
    opens a new emitter with the same options on first use.
    """

    def __init__(self, run=None, endpoint=None, rank=None, *, host=None,
                 local_rank=None, world_size=None, max_buffer_bytes=None,
                 flush_interval_ms=None, close_timeout_ms=None):
        self._h = None
        self._closed = False
        self._pid = os.getpid()
        self._args = dict(run=run, endpoint=endpoint, rank=rank, host=host,
                          local_rank=local_rank, world_size=world_size,
                          max_buffer_bytes=max_buffer_bytes,
                          flush_interval_ms=flush_interval_ms,
                          close_timeout_ms=close_timeout_ms)
        if _funcs is None:
            raise VitalsError(_NOLIB, _load_error)
        self._open()
        _emitters.add(self)

    def _open(self):
        a = self._args
        o = _lib.Opts()
        _funcs["vt_opts_init"](o)
        # Keep the encoded strings alive until vt_open copied them.
        keep = {}
        for field in ("endpoint", "run", "host"):
            if a[field] is not None:
                keep[field] = str(a[field]).encode("utf-8")
                setattr(o, field, keep[field])
        for field in ("rank", "local_rank", "world_size",
                      "max_buffer_bytes", "flush_interval_ms",
                      "close_timeout_ms"):
            if a[field] is not None:
                setattr(o, field, int(a[field]))
        h = _lib.ctypes.c_void_p()
        rc = _funcs["vt_open"](o, h)
        if rc != 0:
            raise VitalsError(rc, "vitals: cannot open an emitter: %s"
                              % _strerror(rc))
        self._h = h  # a c_void_p, as the raw calls need
        self._pid = os.getpid()

    def _handle(self):
        # None after fork() (see _after_fork_child) or close().
        if self._closed:
            _problem("closed", "log() on a closed Emitter")
            return None
        try:
            self._open()
        except Exception as e:
            _problem("open_failed", str(e))
            self._closed = True
            return None
        return self._h

    def log(self, step, metrics=None, /, **kw):
        """Record metrics at step. Never raises."""
        self._log(step, None, metrics, kw)

    def log_at(self, step, time_ns, metrics=None, /, **kw):
        """Record metrics at step with an explicit wall time (ns since
        the epoch), e.g. when replaying a log. Never raises."""
        self._log(step, time_ns, metrics, kw)

    def _log(self, step, time_ns, metrics, kw):
        try:
            h = self._h
            if h is None:
                h = self._handle()
                if h is None:
                    return
            if type(step) is not int or not 0 <= step < _U64:
                step = _step(step)
                if step is None:
                    return
            if metrics:
                kw = dict(kw)
                kw.update((str(k), v) for k, v in metrics.items())
            cstep = _U(step)
            ctime = None if time_ns is None else ctypes.c_int64(time_ns)
            for name, v in kw.items():
                b = _names.get(name)
                if b is None:
                    b = _name(name)
                    if b is None:
                        continue
                if type(v) is not float:
                    if type(v) is not int and getattr(v, "is_cuda", False):
                        _defer_cuda(step, name, v, self)
                        continue
                    v = _value(v, name)
                    if v is None:
                        continue
                # Raw calls: exactly the ctypes types (see _lib).
                v = _D(v)
                if ctime is None:
                    rc = _vt_emit(h, b, cstep, v)
                else:
                    rc = _vt_emit_at(h, b, cstep, ctime, v)
                if rc:
                    if rc == VT_EFORKED:
                        # A fork the at-fork hook did not see (os.fork
                        # from C): reopen here and retry once.
                        self._h = None
                        h = self._handle()
                        if h is not None:
                            rc = _vt_emit(h, b, cstep, v)
                    if rc:
                        _failed(rc, name)
        except Exception as e:
            _problem("internal", "internal error: %r" % (e,))

    def phase_begin(self, name, step=None):
        """As vitals.phase_begin, on this emitter."""
        h = self._h if self._h is not None else self._handle()
        if h is not None:
            _phase_call(_vt_emit_phase, h, name, step)

    def phase_end(self, name, step=None):
        """As vitals.phase_end, on this emitter."""
        h = self._h if self._h is not None else self._handle()
        if h is not None:
            _phase_call(_vt_emit_phase_end, h, name, step)

    def phase(self, name, step=None):
        """As vitals.phase, on this emitter (a context manager)."""
        p = phase(name, step)
        p._begin = self.phase_begin
        p._end = self.phase_end
        return p

    def flush(self, timeout=5.0):
        """Wait until this emitter's samples are stored; True if they
        were within timeout seconds."""
        h = self._h
        if h is None:
            return False
        return _funcs["vt_flush"](h, _timeout_ms(timeout)) == 0

    def close(self):
        """Flush (within the close timeout) and close. Idempotent."""
        h, self._h = self._h, None
        self._closed = True
        _emitters.discard(self)
        if h is not None and self._pid == os.getpid():
            _funcs["vt_close"](h)

    def stats(self):
        """This emitter's counters (see vitals.stats())."""
        return _stats_of(self._h)

    @property
    def incarnation(self):
        """The random id of this emitter (new after fork)."""
        return _funcs["vt_incarnation"](self._h) if self._h else 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if self._h is not None and not self._closed:
                self.close()
        except Exception:
            pass


if _funcs is not None:
    _vt_emit = _funcs["vt_emit_raw"]
    _vt_emit_at = _funcs["vt_emit_at_raw"]
    _vt_emit_phase = _funcs["vt_emit_phase_raw"]
    _vt_emit_phase_end = _funcs["vt_emit_phase_end_raw"]
else:
    _vt_emit_phase = _vt_emit_phase_end = _no_phase

    def _vt_emit(h, name, step, value):
        return _NOLIB

    def _vt_emit_at(h, name, step, t, value):
        return _NOLIB

# ---- fork and exit --------------------------------------------------------


def _after_fork_child():
    # Handles of the parent belong to the parent (their I/O threads do
    # not exist here): forget them; each Emitter reopens on first use,
    # the default emitter is recreated by the C library.
    global _vt_log, _default_used
    _vt_log = _first_log
    _default_used = False
    for e in list(_emitters):
        e._h = None


def _end_default(ms):
    # True if the default emitter's goodbye was acknowledged.
    if _funcs is None or not _default_used:
        return False
    h = _funcs["vt_default"]()
    return bool(h) and _funcs["vt_end"](h, ms) == 0


def _end_explicit(ms):
    for e in list(_emitters):
        if e._h is not None and e._pid == os.getpid():
            _funcs["vt_end"](e._h, ms)


def _exit_end():
    # Interpreter exit: the library ends the default emitter itself (a
    # destructor); explicit emitters still open are ended here. End, not
    # close: other threads may still be logging. After an unhandled
    # exception (the interpreter set sys.last_value before running
    # atexit) the ending is not normal: vitalsd must flag the silence.
    # After an unhandled KeyboardInterrupt the interpreter ends by
    # raising SIGINT again, so no library destructor runs: end the
    # default emitter here, or its last samples would be lost.
    try:
        ms = _timeout_ms(None)
        exc = getattr(sys, "last_value", None)
        if isinstance(exc, KeyboardInterrupt):
            _end_default(ms)
        elif exc is not None:
            _funcs["vt_mark_failed"](None)
        _end_explicit(ms)
    except Exception:
        pass


def _mp_child_exit():
    # A multiprocessing child ends with os._exit(): no library
    # destructor runs, so end here what this process logged.
    try:
        ms = _timeout_ms(None)
        _end_default(ms)
        _end_explicit(ms)
    except Exception:
        pass


class _Token:
    pass


_token = _Token()
_mp_registered = False


def _mp_child_start(_):
    import multiprocessing.util as mpu
    mpu.Finalize(None, _mp_child_exit, exitpriority=-100)


def _before_fork():
    # Register with multiprocessing once it is in use (importing it here
    # ourselves would cost every user its import time).
    global _mp_registered
    mpu = sys.modules.get("multiprocessing.util")
    if mpu is not None and not _mp_registered:
        _mp_registered = True
        mpu.register_after_fork(_token, _mp_child_start)


if _funcs is not None:
    atexit.register(_exit_end)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork,
                        after_in_child=_after_fork_child)
