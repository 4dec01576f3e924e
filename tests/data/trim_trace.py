#!/usr/bin/env python3
"""Cuts a PyTorch profiler (Kineto) trace down to its first K iterations.

    python3 tests/data/trim_trace.py IN(.json|.json.gz) OUT.json.gz --iterations K
    python3 tests/data/trim_trace.py IN OUT.json.gz --array   # Chrome's JSON Array Format

`--array` writes the trace's events as a top-level JSON array (the older Chrome "JSON
Array Format"), without the top-level fields that form cannot hold; nothing else changes.

How (the rule every trimmed trace of tests/data follows): whole iterations are dropped
from the end, nothing inside a kept iteration is changed.

- The cut is the start of the first dropped iteration: `ProfilerStep#N`'s `ts` when the
  trace has step markers, otherwise the end of the K-th `Optimizer.step` annotation.
- Every top-level field other than `traceEvents` (device properties, distributed info,
  base time, ...) and every metadata event (`ph: M`) is kept as is.
- A host event (operators, annotations, Python frames, runtime calls, instant events
  such as `[memory]`) is kept when it starts and ends before the cut; one that crosses
  the cut (the profiler's own span, outer Python frames) covers dropped work and goes.
- A device event (kernel, memcpy, memset) is kept when the runtime call that launched it
  (same `correlation`) is kept; one whose runtime call is not in the trace at all, when it
  starts before the cut.
  A device annotation is kept when it starts before the last kept device event ends.
- A launch flow (`ac2g`; older traces: `async`, `async_cpu_to_gpu`) is kept with its
  runtime call; any other flow (`fwdbwd`, launch flows of runtime calls missing from the
  trace) when all its points lie before the cut.

Numbers are copied digit for digit (no float round trip: nanosecond timestamps keep
their fractions). The output is gzip'd deterministically (no name, no time stamp).
"""
import argparse
import gzip
import io
import json
import re
import sys

RAW = "\u0001raw:"
RAW_IN_JSON = json.dumps(RAW)[1:-1]  # the marker as json.dumps writes it: \u0001raw:


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data.decode("utf-8"), parse_float=lambda s: RAW + s)


def num(x):
    if isinstance(x, str) and x.startswith(RAW):
        return float(x[len(RAW):])
    return float(x)


HOST_CATS_GPU = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset", "mtia_ccp_events"}
GPU_ANNOT = {"gpu_user_annotation"}


def is_device(e):
    return e.get("cat") in HOST_CATS_GPU


def is_runtime(e):
    return e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime", "hip_runtime", "hip_driver")


def corr(e):
    a = e.get("args") or {}
    return a.get("correlation", a.get("correlation id"))


def find_cut(events, k):
    steps = sorted((num(e["ts"]), e["name"]) for e in events
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"))
    if steps:
        if len(steps) <= k:
            sys.exit(f"the trace has {len(steps)} ProfilerSteps, not more than {k}")
        return steps[k][0], f"start of {steps[k][1]}"
    opt = sorted(num(e["ts"]) + num(e.get("dur", 0)) for e in events
                 if e.get("ph") == "X" and str(e.get("name", "")).startswith("Optimizer.step#")
                 and e.get("cat") in ("user_annotation", "cpu_op", "Operator"))
    if len(opt) <= k:
        sys.exit(f"the trace has {len(opt)} Optimizer.step annotations, not more than {k}")
    return opt[k - 1], f"end of Optimizer.step #{k}"


def trim(doc, k):
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    cut, why = find_cut(events, k)
    keep = [False] * len(events)
    kept_corr = set()
    all_corr = {corr(e) for e in events if is_runtime(e) and corr(e) is not None}
    for i, e in enumerate(events):
        ph = e.get("ph")
        if ph == "M":
            keep[i] = True
        elif ph in ("s", "t", "f") or is_device(e) or e.get("cat") in GPU_ANNOT:
            continue
        else:
            ts = num(e.get("ts", 0))
            end = ts + (num(e.get("dur", 0)) if ph == "X" else 0)
            keep[i] = ts < cut and end <= cut
            if keep[i] and is_runtime(e) and corr(e) is not None:
                kept_corr.add(corr(e))
    device_end = None
    for i, e in enumerate(events):
        if not is_device(e):
            continue
        c = corr(e)
        keep[i] = c in kept_corr if c in all_corr else num(e["ts"]) < cut
        if keep[i]:
            end = num(e["ts"]) + num(e.get("dur", 0))
            device_end = end if device_end is None else max(device_end, end)
    for i, e in enumerate(events):
        if e.get("cat") in GPU_ANNOT and e.get("ph") != "M":
            keep[i] = device_end is not None and num(e["ts"]) < device_end
    # Flows: a launch flow (ac2g, or the older async / async_cpu_to_gpu; its id is the
    # correlation) is kept with its runtime call; any other flow (fwdbwd) when all its
    # points lie before the cut.
    flows = {}
    for i, e in enumerate(events):
        if e.get("ph") in ("s", "t", "f"):
            flows.setdefault((e.get("cat"), e.get("id")), []).append(i)
    for (cat, fid), pts in flows.items():
        if cat in ("ac2g", "async", "async_cpu_to_gpu") and fid in all_corr:
            ok = fid in kept_corr
        else:
            ok = all(num(events[i]["ts"]) < cut for i in pts)
        for i in pts:
            keep[i] = ok
    out = [e for i, e in enumerate(events) if keep[i]]
    dropped = len(events) - len(out)
    if isinstance(doc, dict):
        doc["traceEvents"] = out
    else:
        doc = out
    return doc, cut, why, len(events), dropped


def dump(doc, path):
    def enc(x):
        return re.sub('"' + re.escape(RAW_IN_JSON) + r'([-0-9.eE+]+)"', r"\1",
                      json.dumps(x, ensure_ascii=False, separators=(",", ":")))
    buf = io.StringIO()
    if isinstance(doc, dict):
        buf.write("{")
        first = True
        for key, val in doc.items():
            buf.write("" if first else ",\n")
            first = False
            buf.write(json.dumps(key) + ":")
            if key == "traceEvents":
                buf.write("[\n" + ",\n".join(enc(e) for e in val) + "\n]")
            else:
                buf.write(enc(val))
        buf.write("}\n")
    else:
        buf.write("[\n" + ",\n".join(enc(e) for e in doc) + "\n]\n")
    raw = buf.getvalue().encode("utf-8")
    with open(path, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as g:
            g.write(raw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--iterations", type=int, help="iterations to keep (from the start)")
    ap.add_argument("--array", action="store_true", help="write the events as a top-level JSON array")
    a = ap.parse_args()
    if a.iterations is None and not a.array:
        ap.error("give --iterations K, --array or both")
    doc = load(a.input)
    if a.iterations is not None:
        doc, cut, why, n, dropped = trim(doc, a.iterations)
        print(f"{a.output}: kept {n - dropped} of {n} events; cut at {why} ({cut:.3f} us)")
    if a.array and isinstance(doc, dict):
        doc = doc["traceEvents"]
    dump(doc, a.output)


if __name__ == "__main__":
    main()
