#!/usr/bin/env python3
"""Measures the build time of translation units: each compile command from a CMake build's
compile_commands.json whose file path contains --match is run --repeat times (output to a
temporary file) and the median CPU time of the compiler (user + system: steadier than wall
time on a shared machine) is printed as a markdown table, with the median wall time and the
CPU time above the empty translation unit. Run through the daydream_compile_times target;
--flags replaces the optimization flags (e.g. --flags=-O0)."""
import argparse
import json
import os
import pathlib
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True, help="CMake build directory (compile_commands.json)")
ap.add_argument("--match", default="bench/compile", help="substring of the files to measure")
ap.add_argument("--repeat", type=int, default=5)
ap.add_argument("--flags", default=None, help="replace -O*/-g flags by these (space separated)")
args = ap.parse_args()

db = json.loads((pathlib.Path(args.build) / "compile_commands.json").read_text())
entries = [e for e in db if args.match in e["file"] or "include_daydream" in e["file"]]
if not entries:
    sys.exit(f"no compile command matches {args.match!r} in {args.build}/compile_commands.json")

def command(e, out):
    argv = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
    if "-o" in argv:
        argv[argv.index("-o") + 1] = out
    if args.flags is not None:
        argv = [a for a in argv if not a.startswith(("-O", "-g"))]
        argv[1:1] = args.flags.split()
    return argv

rows = []
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "tu.o")
    for e in entries:
        cpu, wall = [], []
        for _ in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            r = subprocess.run(command(e, out), cwd=e["directory"], capture_output=True, text=True)
            wall.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if r.returncode != 0:
                sys.exit(f"compiling {e['file']} failed:\n{r.stderr}")
        name = pathlib.Path(e["file"]).name
        first = pathlib.Path(e["file"]).read_text().splitlines()[0]
        if first.startswith("// Includes <"):  # generated: one header
            name = "#include " + first.split()[2]
        rows.append((name, statistics.median(cpu), statistics.median(wall), min(cpu), max(cpu)))

base = next((c for n, c, *_ in rows if n == "empty.cpp"), 0.0)
flags = [f for f in command(entries[0], "x") if f.startswith(("-O", "-g", "-std"))]
print(f"compiler: {command(entries[0], 'x')[0]}, flags {' '.join(flags)}, {args.repeat} runs each")
print("| translation unit | CPU median (s) | above empty (s) | CPU min..max (s) | wall median (s) |")
print("|---|---:|---:|---:|---:|")
for name, med, wmed, lo, hi in sorted(rows, key=lambda r: r[1]):
    print(f"| {name} | {med:.2f} | {med - base:.2f} | {lo:.2f}..{hi:.2f} | {wmed:.2f} |")
