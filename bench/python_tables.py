#!/usr/bin/env python3
"""The cost of crossing into Python: how long Trace.tasks() and Trace.dependencies() take to
build their DataFrames for a graph of about 10^6 tasks (docs/python.md).

Writes a synthetic Kineto trace (training steps of CPU operators, each launching a kernel
with cudaLaunchKernel), loads it with dd.load, and times each table (the best of --repeat
runs), with pandas and without (dicts of numpy arrays).

    PYTHONPATH=build-release/python python3 bench/python_tables.py --tasks 1000000
"""

import argparse
import json
import os
import tempfile
import time


def write_trace(path, tasks, ops_per_step=5000):
    """A trace of about `tasks` tasks: steps of (operator, launch, kernel) triples. Each triple
    makes five tasks: the operator is cut around its launch call."""
    steps = max(1, round(tasks / (5 * ops_per_step)))
    ev = []
    t = 0
    corr = 0
    for s in range(steps):
        begin = t
        for k in range(ops_per_step):
            corr += 1
            ev.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{k % 40}", "pid": 1, "tid": 1,
                       "ts": t, "dur": 8})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t + 2, "dur": 4, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": f"kernel_{k % 97}", "pid": 0, "tid": 7,
                       "ts": t + 5, "dur": 6, "args": {"correlation": corr, "device": 0, "stream": 7}})
            t += 10
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 1}", "pid": 1, "tid": 1,
                   "ts": begin, "dur": t - begin})
        t += 5
    with open(path, "w") as f:
        json.dump({"traceEvents": ev, "deviceProperties": [{"id": 0, "name": "synthetic GPU"}]}, f)


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import daydream as dd

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "synthetic.json")
        write_trace(path, args.tasks)
        t0 = time.perf_counter()
        t = dd.load(path)
        load_s = time.perf_counter() - t0
    n, e = t.task_count, t.dependency_count
    print(f"graph: {n} tasks, {e} dependencies (loaded in {load_s:.2f} s)")
    rows = [("tasks() DataFrame", lambda: t.tasks()), ("dependencies() DataFrame", lambda: t.dependencies())]
    for name, fn in rows:
        print(f"{name:<32} {1e3 * best_of(fn, args.repeat):8.1f} ms")
    if dd.have_pandas():
        pd = dd._pd
        dd._pd = None
        try:
            for name, fn in rows:
                label = name.replace("DataFrame", "numpy dict")
                print(f"{label:<32} {1e3 * best_of(fn, args.repeat):8.1f} ms")
        finally:
            dd._pd = pd
    r = t.replay()
    print(f"{'Replay.tasks() DataFrame':<32} {1e3 * best_of(lambda: r.tasks(), args.repeat):8.1f} ms")


if __name__ == "__main__":
    main()
