"""dd.ps equals `daydream ps --json` on the bundled trace."""

import pytest


def test_ps_equals_the_program(dd, resnet, cli):
    js = cli("ps", resnet, "--workers", "1,2,4", "--model-bytes", "100MB", "--steps", "300", "--warmup", "30", "--json")
    res = dd.ps(resnet, workers="1,2,4", model_bytes="100MB", steps=300, warmup=30)
    tp = res["throughput"]
    assert list(tp["workers"]) == [p["workers"] for p in js["throughput"]]
    assert list(tp["steps_per_s"]) == [p["steps_per_s"] for p in js["throughput"]]
    assert list(tp["mean_step_us"]) == [p["mean_step_us"] for p in js["throughput"]]
    assert list(tp["uplink_util"]) == [p["uplink_util"] for p in js["throughput"]]
    assert list(tp["queueing_steps_per_s"]) == [p["steps_per_s"] for p in js["baselines"]["queueing"]]
    assert list(tp["cynthia_steps_per_s"]) == [p["steps_per_s"] for p in js["baselines"]["cynthia"]]
    for k in ("saturation_workers", "model_bytes", "tensors", "gradient_source", "iterations", "compute_us",
              "update_us", "trace_step_us", "free_network_step_us", "server_bytes", "notes"):
        assert res[k] == js[k], k


def test_ps_errors(dd, resnet, tmp_path):
    with pytest.raises(ValueError, match="no gradients"):
        dd.ps(resnet, workers=[1, 2], steps=100, warmup=10)
    with pytest.raises(ValueError):
        dd.ps(resnet, workers="0-2", model_bytes="100MB")
    with pytest.raises(ValueError):
        dd.ps(resnet, workers="x", model_bytes="100MB")
    with pytest.raises(FileNotFoundError):
        dd.ps(tmp_path / "none.json", model_bytes="100MB")


def test_ps_timeline_and_dlc_equal_the_program(dd, resnet, cli, tmp_path):
    cli("ps", resnet, "--workers", "1,3", "--servers", "2", "--model-bytes", "100MB", "--steps", "200", "--warmup",
        "20", "--timeline", tmp_path / "cli.json", "--dlc", tmp_path / "cli", "--timeline-steps", "3", "--json")
    dd.ps(resnet, workers="1,3", servers=2, model_bytes="100MB", steps=200, warmup=20, timeline=tmp_path / "py.json",
          dlc=tmp_path / "py", timeline_steps=3)
    assert (tmp_path / "py.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    mine = {p.name: p.read_bytes() for p in (tmp_path / "py").iterdir()}
    theirs = {p.name: p.read_bytes() for p in (tmp_path / "cli").iterdir()}
    assert mine == theirs and len(mine) == 3 + 2  # a file per worker and server
