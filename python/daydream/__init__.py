"""daydream: what-if analysis of DNN training from one PyTorch profiler trace.

    import daydream as dd
    t = dd.load("trace.json.gz")      # several files or a directory: a distributed job (dd.Job)
    t.tasks()                         # one row per task (a pandas DataFrame)
    r = t.replay()                    # r.iteration_time(n), r.critical_path(), r.busy()
    t.whatif(["amp", "ddp:workers=16,bandwidth=25Gbps"])
    t.sweep(["ddp"], vary={"workers": [8, 64]})

Tables are pandas DataFrames when pandas is installed, else dicts of numpy arrays (and
lists). Times are microseconds (`*_us`) except the task tables' `start`, `duration`, `gap`,
`replay_start` and `replay_end`, which are the graph's own nanoseconds. Errors: ValueError
(bad input, a usage error, with the library's message), FileNotFoundError; a pass written in
Python raises its own exceptions. See docs/python.md.
"""

import os as _os

import numpy as _np

from . import _daydream as _core
from ._daydream import GraphView, Job, Replay, Trace  # noqa: F401

try:  # pandas is optional: without it, tables are dicts of numpy arrays
    import pandas as _pd
except ImportError:  # pragma: no cover - depends on the installation
    _pd = None

__all__ = ["load", "load_job", "compare", "optimize", "strategy", "ps", "dlc_analyze", "dlc_replay", "dlc_export", "passes", "GraphView", "Job", "Replay", "Trace",
           "have_pandas"]


def have_pandas():
    """Whether tables come back as pandas DataFrames (else dicts of numpy arrays)."""
    return _pd is not None


def _table(columns, attrs=None):
    """A DataFrame of `columns` (dict of equal-length arrays or lists), or the dict itself."""
    if _pd is None:
        return {k: (_np.asarray(v) if not isinstance(v, _np.ndarray) else v) for k, v in columns.items()}
    df = _pd.DataFrame(columns, copy=False)
    if attrs:
        df.attrs.update(attrs)
    return df


def _categorical(codes, categories):
    """Codes into `categories` as a pandas Categorical (or an array of strings without pandas)."""
    if _pd is None:
        cats = _np.asarray(categories, dtype=object)
        out = _np.empty(len(codes), dtype=object)
        valid = codes >= 0
        out[valid] = cats[codes[valid]]
        return out
    return _pd.Categorical.from_codes(_np.asarray(codes, dtype=_np.int64) if codes.dtype == _np.uint32 else codes,
                                      categories=_pd.Index(categories, dtype=object))


def _task_table(c, extra=()):
    strings = c["string_categories"]
    cols = {
        "id": c["id"],
        "kind": _categorical(c["kind"], c["kind_categories"]),
        "name": _categorical(c["name"], strings),
        "layer": _categorical(c["layer"], strings),
        "phase": _categorical(c["phase"], c["phase_categories"]),
        "iteration": c["iteration"],
        "resource": _categorical(c["resource"], c["resource_categories"]),
        "start": c["start"],
        "duration": c["duration"],
        "gap": c["gap"],
        "launched_by": c["launched_by"],
        "bytes": c["bytes"],
        "flops": c["flops"],
    }
    for k in extra:
        cols[k] = c[k]
    return _table(cols)


def _fspath(p):
    return _os.fspath(p)


def _scenario_arg(s):
    """A scenario as the core takes it: a spec string, a callable, or a list of them."""
    if isinstance(s, (str, bytes)) or callable(s) or not hasattr(s, "__iter__"):
        return s  # the core names what it cannot take
    return list(s)


def _scenarios_arg(scenarios):
    if scenarios is None:
        return None
    if isinstance(scenarios, str) or callable(scenarios):
        return [scenarios]
    return [_scenario_arg(s) for s in scenarios]


# ---- Trace: loading, tables, replays, what-ifs -------------------------------------------


