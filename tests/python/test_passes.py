"""Passes written in Python: the same pass in C++ and in Python replays identically, and a
Python pass is a transaction like a C++ one."""

import numpy as np
import pytest


def gemm_backward_faster(g):
    """speedup:kernels=gemm,phase=backward,factor=1.3, written in Python."""
    ids = g.tasks(kind="gpu", phase="backward", name="gemm", ignore_case=True)
    g.scale_duration(ids, 1 / 1.3)


def _same_replay(a, b):
    sa, ea = a._start_end()
    sb, eb = b._start_end()
    assert len(sa) == len(sb)
    assert (sa == sb).all() and (ea == eb).all()
    assert a.predicted_us == b.predicted_us and a.per_iteration_us == b.per_iteration_us


def test_python_pass_replays_like_the_cpp_pass(resnet_trace):
    cpp = resnet_trace.replay("speedup:kernels=gemm,phase=backward,factor=1.3")
    py = resnet_trace.replay(gemm_backward_faster)
    _same_replay(cpp, py)
    assert py.predicted_us < resnet_trace.replay().predicted_us
    # and the tables agree task by task
    assert (cpp.tasks()["duration"].to_numpy() == py.tasks()["duration"].to_numpy()).all()


def test_python_pass_in_a_chain_and_in_whatif(resnet_trace):
    mixed = resnet_trace.replay(["amp", gemm_backward_faster])
    cpp = resnet_trace.replay("amp+speedup:kernels=gemm,phase=backward,factor=1.3")
    _same_replay(mixed, cpp)
    df = resnet_trace.whatif([gemm_backward_faster, "speedup:kernels=gemm,phase=backward,factor=1.3"])
    assert list(df["name"]) == ["gemm_backward_faster", "speedup:kernels=gemm,phase=backward,factor=1.3"]
    assert df["predicted_us"][0] == df["predicted_us"][1]
    assert df["speedup"][0] == df["speedup"][1]
    assert df["applied"][0]


def test_removing_cpu_work_matches_the_library_primitive(resnet_trace):
    # Removing every cudaEventRecord call: the GraphView's remove is daydream::remove.
    def drop_event_records(g):
        g.remove(g.tasks(kind="cpu_task", name="^cudaEventRecord"))

    def drop_twice(g):  # the same, selected one call at a time
        for t in g.tasks(kind="cpu_task", name="^cudaEventRecord"):
            g.remove(int(t))

    a, b = resnet_trace.replay(drop_event_records), resnet_trace.replay(drop_twice)
    _same_replay(a, b)
    assert len(a.tasks()) < resnet_trace.task_count


def test_a_failing_python_pass_leaves_the_graph_unchanged(resnet_trace):
    before = resnet_trace.tasks()["duration"].to_numpy().copy()

    class Boom(RuntimeError):
        pass

    def halfway(g):
        g.scale_duration(g.tasks(kind="gpu_kernel"), 0.5)
        raise Boom("stop here")

    with pytest.raises(Boom, match="stop here"):
        resnet_trace.replay(halfway)
    assert (resnet_trace.tasks()["duration"].to_numpy() == before).all()
    # In a what-if, the scenario is refused with the message, the others still run.
    df = resnet_trace.whatif([halfway, "amp"])
    assert not df["applied"][0] and "stop here" in df["error"][0]
    assert df["applied"][1]


def test_a_cycle_is_refused_and_named(resnet_trace):
    def cycle(g):
        ks = g.tasks(kind="gpu_kernel")
        first, later = int(ks[0]), int(ks[50])
        g.wait_for(first, later)  # first waits for a kernel after it on its stream

    with pytest.raises(ValueError, match="cycle"):
        resnet_trace.replay(cycle)


def test_a_pass_that_changes_nothing_says_so(resnet_trace):
    def nothing(g):
        g.scale_duration(g.tasks(name="no such kernel name"), 2.0)

    df = resnet_trace.whatif(nothing)
    assert not df["applied"][0] and df["reason"][0] == "the pass changed no task"


def test_view_primitives(resnet_trace):
    seen = {}

    def inspect(g):
        k = int(g.tasks(kind="gpu_kernel", phase="forward")[0])
        seen["kind"], seen["phase"] = g.kind(k), g.phase(k)
        seen["launcher"] = [g.kind(int(p)) for p in g.predecessors(k)]
        seen["n"] = len(g)
        copy = g.copy_task(k, after=k, name="extra_kernel", duration=1000)
        seen["copy"] = (g.name(copy), int(g.duration(copy)[0]), g.resource(copy) == g.resource(k))
        g.reschedule([copy], "first")
        g.set_gap(k, 0)
        g.note("inspected")
        seen["view"] = g

    r = resnet_trace.replay(inspect)
    assert seen["kind"] == "gpu_kernel" and seen["phase"] == "forward"
    assert "cpu_task" in seen["launcher"]
    assert seen["copy"] == ("extra_kernel", 1000, True)
    assert len(r.tasks()) == seen["n"] + 1
    assert r.reports[0]["notes"] == ["inspected"]
    with pytest.raises(ValueError, match="finished"):
        seen["view"].tasks()


def test_bad_selections_are_value_errors(resnet_trace):
    for bad in (lambda g: g.tasks(kind="kernel"), lambda g: g.tasks(phase="sideways"),
                lambda g: g.tasks(name="("), lambda g: g.scale_duration(10**9, 2.0),
                lambda g: g.scale_duration([0], -1.0)):
        with pytest.raises(ValueError):
            resnet_trace.replay(bad)
    assert isinstance(resnet_trace.replay(lambda g: None).predicted_us, float)
    assert np.isfinite(resnet_trace.replay().predicted_us)
