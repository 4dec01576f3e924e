"""t.whatif and t.sweep give the numbers and explanations of `daydream whatif --json`."""

import math

def _none(x):
    """None for a missing value, as pandas holds it in a numeric column (NaN)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


FIELDS = ["name", "passes", "applied", "reason", "predicted_us", "speedup", "iteration_speedup",
          "per_iteration_us", "peak_memory_bytes"]


def _same(row, js):
    for k in FIELDS:
        assert _none(row[k]) == js.get(k), (row["name"], k, row[k], js.get(k))
    if js["predicted_us"] is not None:
        assert row["bound"] == js["bound"]
        assert row["backlog"] == js.get("backlog")
        tp = js["throughput"]
        assert row["workers"] == tp["workers"]
        for k in ("steps_per_s", "samples_per_s", "vs_one_gpu", "scaling_efficiency"):
            assert _none(row[k]) == tp[k], (row["name"], k)
    assert [dict(pass_=r["pass"], applied=r["applied"], reason=r["reason"], items=r["items"], notes=r["notes"])
            for r in row["reports"]] == [dict(pass_=r["pass"], applied=r["applied"], reason=r["reason"],
                                              items=r["items"], notes=r["notes"]) for r in js.get("reports", [])]


def test_default_scenarios_equal_the_program(resnet_trace, resnet, cli):
    js = cli("whatif", resnet, "--json")
    df = resnet_trace.whatif()
    assert list(df["name"]) == [s["name"] for s in js["scenarios"]]
    for (_, row), s in zip(df.iterrows(), js["scenarios"]):
        _same(row, s)
    assert df.attrs["not_applicable"] == js["not_applicable_reasons"]
    assert df.attrs["baseline_us"] == js["baseline_us"]
    assert df.attrs["warnings"] == js["warnings"]


def test_named_scenarios_equal_the_program(resnet_trace, resnet, cli):
    specs = ["amp+fused_adam", "ddp:workers=16,bandwidth=25Gbps", "speedup:kernels=gemm,factor=1.3"]
    js = cli("whatif", resnet, "--json", *[a for s in specs for a in ("--pass", s)])
    df = resnet_trace.whatif(specs)
    assert list(df["name"]) == specs
    for (_, row), s in zip(df.iterrows(), js["scenarios"]):
        _same(row, s)
    one = resnet_trace.whatif("amp+fused_adam")
    assert one["predicted_us"][0] == df["predicted_us"][0]
    assert one["speedup"][0] > 1


def test_a_chain_as_a_list_is_one_scenario(resnet_trace):
    df = resnet_trace.whatif([["amp", "fused_adam"]])
    same = resnet_trace.whatif("amp+fused_adam")
    assert list(df["name"]) == ["amp+fused_adam"]
    assert df["predicted_us"][0] == same["predicted_us"][0]


def test_sweep_equals_the_program(resnet_trace, resnet, cli):
    chains = ["ddp:model_bytes=100MB", "amp+ddp:model_bytes=100MB"]
    js = cli("whatif", resnet, "--json", "--pass", chains[0], "--pass", chains[1], "--vary", "workers=8,64",
             "--vary", "bandwidth=10Gbps,100Gbps")
    df = resnet_trace.sweep(chains, vary={"workers": [8, 64], "bandwidth": ["10Gbps", "100Gbps"]})
    assert len(df) == len(js["results"]) == 8
    assert df["applied"].all()
    assert df.attrs["evaluated"] == js["sweep"]["evaluated"]
    for (_, row), r in zip(df.iterrows(), js["results"]):
        assert row["scenario"] == r["scenario"] and row["spec"] == r["spec"]
        assert row["workers"] == r["workers"]
        assert {k: row["params." + k] for k in r["params"]} == r["params"]
        for k in ("predicted_us", "iteration_speedup", "speedup", "steps_per_s", "samples_per_s",
                  "peak_memory_bytes", "applied", "bound", "note", "error"):
            assert _none(row[k]) == r[k], k


def test_sweep_default_chains_equal_the_program(resnet_trace, resnet, cli):
    js = cli("whatif", resnet, "--json", "--vary", "compute=2,3")
    df = resnet_trace.sweep(vary={"compute": [2, 3]})
    assert len(df) == 2
    assert list(df["spec"]) == [r["spec"] for r in js["results"]]
    assert list(df["predicted_us"]) == [r["predicted_us"] for r in js["results"]]


def test_timeline_and_report(resnet_trace, resnet, cli, tmp_path):
    import json

    out = resnet_trace.timeline(tmp_path / "t.json", ["amp"])
    events = json.loads((tmp_path / "t.json").read_text())
    assert out == tmp_path / "t.json"
    text = (tmp_path / "t.json").read_text()
    assert '"baseline' in text and '"amp' in text and events
    resnet_trace.report(tmp_path / "mine.html", ["amp", "fused_adam"])
    cli("whatif", resnet, "--pass", "amp", "--pass", "fused_adam", "--report", tmp_path / "cli.html")
    assert (tmp_path / "mine.html").read_text() == (tmp_path / "cli.html").read_text()