def load(path, *more, iteration=None, batch=None, step_annotation=None, overlap_slowdown=1.0, **job):
    """Loads a Kineto trace (a path or pathlib.Path, .json or .json.gz) into a Trace.

    iteration: analyse only this iteration (default: every steady-state one, the median
    shown); batch: samples per worker and step (for samples/s); step_annotation: a regular
    expression naming the annotations that mark the steps; overlap_slowdown: Proteus'
    overlap factor for every replay. Several paths (or a list of them), or a directory,
    are the ranks of one distributed job: a Job (see load_job). The file is read without
    holding the GIL."""
    paths = [*path] if isinstance(path, (list, tuple)) else [path]
    paths += list(more)
    if len(paths) > 1 or _os.path.isdir(_fspath(paths[0])):
        if batch is not None or step_annotation is not None or overlap_slowdown != 1.0:
            raise ValueError("daydream.load: batch, step_annotation and overlap_slowdown are for one trace, not a job")
        return load_job(paths, iteration=iteration, **job)
    if job:
        raise ValueError("daydream.load: %s are for a job (several traces or a directory)" % ", ".join(sorted(job)))
    return _core._load(_fspath(paths[0]), -1 if iteration is None else int(iteration), int(batch or 0),
                       step_annotation or "", float(overlap_slowdown))


def load_job(paths, *, ranks=None, align=None, comm="coarse", transfer="trace", cluster=None, iteration=None):
    """Loads the traces of every rank of a distributed job (files, or a directory of them)
    into one graph, as `daydream whatif RANK0 RANK1 ...` does (docs/jobs.md): collectives
    matched across ranks, clocks aligned (align="lp" with GLPK, or "none"), collectives
    modelled "coarse" or "fine" (chunk transfers on the cluster's links, cluster= the
    distributed passes' keys). Returns a Job: .ranks() (the per-rank table), .straggler,
    .baseline_us, .whatif(...). Read without holding the GIL."""
    paths = [_fspath(p) for p in ([paths] if isinstance(paths, (str, bytes, _os.PathLike)) else paths)]
    return _core._load_job(paths, [int(r) for r in (ranks or [])], align or "", str(comm), str(transfer),
                           str(cluster or ""), -1 if iteration is None else int(iteration))


def _job_ranks(self):
    """One row per rank: rank, file, measured_us, predicted_us (its replayed iteration),
    clock_offset_us, and where its time went: compute_us, transfer_us, wait_us (for other
    ranks at collectives), other_us (the four add up to predicted_us)."""
    return _table(self._rank_columns())


def _job_whatif(self, scenarios=None, on_ranks=None):
    """Job scenarios (default: no_straggler, network:scale=2, collective:algorithm=tree; or
    any pass chain, applied to every rank or to `on_ranks`): one row per scenario with
    predicted_us, speedup, straggler and its own per-rank table (`ranks`)."""
    specs = _job_specs(scenarios)
    rows = self._whatif(specs, [int(r) for r in (on_ranks or [])])
    for r in rows:
        if r["ranks"] is not None:
            r["ranks"] = _table(r["ranks"])
    keys = ["name", "applied", "reason", "predicted_us", "speedup", "straggler", "notes", "ranks"]
    cols = {k: [r[k] for r in rows] for k in keys}
    if _pd is None:
        return {k: _np.asarray(v, dtype=object) for k, v in cols.items()}
    return _table(cols)


def _job_specs(scenarios):
    return [] if scenarios is None else ([scenarios] if isinstance(scenarios, str) else list(scenarios))


def _job_timeline(self, path, scenarios=None, on_ranks=None):
    """Writes the job's replays as Chrome-trace JSON (Perfetto), as `daydream whatif RANK0
    RANK1 ... --timeline PATH`: a process per rank for the baseline and for each scenario
    (None: the default job scenarios, as the program; []: the baseline alone)."""
    specs = _job_specs(scenarios)
    self._timeline(_fspath(path), specs, [int(r) for r in (on_ranks or [])], scenarios is not None and not specs)
    return path


def _job_report(self, path, scenarios=None, on_ranks=None):
    """Writes the job's HTML report of `daydream whatif RANK0 RANK1 ... --report PATH` (per
    rank: compute, transfer, wait, other; the scenarios, None: the default job scenarios),
    byte for byte."""
    self._report(_fspath(path), _job_specs(scenarios), [int(r) for r in (on_ranks or [])])
    return path


Job.ranks = _job_ranks
Job.whatif = _job_whatif
Job.timeline = _job_timeline
Job.report = _job_report


def _tasks(self):
    """One row per task: id, kind, name, layer, phase, iteration, resource, start (trace
    clock, ns), duration (ns), gap (idle ns after it on its resource), launched_by (the CPU
    call that launched it, -1 for none), bytes (a copy's or a collective's; a kernel's
    share of its operator's tensors, from recorded shapes) and flops (a kernel's share of
    its operator's FLOPs: GEMMs, convolutions, attention); 0 when unknown. Names are
    categorical."""
    return _task_table(_core._task_columns(self))


