"""t.replay(): iteration times, the critical path and busy time, against the program's output."""

import re

import pytest


def test_iteration_times_equal_the_program(resnet_trace, resnet, cli):
    js = cli("whatif", resnet, "--json", "--pass", "amp")
    r = resnet_trace.replay()
    assert r.predicted_us == js["baseline_us"]
    for it in js["iterations"]:
        n = it["iteration"]
        # the replayed span of the iteration; the program's baseline is its steady-state step
        assert r.iteration_time(n) <= it["baseline_us"] + 1e-9
    assert r.per_iteration_us == [it["baseline_us"] for it in js["iterations"]]
    amp = resnet_trace.replay("amp")
    assert amp.predicted_us == js["scenarios"][0]["predicted_us"]
    with pytest.raises(ValueError, match="no task of iteration"):
        r.iteration_time(123456)


def test_critical_path_equals_the_program(resnet_trace, resnet, cli):
    text = cli("whatif", resnet, "--pass", "amp", "--critical-path")
    cp = resnet_trace.replay().critical_path()
    assert abs(cp["share"].sum() - 100.0) < 1e-6
    printed = re.findall(r"^    (.+?) +(?:(forward|backward|weight_update|other) +(\d+) +)?([\d.]+) ms +([\d.]+)%$",
                         text, re.M)
    rows = [p for p in printed if p[0].strip() != "total" and "more layer/phase groups" not in p[0]]
    rows = [p for p in rows if p[1]] + [p for p in rows if not p[1] and p[0].startswith("(")]
    assert len(rows) >= 5
    named = cp[cp["phase"] != ""]
    assert len(named) > 15
    for (layer, phase, inst, ms, share), (_, row) in zip(rows[:15], named.head(15).iterrows()):
        assert layer.strip() == row["layer"] and phase == row["phase"] and int(inst) == row["instances"]
        assert ms == f"{row['time_us'] / 1e3:.3f}" and share == f"{row['share']:.1f}"
    for label in ("(CPU between traced operators)", "(idle between tasks)"):
        mine = cp[cp["layer"] == label]
        theirs = [p for p in rows if p[0].strip() == label]
        assert len(mine) == len(theirs)
        if theirs:
            assert theirs[0][3] == f"{mine['time_us'].iloc[0] / 1e3:.3f}"
    total = re.search(r"^    total\s+([\d.]+) ms", text, re.M).group(1)
    assert f"{cp['time_us'].sum() / 1e3:.3f}" == total


def test_busy_equals_the_program(resnet_trace, resnet, cli):
    text = cli("whatif", resnet, "--pass", "amp")
    line = re.search(r"busiest resources: (.*)$", text, re.M).group(1)
    busy = resnet_trace.replay().busy()
    expected = [f"{res} {share:.0f}%" for res, share in zip(busy["resource"][:4], busy["share"][:4])]
    assert line == ", ".join(expected)
    assert (busy["share"] <= 100.0).all() and (busy["busy_us"] > 0).all()


def test_replay_tasks_have_replayed_times(resnet_trace):
    df = resnet_trace.replay().tasks()
    assert (df["replay_end"] - df["replay_start"] >= 0).all()
    assert df["replay_start"].min() == 0


def test_overlap_slowdown_never_speeds_up(resnet_trace):
    r = resnet_trace.replay("ddp:workers=16,bandwidth=25Gbps")
    slow = resnet_trace.replay("ddp:workers=16,bandwidth=25Gbps", overlap_slowdown=1.5)
    assert slow.predicted_us >= r.predicted_us
