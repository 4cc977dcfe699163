"""vitals.torch: one call instruments a PyTorch training loop, per rank.

::

    import vitals, vitals.torch

    model = DistributedDataParallel(net)
    vt = vitals.torch.watch(model, optimizer)
    for step, (x, y) in enumerate(vt.data(loader), 1):
        with vt.step(step):
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        vitals.log(step, loss=loss)    # a CUDA tensor is fine: see below

What it marks (phase markers, docs/protocol.md) and so what the emitter
turns into ``phase_time/NAME`` (ms per step, per rank):

- ``data``: waiting for the next batch of ``vt.data(loader)``;
- ``forward``: from the model's forward until backward starts (the loss
  is computed there too);
- ``backward``: backward compute, until DDP hands the last gradient
  bucket to its communication hook;
- ``collective``: from then until backward returns: the time this rank
  waits for the all-reduce (the slow rank waits least: docs/distributed.md);
- ``optimizer``: ``optimizer.step()``.

At the end of each ``vt.step`` it logs ``peak_memory_mb`` (CUDA: the
allocator's peak since the last step; CPU: the process's peak resident
size). Without a ``with vt.step(step)`` the step is counted from the
model's forward calls.

CUDA: nothing here synchronizes the device. Each phase change also
records a CUDA event; a step's events are read (``query()``, never
``synchronize()``) at a later step, once the GPU has passed them, and
logged as ``gpu_time/NAME`` at the step they belong to. A CUDA tensor
passed to ``vitals.log`` (or ``vt.log``) is copied to pinned memory
without blocking and logged when its copy is done (usually a step later),
never with ``.item()`` on the hot path. On the CPU the same code uses the
wall clock of the markers only.

torch is imported by this module only: ``import vitals`` stays standard
library.
"""

import collections
import os
import sys

import torch

import vitals

__all__ = ["watch", "Watch", "defer"]

_CUDA_PENDING_MAX = 4096


class _Deferred:
    """CUDA tensors being copied to the host: (step, name, host buffer,
    event, emitter) in the order they were logged."""

    def __init__(self):
        self.q = collections.deque()
        self.free = {}  # dtype -> pinned host scalars to reuse

    def _host(self, dtype):
        # Pinned allocations are slow (cudaHostAlloc): reuse them.
        pool = self.free.get(dtype)
        if pool:
            return pool.pop()
        return torch.empty((), dtype=dtype, device="cpu", pin_memory=True)

    def add(self, step, name, t, emitter=None):
        if len(self.q) >= _CUDA_PENDING_MAX:
            self.poll()
            if len(self.q) >= _CUDA_PENDING_MAX:
                vitals._problem("cuda_pending", "more than %d CUDA values "
                                "waiting for their copy: dropped"
                                % _CUDA_PENDING_MAX)
                return
        t = t.detach()
        if t.numel() != 1:
            vitals._problem("bad_value", "metric %r: a CUDA tensor of %d "
                            "elements" % (name, t.numel()))
            return
        host = self._host(t.dtype)
        host.copy_(t.reshape(()), non_blocking=True)
        ev = torch.cuda.Event()
        ev.record()
        self.q.append((step, name, host, ev, emitter))
        self.poll()

    def poll(self, wait=False):
        """Log the values whose copy is done (in order); wait=True (at
        exit only) waits for the rest."""
        q = self.q
        while q:
            step, name, host, ev, em = q[0]
            if not wait and not ev.query():
                return
            if wait:
                ev.synchronize()
            q.popleft()
            v = float(host)  # a CPU tensor: no device sync
            pool = self.free.setdefault(host.dtype, [])
            if len(pool) < 64:
                pool.append(host)
            if em is None:
                vitals.log(step, {name: v})
            else:
                em.log(step, {name: v})


_deferred = _Deferred()


def defer(step, name, t, emitter=None):
    """Log CUDA tensor t as metric name at step once its non-blocking
    copy to the host is done (vitals.log does this for CUDA tensors)."""
    _deferred.add(step, name, t, emitter)


def _flush_deferred():
    try:
        _deferred.poll(wait=True)
    except Exception:
        pass


class _Step:
    __slots__ = ("w", "n")

    def __init__(self, w, n):
        self.w = w
        self.n = n

    def __enter__(self):
        w = self.w
        w.step_no = self.n
        w._explicit = True
        return w

    def __exit__(self, *exc):
        w = self.w
        w._explicit = False
        w._end_step(self.n)
        return False