def _dependencies(self):
    """One row per dependency: src, dst (task ids), kind (cpu_order, stream_order, launch,
    sync, comm, data, control)."""
    c = _core._dependency_columns(self)
    return _table({"src": c["src"], "dst": c["dst"], "kind": _categorical(c["kind"], c["kind_categories"])})


def _replay(self, passes=None, overlap_slowdown=None):
    """Replays the trace's graph: the baseline, or after `passes` (a spec such as
    "amp+fused_adam", a Python pass, or a list of them) applied to a copy. Returns a Replay.
    A pass that fails raises (a Python pass: its own exception; the graph is unchanged)."""
    return _core._replay(self, _scenario_arg(passes) if passes is not None else None, overlap_slowdown)


def _whatif(self, scenarios=None, dlc=None):
    """Predicts each scenario (a spec "amp+fused_adam", "ddp:workers=16,bandwidth=25Gbps", a
    Python pass, or a list making one chain) and returns one row per scenario with the
    numbers and explanations of `daydream whatif --json`. None: every applicable bundled
    pass (the passes left out, and why, in .attrs["not_applicable"]). dlc=DIR: as `daydream
    whatif --dlc DIR`, the SketchDLC files of each parameter-server scenario (p3, tictac,
    tensor_partition) in DIR/<scenario>/ (.attrs["dlc"]: {scenario: [files]})."""
    res = _core._whatif(self, _scenarios_arg(scenarios), "" if dlc is None else _fspath(dlc))
    rows = res["scenarios"]
    keys = ["name", "passes", "applied", "reason", "predicted_us", "speedup", "iteration_speedup",
            "per_iteration_us", "workers", "steps_per_s", "samples_per_s", "vs_one_gpu", "scaling_efficiency",
            "bound", "backlog", "peak_memory_bytes", "error", "reports"]
    cols = {k: [r[k] for r in rows] for k in keys}
    attrs = {"not_applicable": res["not_applicable"], "warnings": res["warnings"], "baseline_us": res["baseline_us"]}
    if "dlc" in res:
        attrs["dlc"] = res["dlc"]
    if _pd is None:
        cols = {k: _np.asarray(v, dtype=object) for k, v in cols.items()}
        cols["attrs"] = attrs
        return cols
    return _table(cols, attrs)


def _sweep(self, passes=None, vary=None):
    """A grid: every chain of `passes` (spec strings; None: the applicable bundled passes that
    take a varied key) at every combination of `vary` ({"workers": [8, 64], "bandwidth":
    ["10Gbps", "100Gbps"]}); one row per point, as `daydream whatif --vary ... --json`'s
    results (each axis a column params.KEY, as in its --csv). Predicted without holding the GIL."""
    if not vary:
        raise ValueError("daydream: sweep needs vary={key: [values, ...]}")
    chains = None if passes is None else ([passes] if isinstance(passes, str) else list(passes))
    res = _core._sweep(self, chains, dict(vary))
    rows = res["rows"]
    keys = ["scenario", *res["axes"], "spec", "predicted_us", "iteration_speedup", "speedup", "workers",
            "steps_per_s", "samples_per_s", "peak_memory_bytes", "applied", "bound", "note", "error"]
    cols = {k: [r[k] for r in rows] for k in keys}
    if _pd is None:
        return {k: _np.asarray(v, dtype=object) for k, v in cols.items()}
    return _table(cols, {"points": res["points"], "evaluated": res["evaluated"]})


def _timeline(self, path, scenarios=None):
    """Writes the baseline (and each scenario's replay) as Chrome-trace JSON: open it in
    Perfetto (ui.perfetto.dev) or chrome://tracing."""
    _core._timeline(self, _fspath(path), _scenarios_arg(scenarios))
    return path


def _report(self, path, scenarios=None):
    """Writes the self-contained HTML report of `daydream whatif --report` for `scenarios`
    (None: every applicable bundled pass)."""
    _core._report(self, _fspath(path), _scenarios_arg(scenarios))
    return path


Trace.tasks = _tasks
Trace.dependencies = _dependencies
Trace.replay = _replay
Trace.whatif = _whatif
Trace.sweep = _sweep
Trace.timeline = _timeline
Trace.report = _report


