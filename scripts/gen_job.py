#!/usr/bin/env python3
# Generates the Kineto traces of every rank of a large distributed job from one real rank's trace.
# SPDX-License-Identifier: MIT
"""Writes rank r of an N-rank job, for every r, into a directory: each rank is the events
of a real rank's trace copied back to back until it holds about --size bytes (as
scripts/gen_big_trace.py does for one trace), with `distributedInfo` saying its rank and
the world size. Every rank has the same operators and the same collectives in the same
order, so the job's collectives match; ranks differ only in speed: rank r runs every step
stretched by a small factor (1 + jitter, jitter one of --classes values up to --skew), and
the straggler (--straggler, default rank N/3) by --straggler-slowdown more. Copy k of every
rank starts at the same time, so a slower rank arrives late at the step's collectives and
the others wait for it.

    python3 scripts/gen_job.py /tmp/job --ranks 8 --size 100M          # 8 x 100 MB
    python3 scripts/gen_job.py /tmp/job128 --ranks 128 --size 100M     # 12.8 GB of JSON

The default source is rank 0 of Holistic Trace Analysis' 16-rank DDP job on A100s
(tests/data/hta_ddp_a100_16rank, 16.5 MB of JSON, 4 steps). Ranks of the same speed class
share their events: each class is rendered once and copied under every rank's header, so
a 128-rank job takes minutes, mostly writing. The files are plain JSON named
rank-RRRRR.json, one directory per job (give the directory to `daydream whatif`).
"""
import argparse
import decimal
import gzip
import hashlib
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_big_trace as gbt  # noqa: E402  (Template, dumps, ns, us_text, parse_size)

HERE = os.path.dirname(os.path.abspath(__file__))
DUR = "%%DUR%%"
DEFAULT_SOURCE = os.path.join(HERE, "..", "tests", "data", "hta_ddp_a100_16rank", "rank0.steps550-553.json.gz")


def stretch_of(rank, a):
    """Rank `rank`'s speed: the factor its steps are stretched by (1: as traced)."""
    if a.classes <= 1 or a.skew <= 0:
        jitter = 0.0
    else:
        h = int(hashlib.sha256(f"{a.seed}:{rank}".encode()).hexdigest(), 16) % a.classes
        jitter = a.skew * h / (a.classes - 1)
    f = 1.0 + jitter
    if rank == a.straggler:
        f += a.straggler_slowdown
    return round(f, 6)


class Body:
    """The source's non-metadata events as templates, with their durations."""

    def __init__(self, events):
        body = [e for e in events if e.get("ph") != "M"]
        self.durs = [gbt.ns(e["dur"]) if "dur" in e else None for e in body]
        # The duration is a hole too (a string the template keeps as it is, then replaced).
        self.templates = [gbt.Template(dict(e, dur=DUR) if "dur" in e else e) for e in body]
        self.begin = min(t.ts for t in self.templates if t.ts is not None)
        self.end = max(t.ts + (d or 0) for t, d in zip(self.templates, self.durs) if t.ts is not None)
        self.max_id = max([i for t in self.templates for i in t.ids] + [0]) + 1
        steps = sorted({t.step for t in self.templates if t.step is not None})
        self.step_shift = steps[-1] - steps[0] + 1 if steps else 0

    def render(self, out, copies, period, factor):
        """Writes `copies` copies, copy k at k * period, every time stretched by `factor`."""
        first = True
        for k in range(copies):
            shift = k * period
            parts = []
            for t, d in zip(self.templates, self.durs):
                saved_ts = t.ts
                if t.ts is not None:
                    t.ts = self.begin + round((t.ts - self.begin) * factor)
                text = t.render(shift, k * self.max_id, k * self.step_shift)
                t.ts = saved_ts
                if d is not None:
                    text = text.replace('"' + DUR + '"', gbt.us_text(round(d * factor)), 1)
                parts.append(text)
            out.write(("" if first else ",\n") + ",\n".join(parts))
            first = False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", help="directory to write the ranks into (created)")
    ap.add_argument("--ranks", type=int, default=8, help="world size N (default 8)")
    ap.add_argument("--size", type=gbt.parse_size, default=gbt.parse_size("100M"), help="size of each rank (100M)")
    ap.add_argument("--source", default=DEFAULT_SOURCE, help="Kineto trace of one real rank to replicate")
    ap.add_argument("--skew", type=float, default=0.004, help="largest per-rank slowdown (0.004: 0.4%%)")
    ap.add_argument("--classes", type=int, default=4, help="distinct per-rank speeds (default 4)")
    ap.add_argument("--straggler", type=int, default=None, help="the slow rank (default N/3; -1: none)")
    ap.add_argument("--straggler-slowdown", type=float, default=0.02, help="its extra slowdown (0.02: 2%%)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the per-rank speeds")
    a = ap.parse_args()
    if a.ranks < 1:
        ap.error("--ranks must be at least 1")
    if a.straggler is None:
        a.straggler = a.ranks // 3

    opener = gzip.open if a.source.endswith(".gz") else open
    with opener(a.source, "rt") as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    events = doc.pop("traceEvents")
    meta = [e for e in events if e.get("ph") == "M"]
    body = Body(events)
    del events
    # Copies: from the size of one rendering (the source's events in compact JSON).
    os.makedirs(a.output, exist_ok=True)
    factors = {r: stretch_of(r, a) for r in range(a.ranks)}
    slowest = max(factors.values())
    period = round((body.end - body.begin) * slowest) + 1_000_000  # copies never overlap
    probe = tempfile.TemporaryFile("w+")
    body.render(probe, 1, period, 1.0)
    one = probe.tell()
    probe.close()
    copies = max(1, round(a.size / one))
    rendered = {}  # factor -> temporary file of the events
    tmpdir = tempfile.mkdtemp(dir=a.output, prefix=".classes-")
    try:
        for f in sorted(set(factors.values())):
            path = os.path.join(tmpdir, f"events-{f}.json")
            with open(path, "w") as out:
                body.render(out, copies, period, f)
            rendered[f] = path
        width = max(5, len(str(a.ranks - 1)))
        for r in range(a.ranks):
            d = dict(doc)
            info = dict(d.get("distributedInfo") or {})
            info["rank"] = r
            info["world_size"] = a.ranks
            info.setdefault("backend", "nccl")
            d["distributedInfo"] = info
            head = gbt.dumps(d)[:-1]
            head = (head + "," if len(head) > 1 else head) + '"traceEvents":[\n'
            name = os.path.join(a.output, f"rank-{r:0{width}d}.json")
            with open(name, "w") as out:
                out.write(head)
                for e in meta:
                    out.write(gbt.dumps(e) + ",\n")
                with open(rendered[factors[r]]) as src:
                    shutil.copyfileobj(src, out, 1 << 22)
                out.write("\n]}\n")
    finally:
        shutil.rmtree(tmpdir)
    total = sum(os.path.getsize(os.path.join(a.output, n)) for n in os.listdir(a.output) if n.endswith(".json"))
    print(f"{a.output}: {a.ranks} ranks of {copies} copies of {len(body.templates)} events "
          f"({copies * body.step_shift} steps each), {total / 1e9:.2f} GB in all; straggler rank {a.straggler} "
          f"(x{factors.get(a.straggler, 1.0)}), speeds {sorted(set(factors.values()))}", file=sys.stderr)


if __name__ == "__main__":
    main()
