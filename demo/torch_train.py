#!/usr/bin/env python3
"""A real (small) PyTorch trainer with the one-line vitals binding.

A character-level transformer learns a text this script generates, on the
CPU, and logs with one line per step:

    vitals.log(step, loss=loss, grad_norm=gn, lr=lr, tokens_per_sec=tps,
               step_time_ms=ms)

Fault switches make the failures vitals is built to catch happen for real:

    --lr-blowup-at S     the learning rate jumps (x --lr-blowup-factor) at
                         step S: the loss really spikes or diverges
                         (--lr-blowup-rank R: on rank R only)
    --nan-at S           the embedding is poisoned at step S: the loss and
                         the gradient norm are NaN from S on
                         (--nan-rank R: on rank R only)
    --stall-rank R --stall-at S --stall-s N
                         rank R sleeps N seconds in step S (a hang)
    --slow-rank R        rank R's steps last --slow-factor times as long (a
                         slow GPU), paced or not, however loaded the machine

--nprocs N starts N processes (RANK, LOCAL_RANK, WORLD_SIZE set as torchrun
does); each trains its own replica (no gradient exchange, so one rank's
fault stays its own). --pace-ms P makes each step last at least P ms, as a
synchronous data-parallel job does, so that step times on a shared CI
machine are steady. --workers K loads batches in K DataLoader worker
processes (fork), which log too. With several processes, every rank starts
its first step at the same time, once all have imported torch and built
the model; --duration S ends them all S seconds later.

Run from the source tree: python3 demo/torch_train.py --steps 200
(vitals is taken from emitter/python when it is not installed).
"""

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

try:
    import vitals
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "emitter", "python"))
    import vitals

WORDS = {
    "subject": ["the cat", "a dog", "the old man", "my sister", "the robot",
                "a small bird", "the teacher", "our neighbour"],
    "verb": ["sees", "likes", "finds", "paints", "follows", "helps",
             "hears", "builds"],
    "object": ["the red ball", "a green tree", "the quiet river",
               "a long road", "the bright moon", "an open door",
               "the wooden box", "a blue kite"],
    "end": [".", " today.", " again.", " at night.", " in the park."],
}


def say(line):
    """Print a line with one write(2): the ranks share the output, and a
    line written in pieces could be cut by another rank's."""
    sys.stdout.flush()
    os.write(1, (line + "\n").encode())


def make_text(seed, n_chars=60000):
    """Sentences from a small grammar: regular enough to learn fast."""
    rng = random.Random(seed)
    out, size = [], 0
    while size < n_chars:
        s = "%s %s %s%s\n" % (rng.choice(WORDS["subject"]),
                              rng.choice(WORDS["verb"]),
                              rng.choice(WORDS["object"]),
                              rng.choice(WORDS["end"]))
        out.append(s)
        size += len(s)
    return "".join(out)


def build(args, torch):
    nn = torch.nn
    text = make_text(1234)
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
    vocab, ctx, dim = len(chars), args.ctx, args.dim

    class CharTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, dim)
            self.pos = nn.Parameter(torch.zeros(ctx, dim))
            layer = nn.TransformerEncoderLayer(dim, 4, 4 * dim, dropout=0.0,
                                               batch_first=True)
            self.enc = nn.TransformerEncoder(layer, args.layers)
            self.head = nn.Linear(dim, vocab)
            self.register_buffer(
                "mask", nn.Transformer.generate_square_subsequent_mask(ctx))

        def forward(self, x):
            return self.head(self.enc(self.emb(x) + self.pos, mask=self.mask))

    return data, vocab, CharTransformer()


def batches(data, torch, batch, ctx, seed):
    """Random windows of the text, forever."""
    g = torch.Generator().manual_seed(seed)
    while True:
        i = torch.randint(0, len(data) - ctx - 1, (batch,), generator=g)
        x = torch.stack([data[j:j + ctx] for j in i.tolist()])
        y = torch.stack([data[j + 1:j + 1 + ctx] for j in i.tolist()])
        yield x, y


def loader(args, data, torch, seed):
    """Batches from K DataLoader worker processes (fork), which log how
    many batches each made: the binding in forked children."""
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    class Windows(IterableDataset):
        def __iter__(self):
            wid = get_worker_info().id
            name = "loader%d_batches" % wid
            for n, b in enumerate(batches(data, torch, args.batch, args.ctx,
                                          seed * 100 + wid), 1):
                vitals.log(n, {name: n})
                yield b

    return iter(DataLoader(Windows(), batch_size=None,
                           num_workers=args.workers))


