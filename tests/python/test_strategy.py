"""dd.strategy equals `daydream strategy --json` on the bundled trace."""

import pytest


def _check(res, js):
    s = res["strategies"]
    assert list(s["strategy"]) == [e["strategy"] for e in js["strategies"]]
    assert list(s["predicted_us"]) == [e["predicted_us"] for e in js["strategies"]]
    assert list(s["samples_per_s"]) == [e["samples_per_s"] for e in js["strategies"]]
    assert list(s["peak_memory_bytes"]) == [e["peak_memory_bytes"] for e in js["strategies"]]
    assert list(s["oom"]) == [e["oom"] for e in js["strategies"]]
    assert list(s["comm_dp_bytes"]) == [e["comm_bytes"]["dp"] for e in js["strategies"]]
    assert list(s["bound"]) == [e["bound"] for e in js["strategies"]]
    for k in ("best", "iteration", "cluster", "layers", "single_gpu_us", "notes"):
        assert res[k] == js[k], k


def test_strategies_equal_the_program(dd, resnet, cli):
    specs = ["dp=16", "dp=8,pp=2,micro=4", "dp=4,tp=4"]
    js = cli("strategy", resnet, "--cluster", "2x8", *[a for s in specs for a in ("--strategy", s)],
             "--model-bytes", "100MB", "--json")
    _check(dd.strategy(resnet, "2x8", specs, model_bytes="100MB"), js)


def test_grid_equals_the_program(dd, resnet, cli):
    js = cli("strategy", resnet, "--cluster", "1x8", "--grid", "--model-bytes", "100MB", "--batch", "32", "--json")
    _check(dd.strategy(resnet, "1x8", grid=True, model_bytes="100MB", batch=32), js)


def test_strategy_errors(dd, resnet):
    with pytest.raises(ValueError, match="gradient sizes"):
        dd.strategy(resnet, "2x8", ["dp=16"])
    with pytest.raises(ValueError):
        dd.strategy(resnet, "2x8", ["dp=banana"], model_bytes="100MB")
    with pytest.raises(ValueError):
        dd.strategy(resnet, "nosuchcluster", ["dp=2"], model_bytes="100MB")
    with pytest.raises(ValueError, match="grid"):
        dd.strategy(resnet, "2x8", model_bytes="100MB")