def _sensitivity(self, factor=2.0, by="layer", top=None):
    """What is worth optimizing: for every layer (by="layer"), kernel family ("class") or
    kernel ("kernel": the `top` longest, 30 by default) the step predicted if it alone ran
    `factor` times faster, one replay per row, most saved first; the numbers of `daydream
    sensitivity --json` (rows: key, tasks, gpu_us, gpu_share, predicted_us, saved_us;
    .attrs: baseline_us, factor, by, iterations, gpu_us, groups). Runs without the GIL."""
    res = _core._sensitivity(self, float(factor), str(by), top)
    attrs = {k: res[k] for k in ("baseline_us", "factor", "by", "iterations", "gpu_us", "groups")}
    cols = dict(res["rows"])
    if _pd is None:
        cols["attrs"] = attrs
        return cols
    return _table(cols, attrs)


Trace.sensitivity = _sensitivity


# ---- Replay: tables ----------------------------------------------------------------------


def _critical_path(self, iteration=None):
    """The critical path of an iteration (default: the median one) by kind of layer and
    phase, largest first, then the path's CPU time between traced operators and its idle
    time: `share` (percent of the iteration) adds up to 100."""
    return _table(self._critical_columns(iteration))


def _busy(self, iteration=None):
    """Busy time of each resource in an iteration (default: the median one), busiest first;
    `share` is percent of the iteration."""
    return _table(self._busy_columns(iteration))


def _replay_tasks(self):
    """The replayed graph's tasks (as Trace.tasks) with replay_start and replay_end (ns)."""
    return _task_table(self._task_columns(), extra=("replay_start", "replay_end"))


Replay.critical_path = _critical_path
Replay.busy = _busy
Replay.tasks = _replay_tasks


# ---- module functions --------------------------------------------------------------------


def compare(before, after, passes=None, layers=30):
    """A prediction next to a measured run, as `daydream compare BEFORE AFTER --pass P
    --json`: `before` and `after` are paths or Traces (read again as recorded); `passes` a
    spec ("amp", "amp+fused_adam"; None: the two traces side by side). Returns a dict with
    the step times, `error`, `explanations`, and `rows` (a table: key, kind, before_us,
    predicted_us, measured_us, delta_us)."""
    def path_of(x):
        return x.path if isinstance(x, Trace) else _fspath(x)
    res = _core._compare(path_of(before), path_of(after), passes or "", int(layers))
    res["rows"] = _table(res["rows"])
    return res


def _workers_list(workers):
    """[1, 2, 4] from "1-4,8", a range or a list."""
    if isinstance(workers, int):
        return [workers]
    if isinstance(workers, str):
        out = []
        for part in workers.split(","):
            a, _, b = part.partition("-")
            try:
                out.extend(range(int(a), int(b or a) + 1))
            except ValueError:
                raise ValueError(f"daydream.ps: workers: '{part}' is not a number or a range of workers") from None
        return out
    return [int(w) for w in workers]


def ps(trace, workers="1-16", servers=1, bandwidth="10Gbps", window="28MB", flow_control=True, order="trace",
       sharing="max_min", model_bytes=None, compute_scale=1.0, steps=1000, warmup=50, seed=1, stagger=False,
       timeline=None, dlc=None, timeline_steps=5):
    """Asynchronous parameter-server training for each number of workers, as `daydream ps
    TRACE --workers ... --json` (docs/async_ps.md): `trace` is a path or a Trace (read again
    as recorded). Returns a dict: `throughput` (a table: workers, steps_per_s, mean_step_us,
    uplink_util, downlink_util, queueing_steps_per_s, cynthia_steps_per_s),
    `saturation_workers`, `free_network_step_us`, `model_bytes`, `notes`, ... timeline=PATH
    and dlc=DIR write the largest worker count's first `timeline_steps` steps as a Chrome
    trace (Perfetto) and as SketchDLC files, as --timeline and --dlc. Simulated without
    holding the GIL."""
    path = trace.path if isinstance(trace, Trace) else _fspath(trace)
    res = _core._ps(path, _workers_list(workers), int(servers), str(bandwidth), str(window), bool(flow_control),
                    str(order), str(sharing), "" if model_bytes is None else str(model_bytes), float(compute_scale),
                    int(steps), int(warmup), int(seed), bool(stagger), "" if timeline is None else _fspath(timeline),
                    "" if dlc is None else _fspath(dlc), int(timeline_steps))
    res["throughput"] = _table(res["throughput"])
    return res


