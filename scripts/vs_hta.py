#!/usr/bin/env python3
# Times daydream against Holistic Trace Analysis on the same traces, whole process, side by side.
# SPDX-License-Identifier: MIT
"""Runs, for each trace, `daydream whatif TRACE --pass amp --critical-path --json` and
Holistic Trace Analysis' load + critical-path analysis of the same trace (HTA from its
public source, with Debian's pandas, networkx, plotly, psutil and yaml), alternately,
--runs times each under GNU time, and prints a Markdown table of wall time, CPU time (user + system)
and peak resident memory, medians, with the ratios.

    python3 scripts/vs_hta.py --hta ~/src/HolisticTraceAnalysis --daydream build/examples/daydream \\
        examples/traces/resnet50_v100.json.gz \\
        ../shared/traces/hta_mlp_ddp_v100_2rank/df_index_resolver.json.gz:rank=1 \\
        ../shared/traces/param_resnet18_rtx2080ti/resnet_kineto.json.gz:annotation=Optimizer.zero_grad,instance=1:2

A trace may carry HTA's settings after a colon: rank= (the trace's rank, default 0),
annotation= (the step annotation, default ProfilerStep) and instance= (an instance, or
FIRST:LAST; default 1). HTA reads a directory: each trace is linked into a temporary one.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HTA_SNIPPET = r"""
import sys
sys.path.insert(0, sys.argv[1])
from hta.trace_analysis import TraceAnalysis
inst = sys.argv[5]
inst = tuple(int(x) for x in inst.split(":")) if ":" in inst else int(inst)
a = TraceAnalysis(trace_dir=sys.argv[2])
res = a.critical_path_analysis(rank=int(sys.argv[3]), annotation=sys.argv[4], instance_id=inst)
if res is None or not res[1]:
    sys.exit("HTA found no critical path")
"""


def measure(cmd):
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of `cmd`, by GNU time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        p = subprocess.run(["/usr/bin/time", "-o", out.name, "-f", "%e %U %S %M", *cmd],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
        wall, user, system, rss = out.read().split()[-4:]
    return float(wall), float(user) + float(system), int(rss) / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+", help="TRACE[:rank=R,annotation=A,instance=I]")
    ap.add_argument("--hta", required=True, help="HolisticTraceAnalysis source tree (the folder holding hta/)")
    ap.add_argument("--daydream", required=True, help="the daydream program")
    ap.add_argument("--python", default=sys.executable, help="interpreter for HTA")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    print("| trace | JSON | daydream wall / CPU / peak | HTA wall / CPU / peak | wall ratio | CPU ratio | memory ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for spec in a.traces:
        path, _, opts = spec.partition(":")
        kv = dict(o.split("=", 1) for o in opts.split(",") if o) if opts else {}
        with tempfile.TemporaryDirectory() as d:
            os.symlink(os.path.abspath(path), os.path.join(d, os.path.basename(path)))
            dd, hta = [], []
            for _ in range(a.runs):
                dd.append(measure([a.daydream, "whatif", path, "--pass", "amp", "--critical-path", "--json"]))
                hta.append(measure([a.python, "-c", HTA_SNIPPET, a.hta, d, kv.get("rank", "0"),
                                    kv.get("annotation", "ProfilerStep"), kv.get("instance", "1")]))
        med = lambda xs, i: statistics.median(x[i] for x in xs)
        size = subprocess.run(["sh", "-c", f"gzip -cdf '{path}' | wc -c"], capture_output=True, text=True).stdout
        mb = int(size) / 1e6
        w, c, m = med(dd, 0), med(dd, 1), max(x[2] for x in dd)
        hw, hc, hm = med(hta, 0), med(hta, 1), max(x[2] for x in hta)
        print(f"| {os.path.basename(path)} | {mb:.0f} MB | {w:.2f} s / {c:.2f} s / {m:.0f} MB | "
              f"{hw:.2f} s / {hc:.2f} s / {hm:.0f} MB | {hw / w:.1f}x | {hc / c:.1f}x | {m / hm:.2f} |")


if __name__ == "__main__":
    main()
