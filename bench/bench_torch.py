#!/usr/bin/env python3
"""Cost of vitals.torch per training step on the CPU, and of vitals.log
with and without it.

    python3 bench/bench_torch.py [--steps N] [--rounds R]

One process, DistributedDataParallel over gloo (world size 1, so the
communication hook runs), a small MLP whose step takes well under a
millisecond: the instrumentation's absolute cost per step is then the
difference between two loops that differ only in it, not lost in the
noise of a long step. Loops, alternated R times, best median kept:

  log        the step, then vitals.log(step, loss=..., grad_norm=...)
  torch+log  the same with vitals.torch.watch(model, opt), vt.data(...)
             and `with vt.step(step)` (5 phase markers a step, peak
             memory logged)

Printed: each loop's step time, the difference per step in us, and that
difference as a share of a 20 ms step (target <= 1%). The hot cost of
vitals.log (1 float, 1 int) is printed before and after importing
vitals.torch: importing it must not change it. The emitter's I/O thread
derives phase_time/* on its own thread; its work is not on the step.
Samples go to a vitalsd if $VITALS_BIN (else build/) has one, else they
are only buffered.
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


def hot_log(vitals, calls, rounds, **kw):
    best = []
    for _ in range(rounds):
        t = time.perf_counter()
        for i in range(calls):
            vitals.log(i, **kw)
        best.append((time.perf_counter() - t) / calls)
    return min(best)


def start_collector(tmp):
    vbin = os.environ.get("VITALS_BIN", os.path.join(ROOT, "build"))
    vitalsd = os.path.join(vbin, "vitalsd")
    ep = "ipc://" + os.path.join(tmp, "c.sock")
    if not os.access(vitalsd, os.X_OK):
        return None, "ipc://" + os.path.join(tmp, "none.sock")
    p = subprocess.Popen([vitalsd, "--listen", ep, "--db",
                          os.path.join(tmp, "db"), "--quiet"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists(os.path.join(tmp, "c.sock")):
            break
        time.sleep(0.05)
    return p, ep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=100000)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vitals-bench-torch-")
    proc = None
    try:
        proc, ep = start_collector(tmp)
        os.environ["VITALS_ENDPOINT"] = ep
        os.environ.setdefault("VITALS_RUN", "bench-torch")
        import vitals
        if not vitals.available():
            print("libvitals.so not found: build it (make) or set VITALS_LIB")
            return 1
        before_f = hot_log(vitals, args.calls, args.rounds, loss=2.5)
        before_i = hot_log(vitals, args.calls, args.rounds, loss=3)
        try:
            import torch
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
        except ImportError as e:
            print("skipped: torch cannot be imported (%s)" % e)
            return 0
        import vitals.torch as vtorch
        after_f = hot_log(vitals, args.calls, args.rounds, loss=2.5)
        after_i = hot_log(vitals, args.calls, args.rounds, loss=3)
        print("python %s, torch %s, collector: %s" % (
            sys.version.split()[0], torch.__version__,
            "vitalsd" if proc else "none"))
        print("hot vitals.log, 1 float: %.3f us before importing "
              "vitals.torch, %.3f us after" % (before_f * 1e6, after_f * 1e6))
        print("hot vitals.log, 1 int:   %.3f us before importing "
              "vitals.torch, %.3f us after" % (before_i * 1e6, after_i * 1e6))

        torch.set_num_threads(1)
        dist.init_process_group(
            "gloo", init_method="file://" + os.path.join(tmp, "pg"),
            rank=0, world_size=1)
        torch.manual_seed(0)

        def make():
            net = torch.nn.Sequential(torch.nn.Linear(32, 32),
                                      torch.nn.Tanh(),
                                      torch.nn.Linear(32, 1))
            model = DDP(net)
            return model, torch.optim.SGD(model.parameters(), lr=0.01)

        x = torch.randn(16, 32)
        y = x.sum(dim=1, keepdim=True)

        def batches():
            while True:
                yield x, y

        plain = make()
        watched = make()
        vt = vtorch.watch(*watched)

        def loop(model, opt, w, n, step0):
            it = w.data(batches()) if w else batches()
            times = []
            for step in range(step0, step0 + n):
                t0 = time.perf_counter()
                xb, yb = next(it)
                if w:
                    with w.step(step):
                        loss = torch.nn.functional.mse_loss(model(xb), yb)
                        loss.backward()
                        opt.step()
                        opt.zero_grad(set_to_none=True)
                else:
                    loss = torch.nn.functional.mse_loss(model(xb), yb)
                    loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                vitals.log(step, loss=loss.item(), grad_norm=0.5)
                times.append(time.perf_counter() - t0)
            return statistics.median(times)

        res = {"log": [], "torch+log": []}
        step = 1
        loop(*plain, None, 200, step)  # warm-up
        loop(*watched, vt, 200, step)
        for _ in range(args.rounds):
            step += 200
            res["log"].append(loop(*plain, None, args.steps, step))
            res["torch+log"].append(loop(*watched, vt, args.steps, step))
            step += args.steps
        a, b = min(res["log"]), min(res["torch+log"])
        print("step, log only        %.1f us (best of %d medians of %d "
              "steps)" % (a * 1e6, args.rounds, args.steps))
        print("step, vitals.torch    %.1f us" % (b * 1e6))
        print("vitals.torch per step %.1f us = %.2f%% of a 20 ms step "
              "(target <= 1%%)" % ((b - a) * 1e6, 100 * (b - a) / 0.020))
        vitals.flush(10.0)
        st = vitals.stats()
        print("samples: logged %d, acked %d, dropped %d" %
              (st["logged"], st["acked"], st["dropped"]))
        dist.destroy_process_group()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
