#!/usr/bin/env python3
"""Cost of the Python binding: one vitals.log call with 4 metrics, next to
the step time of the real trainer (demo/torch_train.py).

    python3 bench/bench_python.py [--calls N] [--rounds R] [--steps S]
                                  [--dim D --layers L --batch B]

It starts a vitalsd from $VITALS_BIN (else build/) on an ipc:// endpoint
in a temporary folder, so that samples are acknowledged and stored as in
real use (--no-collector: none; samples are then only buffered).

Measured:
  hot     back-to-back calls, best of R rounds: the binding's own cost;
  in-step one call after each real training step (median): what a trainer
          pays, cold caches included; an empty Python function with the
          same arguments, measured the same way, shows how much of that any
          Python call pays after a step.
The target is <= 2 us per call and <= 0.1% of the step time.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "emitter", "python"))
sys.path.insert(0, os.path.join(ROOT, "demo"))


def noop(step, metrics=None, /, **kw):
    """The floor: a Python function with vitals.log's signature."""
    for name, v in kw.items():
        pass


def hot(fn, calls, rounds, **kw):
    best = []
    for _ in range(rounds):
        t = time.perf_counter()
        for i in range(calls):
            fn(i, **kw)
        best.append((time.perf_counter() - t) / calls)
    return min(best), statistics.median(best)


def start_collector(tmp):
    vbin = os.environ.get("VITALS_BIN", os.path.join(ROOT, "build"))
    vitalsd = os.path.join(vbin, "vitalsd")
    if not os.access(vitalsd, os.X_OK):
        return None, None
    ep = "ipc://" + os.path.join(tmp, "c.sock")
    p = subprocess.Popen([vitalsd, "--listen", ep, "--db",
                          os.path.join(tmp, "db")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists(os.path.join(tmp, "c.sock")):
            break
        time.sleep(0.05)
    return p, ep


def trainer(args, vitals):
    """Per-step cost inside the real trainer's loop."""
    try:
        import torch
        import torch_train
    except ImportError as e:
        print("trainer: skipped (%s)" % e)
        return
    torch.set_num_threads(1)
    targs = argparse.Namespace(ctx=32, dim=args.dim, layers=args.layers,
                               batch=args.batch, lr=3e-3, seed=0)
    data, vocab, model = torch_train.build(targs, torch)
    opt = torch.optim.AdamW(model.parameters(), lr=targs.lr)
    it = torch_train.batches(data, torch, targs.batch, targs.ctx, 0)
    steps, cost = [], {"vitals.log": [], "noop": []}
    vitals.log(0, loss=0.0, grad_norm=0.0, tokens_per_sec=0.0, lr=0.0)
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        x, y = next(it)
        loss = torch.nn.functional.cross_entropy(
            model(x).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        lv, gv = loss.item(), gn.item()
        t1 = time.perf_counter()
        steps.append(t1 - t0)
        # Alternate: each measured right after a step, as a trainer calls.
        name, fn = (("vitals.log", vitals.log) if step % 2
                    else ("noop", noop))
        t = time.perf_counter()
        fn(step, loss=lv, grad_norm=gv,
           tokens_per_sec=targs.batch * targs.ctx / (t1 - t0),
           lr=targs.lr)
        cost[name].append(time.perf_counter() - t)
    st = statistics.median(steps[5:])
    lg = statistics.median(cost["vitals.log"][3:])
    np = statistics.median(cost["noop"][3:])
    print("trainer step (median of %d; dim %d, %d layers, batch %d) "
          "%.3f ms" % (len(steps), targs.dim, targs.layers, targs.batch,
                       st * 1e3))
    print("in-step vitals.log, 4 metrics    %9.3f us  = %.4f%% of the step"
          % (lg * 1e6, 100 * lg / st))
    print("in-step empty function, same args%9.3f us  = %.4f%% of the step"
          % (np * 1e6, 100 * np / st))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=100000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--no-collector", action="store_true")
    p.add_argument("--dim", type=int, default=32,
                   help="trainer model width (demo default 32)")
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--batch", type=int, default=8)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="vitals-bench-")
    proc = None
    try:
        if not args.no_collector:
            proc, ep = start_collector(tmp)
            if ep:
                os.environ["VITALS_ENDPOINT"] = ep
        if proc is None:
            # Nothing listens here: samples are only buffered.
            os.environ["VITALS_ENDPOINT"] = "ipc://" + os.path.join(
                tmp, "none.sock")
        os.environ.setdefault("VITALS_RUN", "bench-python")
        import vitals
        if not vitals.available():
            print("libvitals.so not found: build it (make) or set "
                  "VITALS_LIB")
            return 1
        print("python %s, %s, collector: %s" % (
            sys.version.split()[0], vitals.library_path,
            "vitalsd" if proc else "none"))
        four = dict(loss=2.5, grad_norm=0.8, tokens_per_sec=123456.0,
                    lr=3e-4)
        for label, fn, kw in (
                ("empty function, 4 floats", noop, four),
                ("vitals.log, 1 float", vitals.log, dict(loss=2.5)),
                ("vitals.log, 4 floats", vitals.log, four)):
            b, m = hot(fn, args.calls, args.rounds, **kw)
            print("hot %-29s %7.3f us (median of rounds %.3f)"
                  % (label, b * 1e6, m * 1e6))
        try:
            import torch
            t = torch.tensor(0.8)
            kw = dict(four, grad_norm=t)
            b, m = hot(vitals.log, args.calls // 4, args.rounds, **kw)
            print("hot %-29s %7.3f us (median of rounds %.3f)"
                  % ("vitals.log, 3 floats+0-d tensor", b * 1e6, m * 1e6))
        except ImportError:
            pass
        vitals.flush(10.0)
        st = vitals.stats()
        print("samples: logged %d, acked %d, dropped %d" %
              (st["logged"], st["acked"], st["dropped"]))
        trainer(args, vitals)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