class Watch:
    """What watch() returns: see the module's documentation."""

    def __init__(self, model, optimizer=None, emitter=None, memory=True):
        self.model = model
        self.optimizer = optimizer
        self.emitter = emitter
        self.memory = memory
        self.step_no = 0
        self._explicit = False
        self._phase = None
        self._handles = []
        self.cuda = (torch.cuda.is_available()
                     and any(p.is_cuda for p in model.parameters()))
        self._events = []        # (name, event) of the current step
        self._pending = collections.deque()  # (step, [(name, event)])
        if emitter is None:
            self._begin = vitals.phase_begin
            self._end = vitals.phase_end
            self._log = vitals.log
        else:
            self._begin = emitter.phase_begin
            self._end = emitter.phase_end
            self._log = emitter.log
        self._handles.append(model.register_forward_pre_hook(self._pre))
        self._handles.append(model.register_forward_hook(self._post))
        if optimizer is not None:
            self._wrap_optimizer(optimizer)
        if _is_ddp(model):
            self._install_comm_hook(model)

    # ---- phases -----------------------------------------------------------

    def phase(self, name, step=None):
        """Enter phase name now (the step: the current one)."""
        self._phase = name
        self._begin(name, self.step_no if step is None else step)
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self._events.append((name, ev))

    def _pre(self, module, args):
        if not self._explicit:
            self.step_no += 1
        self.phase("forward")

    def _post(self, module, args, out):
        if not torch.is_grad_enabled():
            return
        t = _first_grad_tensor(out)
        if t is not None:
            t.register_hook(self._backward_started)

    def _backward_started(self, grad):
        # The first gradient computed by backward is the output's.
        self.phase("backward")
        return None

    def _wrap_optimizer(self, opt):
        step = opt.step
        w = self

        def wrapped(*a, **k):
            w.phase("optimizer")
            try:
                return step(*a, **k)
            finally:
                w._end("optimizer", w.step_no)
                w._phase = None

        opt.step = wrapped

    def _install_comm_hook(self, ddp):
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        w = self

        def hook(state, bucket):
            # DDP calls the hook as each gradient bucket is ready; the
            # last one marks the end of backward compute: from there on
            # the rank only waits for the reductions.
            if bucket.is_last():
                w.phase("collective")
            return default_hooks.allreduce_hook(state, bucket)

        try:
            ddp.register_comm_hook(ddp.process_group, hook)
        except Exception as e:  # a hook already set: keep the user's
            vitals._problem("comm_hook", "no collective timing: %s" % e)

    # ---- steps ------------------------------------------------------------

    def step(self, n=None):
        """``with vt.step(n):`` around one training step."""
        return _Step(self, self.step_no + 1 if n is None else n)

    def data(self, iterable):
        """Iterate over iterable, marking the wait for each item as the
        ``data`` phase of the next step."""
        it = iter(iterable)
        while True:
            self.phase("data", self.step_no + 1)
            try:
                item = next(it)
            except StopIteration:
                self._end("data", self.step_no + 1)
                return
            yield item

    def _end_step(self, n):
        if self.memory:
            mb = _peak_memory_mb(self.cuda)
            if mb is not None:
                self._log(n, peak_memory_mb=mb)
        if self.cuda:
            # The end of the step closes its last phase.
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self._events.append(("", ev))
            self._pending.append((n, self._events))
            self._events = []
            self._read_events()
            _deferred.poll()

    def _read_events(self):
        # A step's events are read once the GPU passed its last one:
        # query() only, so the host never waits for the device.
        while self._pending:
            n, evs = self._pending[0]
            if evs and not evs[-1][1].query():
                if len(self._pending) > 64:
                    self._pending.popleft()  # the GPU is far behind
                    continue
                return
            self._pending.popleft()
            times = {}
            for (name, a), (_, b) in zip(evs, evs[1:]):
                if name:
                    times[name] = times.get(name, 0.0) + a.elapsed_time(b)
            if times:
                self._log(n, {"gpu_time/" + k: v for k, v in times.items()})

    def log(self, step, metrics=None, /, **kw):
        """vitals.log on this watch's emitter."""
        self._log(step, metrics, **kw)

    def close(self):
        """Remove the hooks (the comm hook stays: DDP cannot unset it)."""
        for h in self._handles:
            h.remove()
        self._handles = []


def watch(model, optimizer=None, *, emitter=None, memory=True):
    """Instrument model (a torch.nn.Module, DistributedDataParallel or
    FSDP wrapper included) and optimizer; returns a Watch. emitter: a
    vitals.Emitter (None: the default one). See the module's docs."""
    return Watch(model, optimizer, emitter, memory)


def _is_ddp(model):
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:
        return False
    return isinstance(model, DistributedDataParallel)


def _first_grad_tensor(out):
    if isinstance(out, torch.Tensor):
        return out if out.requires_grad else None
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        for o in out:
            t = _first_grad_tensor(o)
            if t is not None:
                return t
    return None


def _peak_memory_mb(cuda):
    if cuda:
        # Host-side allocator counters: no device synchronization.
        mb = torch.cuda.max_memory_allocated() / 2**20
        torch.cuda.reset_peak_memory_stats()
        return mb
    try:
        import resource
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return kb / 1024.0 if sys.platform != "darwin" else kb / 2**20
    except Exception:
        return None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_deferred.q.clear)
import atexit  # noqa: E402

atexit.register(_flush_deferred)
