"""Trainers for tests/it_detect.sh's live-against-replay cases (issue 9):
each logs one run through the Python binding, paced by real sleeps so
that vitalsd's clock and the samples' own times agree.

    scenario.py restart RUN   300 steps, a crash (no goodbye), 2.5 s
                              down, a restart from step 200 to 400
    scenario.py ckpt RUN      600 steps, a 1.5 s checkpoint phase every
                              150 steps
    scenario.py diverge RUN   a loss that falls, then climbs 1% a step
                              from step 400 until NaN at step 700
    scenario.py hang RUN      200 steps, 5 s of heartbeats at step 199
                              (samples, no progress), then 100 more

Every run logs loss and step_time each step (10 ms) and ends normally,
except the crashed attempt of `restart`. The step time logged is the
planned 10 ms with 1% of seeded noise, not the time measured: on a busy
machine the measured one rises by several percent, and the level rules
would rightly flag it (the samples' times still follow the real sleeps).
"""
import math
import os
import random
import sys
import time

import vitals

STEP_S = 0.010


def attempt(run, first, last, rng, loss_at, pause=None, crash=False):
    e = vitals.Emitter(run=run, rank=0)
    st = random.Random(first + 11)
    for s in range(first, last):
        if pause is not None:
            pause(e, s)
        e.log(s, loss=loss_at(s, rng),
              step_time=STEP_S * math.exp(0.01 * st.gauss(0, 1)))
        time.sleep(STEP_S)
    if crash:
        # A crash: what was logged is delivered, no goodbye is sent.
        e.flush()
        os._exit(0)
    e.close()


def smooth(s, rng):
    return 3.0 * math.exp(-s / 300.0) + 1.0 + rng.gauss(0, 0.01)


def main():
    kind, run = sys.argv[1], sys.argv[2]
    rng = random.Random(7)
    if kind == "restart":
        if os.fork() == 0:
            attempt(run, 0, 300, rng, smooth, crash=True)
        os.wait()
        time.sleep(2.5)
        attempt(run, 200, 400, rng, smooth)
    elif kind == "ckpt":
        def ckpt(e, s):
            if s > 0 and s % 150 == 0:
                e.phase_begin("checkpoint", s)
                time.sleep(1.5)
                e.phase_end("checkpoint", s)
        attempt(run, 0, 600, rng, smooth, pause=ckpt)
    elif kind == "diverge":
        def climbing(s, rng):
            if s >= 700:
                return float("nan")
            base = smooth(min(s, 400), rng)
            return base * math.exp(0.01 * max(0, s - 400))
        attempt(run, 0, 720, rng, climbing)
    elif kind == "hang":
        def heartbeats(e, s):
            if s == 199:
                for _ in range(25):
                    e.log(199, loss=smooth(199, rng))
                    time.sleep(0.2)
        attempt(run, 0, 300, rng, smooth, pause=heartbeats)
    else:
        sys.exit("scenario.py: unknown scenario " + kind)


if __name__ == "__main__":
    main()