def train(args):
    import torch

    torch.set_num_threads(1)
    rank = int(os.environ.get("RANK", "0"))
    torch.manual_seed(args.seed)
    data, vocab, model = build(args, torch)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    # Logged before the loader forks its workers: they start with a live
    # default emitter (and its I/O thread) in their parent.
    vitals.log(0, params=sum(p.numel() for p in model.parameters()))
    if args.workers > 0:
        it = loader(args, data, torch, args.seed + rank)
    else:
        it = batches(data, torch, args.batch, args.ctx, args.seed + rank)
    if args.barrier:
        args.end = barrier(args.barrier, rank)
    pace = args.pace_ms / 1000.0
    tokens = args.batch * args.ctx
    lr = args.lr
    compute, step_times, log_cost, first_loss = [], [], [], None
    step = 0
    while step < args.steps and (args.end is None or time.time() < args.end):
        step += 1
        t0 = time.perf_counter()
        if step == args.lr_blowup_at and args.lr_blowup_rank in (-1, rank):
            lr = args.lr * args.lr_blowup_factor
            for g in opt.param_groups:
                g["lr"] = lr
        if step == args.nan_at and args.nan_rank in (-1, rank):
            with torch.no_grad():
                model.emb.weight.mul_(float("nan"))
        x, y = next(it)
        loss = torch.nn.functional.cross_entropy(
            model(x).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_v = loss.item()
        t1 = time.perf_counter()
        # A step lasts its pace, or its compute when that is longer (a
        # loaded machine); the slow rank's lasts --slow-factor times
        # that, so it stays that much slower however long compute takes.
        want = max(pace, t1 - t0)
        if args.slow_rank == rank:
            want *= args.slow_factor
        if rank == args.stall_rank and step == args.stall_at:
            time.sleep(args.stall_s)
        rest = want - (time.perf_counter() - t0)
        if rest > 0:
            time.sleep(rest)
        dt = time.perf_counter() - t0
        compute.append(t1 - t0)
        step_times.append(dt)
        if first_loss is None:
            first_loss = loss_v
        # The one line; gn is a 0-d tensor, passed as it is.
        t2 = time.perf_counter()
        vitals.log(step, loss=loss_v, grad_norm=gn, lr=lr,
                   tokens_per_sec=tokens / dt, step_time_ms=dt * 1000.0)
        log_cost.append(time.perf_counter() - t2)
        if args.print_every and step % args.print_every == 0:
            say("rank %d step %d loss %.4f grad_norm %.4f" %
                (rank, step, loss_v, float(gn)))
    med = statistics.median(compute[2:] or compute or [0.0])
    # The first call opens the emitter (a thread, a socket): not per call.
    per_call = statistics.median(log_cost[1:] or [0.0])
    say("rank %d: %d steps, loss %.3f -> %.3f, compute %.2f ms/step "
        "(median), step %.2f ms, vitals.log %.2f us/call (5 metrics, "
        "median) = %.4f%% of the compute" %
        (rank, step, first_loss or 0.0, loss_v if step else 0.0,
         med * 1e3, statistics.median(step_times or [0.0]) * 1e3,
         per_call * 1e6, 100.0 * per_call / med if med else 0.0))
    return 0


def barrier(folder, rank):
    """Say this rank is ready, wait for the launcher's go; returns the
    wall time to stop at (None: no limit)."""
    open(os.path.join(folder, "ready.%d" % rank), "w").close()
    go = os.path.join(folder, "go")
    while not os.path.exists(go):
        time.sleep(0.01)
    with open(go) as f:
        end = f.read().strip()
    return float(end) if end else None


def launch(args, argv):
    """--nprocs N: N copies of this script, one per rank, as torchrun
    would start them; they start training together."""
    folder = tempfile.mkdtemp(prefix="torch_train.")
    procs = []
    try:
        for r in range(args.nprocs):
            env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r),
                       WORLD_SIZE=str(args.nprocs))
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--nprocs", "0",
                 "--barrier", folder] + argv, env=env))
        while sum(os.path.exists(os.path.join(folder, "ready.%d" % r))
                  for r in range(args.nprocs)) < args.nprocs:
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.01)
        with open(os.path.join(folder, "go.tmp"), "w") as f:
            f.write("%.3f" % (time.time() + args.duration)
                    if args.duration else "")
        os.rename(os.path.join(folder, "go.tmp"), os.path.join(folder, "go"))
        return max(p.wait() for p in procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(folder, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--nprocs", type=int, default=1)
    p.add_argument("--duration", type=float, default=0,
                   help="stop every rank this many seconds after launch")
    p.add_argument("--end", type=float, default=None, help=argparse.SUPPRESS)
    p.add_argument("--barrier", default=None, help=argparse.SUPPRESS)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--ctx", type=int, default=32)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pace-ms", type=float, default=0)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--print-every", type=int, default=0)
    p.add_argument("--lr-blowup-at", type=int, default=-1)
    p.add_argument("--lr-blowup-factor", type=float, default=100.0)
    p.add_argument("--lr-blowup-rank", type=int, default=-1)
    p.add_argument("--nan-at", type=int, default=-1)
    p.add_argument("--nan-rank", type=int, default=-1)
    p.add_argument("--stall-rank", type=int, default=-1)
    p.add_argument("--stall-at", type=int, default=-1)
    p.add_argument("--stall-s", type=float, default=0)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-factor", type=float, default=1.15)
    args = p.parse_args()
    if args.nprocs > 1 or (args.nprocs == 1 and args.duration):
        argv = [a for a in sys.argv[1:]]
        # Children get the same options but no --nprocs / --duration.
        out, skip = [], False
        for a in argv:
            if skip:
                skip = False
                continue
            if a in ("--nprocs", "--duration"):
                skip = True
                continue
            if a.startswith("--nprocs=") or a.startswith("--duration="):
                continue
            out.append(a)
        return launch(args, out)
    return train(args)


if __name__ == "__main__":
    sys.exit(main())
