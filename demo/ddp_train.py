#!/usr/bin/env python3
"""A data-parallel PyTorch trainer (DistributedDataParallel, gloo, CPU)
instrumented with vitals.torch, with real distributed faults.

    python3 demo/ddp_train.py --nprocs 4 --steps 300

starts 4 ranks (RANK, WORLD_SIZE, MASTER_ADDR/PORT set as torchrun does;
under torchrun, leave --nprocs out). Each step:

    with vt.step(step):
        loss = loss_fn(model(x), y)     # forward (paced: --forward-ms)
        loss.backward()                 # backward, then the all-reduce
        opt.step(); opt.zero_grad()
    vitals.log(step, loss=loss, grad_norm=gn, step_time_ms=ms)

Faults:
    --slow-rank R --slow-factor F --slow-from S   rank R's forward takes F
                                  times as long from step S (a slow GPU),
                                  paced or not, however loaded the machine
    --hang-rank R --hang-at S --hang-s N          rank R sleeps N s in its
                                  forward at step S; the others wait in
                                  the all-reduce
    --nan-rank R --nan-at S       rank R's loss is NaN at step S; the
                                  all-reduce spreads it to every rank
    --no-vitals-torch             log only with vitals.log (no phases)
"""

import argparse
import os
import socket
import subprocess
import sys
import time

try:
    import vitals
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "emitter", "python"))
    import vitals


def say(line):
    sys.stdout.flush()
    os.write(1, (line + "\n").encode())


def train(args):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = torch.nn.Linear(args.dim, args.dim)
            self.l2 = torch.nn.Linear(args.dim, 1)

        def forward(self, x):
            t0 = time.perf_counter()
            y = self.l2(torch.tanh(self.l1(x)))
            # Pace the forward pass as a real model's would take (a sleep,
            # so 4 ranks share 2 CPUs without skewing each other). It
            # lasts its pace, or its compute when that is longer (a
            # loaded machine); the slow rank's lasts --slow-factor times
            # that, so it stays that much slower however loaded.
            want = max(args.forward_ms / 1000.0, time.perf_counter() - t0)
            if rank == args.slow_rank and net.step >= args.slow_from:
                want *= args.slow_factor
            if rank == args.hang_rank and net.step == args.hang_at:
                want += args.hang_s
            rest = want - (time.perf_counter() - t0)
            if rest > 0:
                time.sleep(rest)
            return y

    net = Net()
    net.step = 0
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    vt = None
    if not args.no_vitals_torch:
        import vitals.torch
        vt = vitals.torch.watch(model, opt)
    g = torch.Generator().manual_seed(rank)

    def batches():
        while True:
            x = torch.randn(args.batch, args.dim, generator=g)
            yield x, x.sum(dim=1, keepdim=True)

    it = vt.data(batches()) if vt else batches()
    # Everyone starts together (the launcher's barrier is this one).
    dist.barrier()
    end = time.time() + args.duration if args.duration else None
    step = 0
    while step < args.steps and (end is None or time.time() < end):
        step += 1
        net.step = step
        t0 = time.perf_counter()
        x, y = next(it)
        ctx = vt.step(step) if vt else _Null()
        with ctx:
            loss = torch.nn.functional.mse_loss(model(x), y)
            if rank == args.nan_rank and step == args.nan_at:
                loss = loss * float("nan")
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
            opt.step()
            opt.zero_grad(set_to_none=True)
        ms = (time.perf_counter() - t0) * 1000.0
        vitals.log(step, loss=loss.item(), grad_norm=float(gn),
                   step_time_ms=ms)
    say("rank %d: %d steps" % (rank, step))
    vitals.end(5.0)
    # Tearing the group down waits for the others; a rank that finished
    # its steps must not be flagged while it does.
    dist.barrier()
    dist.destroy_process_group()
    return 0


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def launch(args, argv):
    import signal

    port = str(free_port())
    procs = []
    # A launcher stopped by `timeout` must not leave its ranks behind.
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    try:
        for r in range(args.nprocs):
            env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r),
                       WORLD_SIZE=str(args.nprocs),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__)] + argv, env=env))
        return max(p.wait() for p in procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nprocs", type=int, default=0)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--duration", type=float, default=0)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--forward-ms", type=float, default=10.0)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-factor", type=float, default=1.3)
    p.add_argument("--slow-from", type=int, default=0)
    p.add_argument("--hang-rank", type=int, default=-1)
    p.add_argument("--hang-at", type=int, default=-1)
    p.add_argument("--hang-s", type=float, default=0)
    p.add_argument("--nan-rank", type=int, default=-1)
    p.add_argument("--nan-at", type=int, default=-1)
    p.add_argument("--no-vitals-torch", action="store_true")
    args = p.parse_args()
    if args.nprocs > 0:
        argv, skip = [], False
        for a in sys.argv[1:]:
            if skip:
                skip = False
                continue
            if a == "--nprocs":
                skip = True
                continue
            if a.startswith("--nprocs="):
                continue
            argv.append(a)
        return launch(args, argv)
    return train(args)


if __name__ == "__main__":
    sys.exit(main())
