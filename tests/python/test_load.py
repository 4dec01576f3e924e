"""dd.load, the Trace's summary and its tables, against the daydream program on the same trace."""

import pathlib
import re

import numpy as np


def test_load_path_and_pathlib_give_the_same_trace(dd, small):
    a = dd.load(str(small))
    b = dd.load(pathlib.Path(small))
    assert a.task_count == b.task_count > 0
    assert a.baseline_us == b.baseline_us


def test_summary_equals_the_program(resnet_trace, resnet, cli):
    t = resnet_trace
    js = cli("whatif", resnet, "--json", "--pass", "amp")
    assert t.baseline_us == js["baseline_us"]
    assert t.measured_us == js["measured_us"]
    assert t.bound == js["bound"]
    assert t.iteration == js["iteration"]
    assert t.iterations_in_trace == js["iterations_in_trace"]
    assert t.iterations == js["iterations"]
    assert t.workers == js["workers"]
    assert t.baseline_peak_memory_bytes == js["baseline_peak_memory_bytes"]
    # the trace's own warnings; a what-if run adds its scenarios' (Trace.whatif(...).attrs)
    assert t.warnings and set(t.warnings) <= set(js["warnings"])
    rep = t.ingest_report
    assert {k: rep[k] for k in ("events", "in_graph", "ignored", "unlinked_gpu_ops")} == js["ingest"]
    assert rep["in_graph"] + sum(rep["ignored"].values()) == rep["events"]
    assert "V100" in t.gpu


def test_tables_count_what_the_program_counts(resnet_trace, resnet, cli):
    text = cli("whatif", resnet, "--pass", "amp")
    tasks, deps = map(int, re.search(r"(\d+) tasks, (\d+) dependencies", text).groups())
    df = resnet_trace.tasks()
    assert len(df) == tasks == resnet_trace.task_count
    assert list(df.columns[:11]) == ["id", "kind", "name", "layer", "phase", "iteration", "resource", "start",
                                     "duration", "gap", "launched_by"]
    d = resnet_trace.dependencies()
    assert len(d) == deps
    assert set(d["kind"].cat.categories) >= {"cpu_order", "stream_order", "launch"}


def test_task_table_columns_are_consistent(resnet_trace):
    df = resnet_trace.tasks()
    deps = resnet_trace.dependencies()
    assert df["id"].is_unique
    assert (df["duration"] >= 0).all()
    assert set(df["kind"].unique()) <= {"cpu_task", "gpu_kernel", "memcpy_task", "comm_task"}
    assert set(df["phase"].unique()) <= {"forward", "backward", "weight_update", "other"}
    # launched_by is the source of the task's launch dependency
    launch = deps[deps["kind"] == "launch"]
    by_dst = dict(zip(launch["dst"].to_numpy(), launch["src"].to_numpy()))
    launched = df[df["launched_by"] >= 0]
    assert len(launched) > 1000
    assert all(by_dst[i] == s for i, s in zip(launched["id"].to_numpy()[:2000], launched["launched_by"].to_numpy()[:2000]))
    kernels = df[df["kind"] == "gpu_kernel"]
    assert (kernels["resource"].astype(str).str.contains("stream")).all()
    assert (df.loc[df["kind"] == "cpu_task", "launched_by"] == -1).all()
    assert np.issubdtype(df["start"].dtype, np.integer)


def test_tables_without_pandas_are_dicts_of_arrays(dd, small, monkeypatch):
    t = dd.load(small)
    with_pandas = t.tasks()
    monkeypatch.setattr(dd, "_pd", None)
    plain = t.tasks()
    assert isinstance(plain, dict) and not dd.have_pandas()
    assert isinstance(plain["duration"], np.ndarray)
    assert list(plain["name"]) == list(with_pandas["name"].astype(str))
    assert (plain["duration"] == with_pandas["duration"].to_numpy()).all()
    deps = t.dependencies()
    assert isinstance(deps["src"], np.ndarray)
    w = t.whatif("amp")
    assert w["name"][0] == "amp"


def test_repr_html_summarises(resnet_trace):
    html = resnet_trace._repr_html_()
    assert "<table" in html and "baseline (replay)" in html and "tasks" in html
    assert "Replay" in repr(resnet_trace.replay()) or "replay" in resnet_trace.replay()._repr_html_()


def test_kernel_flops_and_bytes_from_recorded_shapes(dd, pair):
    # An MLP recorded with record_shapes: its GEMM kernels carry their operators' FLOPs
    # (2 M N K for each addmm / mm), nothing else computes any; copies say their bytes.
    df = dd.load(str(pair[0])).tasks()
    assert {"bytes", "flops"} <= set(df.columns)
    assert (df.loc[df["kind"] != "gpu_kernel", "flops"] == 0).all()
    kernels = df[df["kind"] == "gpu_kernel"]
    with_flops = kernels[kernels["flops"] > 0]
    assert len(with_flops) > 0
    assert (with_flops["bytes"] > 0).all()
    # Every kernel with FLOPs runs a GEMM (cuBLAS names: gemm, nvjet, cutlass).
    names = with_flops["name"].astype(str).str.lower()
    assert names.str.contains("gemm|nvjet|cutlass|xmma").all()
    copies = df[df["kind"] == "memcpy_task"]
    assert len(copies) == 0 or (copies["bytes"] > 0).any()
