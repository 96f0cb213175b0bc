"""What the host-wide inode counters still carry from one job to the next: their batch count.

The sandbox moves each job's place in its CPU's batch of inode numbers to a fresh random one
(`evalpack.sandbox.counters`; tested in tests/sandbox/test_shared_counters.py). The count of
batches handed out stays shared: a job moves it by using up whole batches of its CPU (1,024
pipes), and reads it when its CPU takes a new batch. Here a writer job leaves the count's parity
at a random bit and the next job on the slot reads it; printed: how often the reader got the
writer's bit (chance: half), and the CPU both jobs used, per pair.

    .venv/bin/python benchmarks/batch_count_channel.py [--pairs 16]
"""

from __future__ import annotations

import argparse
import textwrap

from evalpack.execution import Job, isolation, run_jobs

NUMBERS = """
import os, secrets
def number():
    r, w = os.pipe()
    n = os.fstat(r).st_ino
    os.close(r)
    os.close(w)
    return n
def new_batch():
    first = (number() - 1) // 1024
    while (index := (number() - 1) // 1024) == first:
        pass
    return index
def add(a, b):
    return a + b
"""
WRITER = NUMBERS + textwrap.dedent("""
    bit = secrets.randbelow(2)
    while new_batch() % 2 != bit:
        pass
    print("sent", bit)
    """)
READER = NUMBERS + 'print("got", (new_batch() - 1) % 2)\n'  # the batch after the writer's


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=16)
    args = parser.parse_args()
    test = "assert add(2, 3) == 5\n"
    jobs = [
        Job(program=program, test=test, entry_point="add", timeout=10.0)
        for _ in range(args.pairs)
        for program in (WRITER, READER)
    ]
    verdicts = run_jobs(jobs, workers=1)  # one slot: each reader follows its writer
    bits = [(w.output.split()[-1], r.output.split()[-1]) for w, r in zip(*[iter(verdicts)] * 2)]
    cpu = sum(v.cpu_seconds or 0.0 for v in verdicts) / args.pairs
    print(f"isolation: {isolation()}")
    print(f"reader got the writer's bit in {sum(a == b for a, b in bits)} of {len(bits)} pairs")
    print(f"CPU per pair (writer + reader): {cpu * 1000:.0f} ms")


if __name__ == "__main__":
    main()