def optimize(trace, workers=None, *, algorithm="ring", model_bytes=None, strategies=None, time_budget="30s",
             memory_budget=None, iteration=None, **cluster):
    """The best data-parallel plan (gradient buckets, partitions, op fusion) for one trace on a
    cluster, as `daydream optimize TRACE --json` (docs/optimize.md). `trace` is a path or a
    Trace (read again as recorded), or a job: a Job, a directory or a list of every rank's
    trace (`daydream optimize RANK0 RANK1 ...`): its slowest rank (by measured step) is
    optimized and its plan applies to every rank, workers defaulting to the job's world
    size (`trace`, `rank`, `world_size`, `notes` say which); the cluster is given as the distributed passes' keys:
    workers=, machines=, workers_per_machine=, bandwidth=, latency=, nvlink=, pcie=, ps=.
    strategies: tensor_fusion, tensor_partition, op_fusion (default: all). Returns a dict:
    baseline_us, trace_baseline_us, best (predicted_us, strategy, from, bucket_bytes, ...),
    baselines and log (tables), evaluated, rounds, budget_hit, cluster. Searched without
    holding the GIL."""
    if isinstance(trace, Trace):
        paths = [trace.path]
    elif isinstance(trace, Job):
        paths = list(trace.files)
    elif isinstance(trace, (str, bytes, _os.PathLike)):
        paths = [_fspath(trace)]
    else:
        paths = [_fspath(p) for p in trace]
    keys = {k: str(v) for k, v in cluster.items() if v is not None}
    if workers is not None:
        keys["workers"] = str(workers)
    res = _core._optimize(paths, keys, str(algorithm), "" if model_bytes is None else str(model_bytes),
                          list(strategies or []), str(time_budget), "" if memory_budget is None else str(memory_budget),
                          -1 if iteration is None else int(iteration))
    res["baselines"] = _table(res["baselines"])
    res["log"] = _table(res["log"])
    return res


def strategy(trace, cluster=None, strategies=None, *, grid=False, devices=None, zero=None, recompute=None,
             schedule=None, batch=None, global_batch=None, model_bytes=None, iteration=None, overlap=None,
             optimizer_bytes=None, show_tree=False, timeline=None):
    """Data x tensor x pipeline parallel strategies of the traced model on a cluster, as
    `daydream strategy TRACE --cluster C --strategy S ... --json` (docs/strategy.md):
    `cluster` a preset or NODESxDEVICES ("dgx-a100:nodes=4", "2x8"), `strategies` specs
    ("dp=8,tp=2,pp=2,micro=8") or strategy tree files (a path ending in .json, or an
    existing file: named ROOT_SPEC+tree(FILE NAME)), grid=True for every dp x tp x pp x
    micro of the devices. Returns a dict: `strategies` (a table, fastest first: strategy,
    predicted_us, samples_per_s, peak_memory_bytes, oom, comm_*_bytes, devices, bound),
    `best`, `single_gpu_us`, `cluster`, `notes`, and the model's strategy `tree` (a table of
    its nodes, depth first, as --show-tree shows it: with the last tree file's settings and
    each layer's resolved plan, plan_*). show_tree=True: only the tree (`cluster` optional),
    as `daydream strategy TRACE --show-tree [--strategy TREE.json]`. timeline=PATH writes
    the Chrome trace (Perfetto) of each given strategy's replay and of the best, as
    `--timeline PATH` does (the same file, byte for byte); `timeline` in the result names it."""
    path = trace.path if isinstance(trace, Trace) else _fspath(trace)
    specs = [strategies] if isinstance(strategies, (str, _os.PathLike)) else list(strategies or [])
    kw = dict(cluster="" if cluster is None else str(cluster), strategies=[_fspath(s) for s in specs], grid=bool(grid),
              devices=devices, zero=zero, recompute=recompute, schedule=schedule,
              batch=None if batch is None else float(batch),
              global_batch=None if global_batch is None else float(global_batch),
              model_bytes=None if model_bytes is None else str(model_bytes), iteration=iteration,
              overlap=None if overlap is None else float(overlap),
              optimizer_bytes=None if optimizer_bytes is None else float(optimizer_bytes), show_tree=bool(show_tree),
              timeline=None if timeline is None else _fspath(timeline))
    res = _core._strategy(path, kw)
    if "strategies" in res:
        res["strategies"] = _table(res["strategies"])
    res["tree"] = _tree_table(res["tree"])
    return res


