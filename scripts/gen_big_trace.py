#!/usr/bin/env python3
# Generates a large, realistic Kineto trace by replicating the iterations of a real one.
# SPDX-License-Identifier: MIT
"""Writes a Kineto (PyTorch profiler) trace of about --size bytes: the events of a real
trace, copied back to back as many times as needed. Copy k has its timestamps shifted by
k times the trace's span (plus a 1 ms pause), and every id that pairs events (correlation
and External id, flow ids, autograd sequence numbers) shifted by k times the largest id
of the trace, so copies never pair with each other; ProfilerStep#N becomes
ProfilerStep#(N + k * steps). Metadata events and top-level keys are written once.
Timestamps keep their exact decimal digits (nanosecond fractions included).

    python3 scripts/gen_big_trace.py /tmp/big.json                 # 1 GiB from the default trace
    python3 scripts/gen_big_trace.py /tmp/big.json --size 200M \\
        --source ../shared/traces/hta_resnet50_ddp_v100_ns/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz

The default source is the ResNet-50 trace bundled in examples/traces. The output is plain
JSON (or gzip when the name ends in .gz).
"""
import argparse
import decimal
import gzip
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SOURCE = os.path.join(HERE, "..", "examples", "traces", "resnet50_v100.json.gz")

ID_ARGS = ("correlation", "External id", "Sequence number", "Fwd thread id")
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def parse_size(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]?)i?B?", text.strip(), re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1G, 200M)")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()]
    return int(float(m.group(1)) * scale)


def ns(value):
    """Microseconds as a Decimal (exact) -> integer nanoseconds."""
    return int((decimal.Decimal(value) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_UP))


def us_text(t):
    """Integer nanoseconds -> microseconds text with exact digits ("12.345")."""
    sign = "-" if t < 0 else ""
    t = abs(t)
    whole, frac = divmod(t, 1000)
    return f"{sign}{whole}" if frac == 0 else f"{sign}{whole}.{frac:03d}"


def marked(obj):
    """`obj` with every non-integral Decimal replaced by a marker holding its exact text."""
    if isinstance(obj, decimal.Decimal):
        return int(obj) if obj == obj.to_integral_value() and "E" not in str(obj) and "." not in str(obj) \
            else f"@@N:{obj}@@"
    if isinstance(obj, dict):
        return {k: marked(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [marked(v) for v in obj]
    return obj


def dumps(obj):
    """Compact JSON with numbers written as they were read."""
    return re.sub(r'"@@N:([^@"]*)@@"', r"\1", json.dumps(marked(obj), separators=(",", ":")))


class Template:
    """One event as text with holes for the fields that change from copy to copy."""

    TS, ID, STEPNO = "@@TS@@", "@@ID{}@@", "@@STEP@@"

    def __init__(self, event):
        e = dict(event)
        self.ts = ns(e["ts"]) if "ts" in e else None
        if "ts" in e:
            e["ts"] = self.TS
        self.ids = []
        if "id" in e and isinstance(e["id"], int):
            self.ids.append(e["id"])
            e["id"] = self.ID.format(len(self.ids) - 1)
        args = e.get("args")
        if isinstance(args, dict):
            args = dict(args)
            for k in ID_ARGS:
                if isinstance(args.get(k), int) and args[k] >= 0:
                    self.ids.append(args[k])
                    args[k] = self.ID.format(len(self.ids) - 1)
            e["args"] = args
        self.step = None
        m = STEP.match(e.get("name", "")) if isinstance(e.get("name"), str) else None
        if m:
            self.step = int(m.group(1))
            e["name"] = self.STEPNO
        text = dumps(e)
        # Split at the holes: text pieces alternate with hole names.
        self.parts = re.split(r'"(@@[A-Z0-9]+@@)"', text)

    def render(self, shift_ns, shift_id, shift_step):
        out = []
        for i, p in enumerate(self.parts):
            if i % 2 == 0:
                out.append(p)
            elif p == self.TS:
                out.append(us_text(self.ts + shift_ns))
            elif p == self.STEPNO:
                out.append(f'"ProfilerStep#{self.step + shift_step}"')
            else:
                out.append(str(self.ids[int(p[4:-2])] + shift_id))
        return "".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", help="file to write (.json, or .json.gz for gzip)")
    ap.add_argument("--size", type=parse_size, default=parse_size("1G"), help="target size (default 1G)")
    ap.add_argument("--source", default=DEFAULT_SOURCE, help="Kineto trace to replicate")
    a = ap.parse_args()

    opener = gzip.open if a.source.endswith(".gz") else open
    with opener(a.source, "rt") as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    events = doc.pop("traceEvents")
    meta = [e for e in events if e.get("ph") == "M"]
    body = [Template(e) for e in events if e.get("ph") != "M"]
    begin = min(t.ts for t in body if t.ts is not None)
    end = max(t.ts + ns(e.get("dur", 0)) for t, e in zip(body, (e for e in events if e.get("ph") != "M"))
              if t.ts is not None)
    span = end - begin + 1_000_000
    max_id = max([i for t in body for i in t.ids] + [0]) + 1
    steps = sorted({t.step for t in body if t.step is not None})
    step_shift = steps[-1] - steps[0] + 1 if steps else 0

    head = dumps(doc)[:-1]
    head = (head + "," if len(head) > 1 else head) + '"traceEvents":[\n'
    out = gzip.open(a.output, "wt", compresslevel=1) if a.output.endswith(".gz") else open(a.output, "w")
    written = 0
    copies = 0
    with out:
        out.write(head)
        first = True
        for e in meta:
            out.write(("" if first else ",\n") + dumps(e))
            first = False
        while written < a.size:
            chunk = ",\n".join(t.render(copies * span, copies * max_id, copies * step_shift) for t in body)
            out.write(("" if first else ",\n") + chunk)
            first = False
            written += len(chunk) + 2
            copies += 1
        out.write("\n]}\n")
    print(f"{a.output}: {copies} copies of {len(body)} events ({copies * len(body) + len(meta)} events, "
          f"~{written / (1 << 20):.0f} MiB of events), span {span / 1e6:.1f} ms per copy", file=sys.stderr)


if __name__ == "__main__":
    main()
