#!/usr/bin/env python3
# Makes the Kineto seed corpus of the fuzz_kineto target: small, self-consistent slices of real traces.
# SPDX-License-Identifier: MIT
"""Cuts a time window out of each trace listed below and writes it to kineto/<name>.json,
and writes the seeds of fuzz_graph to graph/.

A slice keeps the events that overlap the window (so the ProfilerStep or optimizer
annotation around it comes along), the GPU work launched by the runtime calls in it
(matched by correlation id), the flows of those calls, the metadata events of the
processes and threads involved, and the trace's top-level metadata. The window is
shrunk until the slice fits in MAX_BYTES.

    python3 tests/fuzz/corpus/make_seeds.py [TRACES_DIR]   # default: ../shared/traces
"""
import gzip
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_BYTES = 6000

# (output name, trace path under TRACES_DIR, where the window starts: fraction of the trace)
SLICES = [
    ("gp100_optimizer_step", "hta_small_train_gp100/step_based_trace_2543932.json.gz", 0.5),
    ("a100_event_sync_3_streams", "hta_micro_a100/cuda_event_sync_multi_stream_trace.json.gz", 0.4),
    ("a100_alexnet_cuda_sync", "hta_micro_a100/alexnet_fwd_benchmark_result_2869224_1695835535_trace.json.gz", 0.5),
    ("mi250_hip_fwdbwd", "hta_amd_mi250_minitoy/mi250_minitoy_train_ROCm6_2_kineto.json.gz", 0.3),
    ("v100_resnet50_ns_fractions", "hta_resnet50_ddp_v100_ns/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 0.6),
    ("a100_recsys_async_flows", "hta_recsys_a100_8rank/control.json.gz", 0.55),
    ("v100_mlp_ddp_memory", "hta_mlp_ddp_v100_2rank/df_index_resolver.json.gz", 0.45),
    ("v100_dlrm_distributed", "param_dlrm_8rank_v100/kineto/worker0_step_12.1694128201545.pt.trace.json", 0.5),
    ("h100_bert_modules", "tracelens_h100_inference_modules/gaunernst_bert-small-uncased__1016001.json.gz", 0.5),
    ("rtx2080_resnet18_memset", "param_resnet18_rtx2080ti/resnet_kineto.json.gz", 0.5),
    ("a100_sampled_no_flows", "hta_sampled_128rank/sampled_rank-0.json.gz", 0.5),
]

CPU = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver", "Operator", "Runtime"}
GPU = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def corr(e):
    a = e.get("args") or {}
    return a.get("correlation", a.get("External id"))


def cut(doc, begin, end):
    events = doc["traceEvents"]
    kept, places, corrs = [], set(), set()
    for e in events:
        if e.get("ph") != "X" or "ts" not in e:
            continue
        ts, dur = float(e["ts"]), float(e.get("dur", 0))
        if e.get("cat") in CPU and ts < end and ts + dur > begin:
            kept.append(e)
            places.add((e.get("pid"), e.get("tid")))
            if e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime") and corr(e) is not None:
                corrs.add(corr(e))
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU and corr(e) in corrs:
            kept.append(e)
            places.add((e.get("pid"), e.get("tid")))
        elif e.get("ph") in ("s", "f") and e.get("id") in corrs:
            kept.append(e)
        elif e.get("ph") == "X" and e.get("cat") == "cuda_sync" and begin <= float(e["ts"]) < end:
            kept.append(e)
        elif e.get("ph") in ("i", "I") and e.get("name") == "[memory]" and begin <= float(e["ts"]) < end:
            kept.append(e)
    pids = {p for p, _ in places}
    meta = [e for e in events if e.get("ph") == "M" and
            (e.get("pid"), e.get("tid")) in places | {(p, 0) for p in pids}]
    kept.sort(key=lambda e: (float(e.get("ts", 0)), e.get("ph", "")))
    out = {k: v for k, v in doc.items() if k in ("schemaVersion", "distributedInfo", "displayTimeUnit")}
    if doc.get("deviceProperties"):
        dev = doc["deviceProperties"][0]
        out["deviceProperties"] = [{k: dev[k] for k in ("id", "name", "totalGlobalMem") if k in dev}]
    out["traceEvents"] = meta + kept
    return json.dumps(out, separators=(",", ":")) + "\n"


def graph_seeds(count=16, size=512):
    """fuzz_graph reads its choices from both ends of the input: seeded random bytes, long
    enough for a starting graph and 24 steps, give deep sequences from the first run."""
    os.makedirs(os.path.join(HERE, "graph"), exist_ok=True)
    for k in range(count):
        with open(os.path.join(HERE, "graph", f"random_{k:02d}.bin"), "wb") as f:
            f.write(random.Random(k).randbytes(size))


def main():
    graph_seeds()
    traces = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "..", "..", "shared", "traces")
    os.makedirs(os.path.join(HERE, "kineto"), exist_ok=True)
    for name, rel, where in SLICES:
        doc = load(os.path.join(traces, rel))
        starts = sorted(float(e["ts"]) for e in doc["traceEvents"]
                        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "Runtime"))
        begin = starts[int(len(starts) * where)]
        width = 2000.0
        text = cut(doc, begin, begin + width)
        while len(text) > MAX_BYTES and width > 1:
            width /= 1.5
            text = cut(doc, begin, begin + width)
        with open(os.path.join(HERE, "kineto", name + ".json"), "w") as f:
            f.write(text)
        print(f"{name}: {len(text)} bytes, {len(json.loads(text)['traceEvents'])} events")


if __name__ == "__main__":
    main()