def _tree_table(c):
    """The strategy tree's columns as a table: with pandas, the columns that are unset on some
    nodes (None) as nullable integers and booleans."""
    if _pd is None:
        return {k: _np.asarray(v, dtype=object) if k not in ("node", "name", "path", "parent", "depth", "layer")
                else _np.asarray(v) for k, v in c.items()}
    df = _table(c)
    for k in ("param_bytes", "stage", "plan_stage"):
        df[k] = df[k].astype("Int64")
    for k in ("splits", "recompute", "plan_split", "plan_fwd_all_reduce", "plan_fwd_all_gather", "plan_bwd_all_reduce",
              "plan_bwd_all_gather", "plan_recompute"):
        df[k] = df[k].astype("boolean")
    return df


def _paths(files):
    """A list of paths from one path, a directory (its files, sorted) or a sequence of paths."""
    if isinstance(files, (str, bytes, _os.PathLike)):
        f = _fspath(files)
        if _os.path.isdir(f):
            return sorted(_os.path.join(f, n) for n in _os.listdir(f) if _os.path.isfile(_os.path.join(f, n)))
        return [f]
    return [_fspath(p) for p in files]


def _records(rows):
    """A list of JSON objects as a table (one column per key of the first)."""
    keys = list(rows[0]) if rows else []
    return _table({k: [r.get(k) for r in rows] for k in keys})


def dlc_analyze(files, report=None):
    """Analyses a SketchDLC job (one file per worker and server: paths, or a directory), as
    `daydream dlc analyze FILES --json` (docs/dlc.md): the numbers of its JSON, with
    `nodes`, `iterations` (phases 1-3 and the overlap ratio per rank and iteration),
    `message_sizes` and `volume` as tables; report=PATH also writes its HTML page. Read
    without holding the GIL."""
    import json
    res = json.loads(_core._dlc_analyze(_paths(files), "" if report is None else _fspath(report)))
    for k in ("nodes", "iterations", "message_sizes", "volume"):
        if k in res:
            res[k] = _records(res[k])
    return res


def dlc_replay(files, *, bandwidth_scale=1.0, bandwidth=None, ps_bandwidth=None, recorded_bandwidth=None,
               workers=None, servers=None, out=None, report=None):
    """Replays a SketchDLC job as a task graph, as recorded and under a what-if (another
    bandwidth, `bandwidth_scale`, `workers` or `servers`), as `daydream dlc replay FILES
    ... --json`: records, tasks, transfers, replay_deviations, recorded and what_if
    (makespan_us, iteration_us, phase3_us, overlap_ratio), per-byte transfer times; out=DIR
    writes the what-if's DLC files (`written`), report=PATH its HTML analysis."""
    import json
    kw = dict(bandwidth_scale=float(bandwidth_scale), bandwidth=None if bandwidth is None else str(bandwidth),
              ps_bandwidth=None if ps_bandwidth is None else str(ps_bandwidth),
              recorded_bandwidth=None if recorded_bandwidth is None else str(recorded_bandwidth),
              workers=None if workers is None else int(workers), servers=None if servers is None else int(servers),
              out=None if out is None else _fspath(out), report=None if report is None else _fspath(report))
    if (workers is not None and int(workers) <= 0) or (servers is not None and int(servers) <= 0):
        raise ValueError("daydream.dlc_replay: workers and servers must be positive")
    return json.loads(_core._dlc_replay(_paths(files), kw))


def dlc_export(trace, passes, out):
    """Writes the SketchDLC files (one per worker and server) of a parameter-server what-if of
    a Kineto trace (`passes`: "p3:workers=4,ps=2", tictac, tensor_partition) into `out`, as
    `daydream dlc export TRACE --pass SPEC --out DIR --json`: trace, pass, workers, servers,
    messages, files. `trace` is a path or a Trace (read again as recorded)."""
    import json
    path = trace.path if isinstance(trace, Trace) else _fspath(trace)
    return json.loads(_core._dlc_export(path, str(passes), _fspath(out)))


def passes():
    """The bundled passes: name, help line, default scenario parameters."""
    return _table({k: [p[k] for p in _core._passes()] for k in ("name", "help", "scenario_params",
                                                                 "default_scenario")})
