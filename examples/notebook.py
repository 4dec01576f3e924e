# %% [markdown]
# # From a trace to a decision with daydream
#
# A percent-script notebook (open it in Jupyter with jupytext, in VS Code or Spyder as
# cells, or run it with `python3 examples/notebook.py`). It walks from one PyTorch profiler
# trace of a ResNet-50 training run on a V100 to a decision: what to do next to make the
# step faster, and what a move to data-parallel training would give.
#
# Needs the daydream module on the path (`PYTHONPATH=build/python` from a build tree, or
# `cmake --install`) and pandas; matplotlib is optional (the plot is skipped without it).

# %%
import pathlib
import sys

import daydream as dd

here = pathlib.Path(__file__).resolve().parent if "__file__" in globals() else pathlib.Path("examples")
trace_path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here / "traces" / "resnet50_v100.json.gz"

# %% [markdown]
# ## 1. Load the trace
# The trace becomes a task graph: CPU operators and runtime calls, GPU kernels, copies,
# each with its layer and phase. In a notebook, `t` alone shows a summary table.

# %%
t = dd.load(trace_path)
print(repr(t))
print("GPU:", t.gpu)
print("measured step: %.3f ms, replayed: %.3f ms" % (t.measured_us / 1e3, t.baseline_us / 1e3))
print("events in the graph: %d of %d" % (t.ingest_report["in_graph"], t.ingest_report["events"]))
print(t.bound)

# %% [markdown]
# ## 2. Where the time goes
# Every task is a row; group it like any DataFrame.

# %%
tasks = t.tasks()
gpu = tasks[tasks["kind"] == "gpu_kernel"]
print("GPU kernel time by phase (ms):")
print((gpu.groupby("phase", observed=True)["duration"].sum() / 1e6).round(3).to_string())

r = t.replay()
cp = r.critical_path()
print("\nthe critical path of the median iteration, by layer and phase:")
print(cp.head(8).to_string(index=False))
print("\nbusiest resources:")
print(r.busy().head(4).to_string(index=False))

# %% [markdown]
# ## 3. What-ifs
# Every bundled pass that applies to this trace, at its default scenario, then a pass of
# our own written in Python: every convolution kernel 1.5x faster (a new cuDNN, say).

# %%
scenarios = t.whatif()
print(scenarios[["name", "predicted_us", "speedup", "bound"]].to_string(index=False))


def faster_convolutions(g):
    """Every convolution kernel 1.5x faster."""
    g.scale_duration(g.tasks(kind="gpu_kernel", name="conv|implicit_gemm|winograd", ignore_case=True), 1 / 1.5)


mine = t.whatif([faster_convolutions, "amp", ["amp", faster_convolutions]])
print(mine[["name", "predicted_us", "speedup"]].to_string(index=False))

# %% [markdown]
# ## 4. A sweep: data-parallel training on a cluster
# The trace records no gradient sizes, so the model's size is given (ResNet-50: about
# 100 MB of FP32 gradients). Each point replays the graph with the all-reduce modelled on
# the cluster's links.

# %%
grid = t.sweep(["ddp:model_bytes=100MB", "amp+ddp:model_bytes=100MB"],
               vary={"workers": [2, 4, 8, 16, 32], "bandwidth": ["10Gbps", "100Gbps"]})
print(grid[["scenario", "params.workers", "params.bandwidth", "predicted_us", "speedup"]].to_string(index=False))

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    plt = None
    print("\n(matplotlib is not installed: the plot is skipped)")
if plt is not None:
    fig, ax = plt.subplots(figsize=(6, 4))
    for (scenario, bw), part in grid.groupby(["scenario", "params.bandwidth"]):
        ax.plot(part["params.workers"].astype(int), part["speedup"], marker="o", label=f"{scenario}, {bw}")
    ax.set_xlabel("workers")
    ax.set_ylabel("throughput vs one V100")
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig("sweep.png")
    print("\nplot written to sweep.png")

# %% [markdown]
# ## 5. The decision
# The single-GPU change with the largest gain, and the cluster where adding workers stops
# paying (scaling efficiency under 80%).

# %%
best = scenarios[scenarios["applied"]].sort_values("speedup", ascending=False).iloc[0]
print(f"on one GPU: {best['name']} first, {best['speedup']:.2f}x ({best['predicted_us'] / 1e3:.1f} ms a step)")
for (scenario, bw), part in grid.groupby(["scenario", "params.bandwidth"], sort=False):
    part = part.assign(workers=part["params.workers"].astype(int)).sort_values("workers")
    efficient = part[part["speedup"] / part["workers"] >= 0.8]
    top = efficient["workers"].max() if len(efficient) else None
    verdict = f"up to {top} workers at >= 80% scaling efficiency" if top else "under 80% efficiency from 2 workers"
    print(f"{scenario} at {bw}: {verdict}")
