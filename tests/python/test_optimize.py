"""dd.optimize equals `daydream optimize --json` on the bundled trace."""

import pytest


def test_optimize_equals_the_program(dd, resnet, cli):
    js = cli("optimize", resnet, "--workers", "8", "--bandwidth", "10Gbps", "--model-bytes", "100MB",
             "--strategy", "tensor_fusion", "--time-budget", "600s", "--json")
    res = dd.optimize(resnet, workers=8, bandwidth="10Gbps", model_bytes="100MB", strategies=["tensor_fusion"],
                      time_budget="600s")
    assert not res["budget_hit"] and not js["search"]["budget_hit"]
    for k in ("baseline_us", "trace_baseline_us", "iteration", "workers", "cluster"):
        assert res[k] == js[k], k
    best = js["best"]
    for k in ("predicted_us", "strategy", "peak_memory_bytes", "from", "memory"):
        assert res["best"][k] == best[k], k
    assert res["best"]["bucket_bytes"] == [b["bytes"] for b in best["buckets"]]
    assert list(res["baselines"]["name"]) == [b["name"] for b in js["baselines"]]
    assert list(res["baselines"]["predicted_us"]) == [b["predicted_us"] for b in js["baselines"]]
    assert res["evaluated"] == js["search"]["evaluated"] and res["rounds"] == js["search"]["rounds"]
    assert list(res["log"]["what"]) == [d["what"] for d in js["search"]["log"]]


def test_optimize_errors(dd, resnet, small):
    with pytest.raises(ValueError, match="workers"):
        dd.optimize(small, model_bytes="10MB")
    with pytest.raises(ValueError, match="gradient sizes"):
        dd.optimize(resnet, workers=4)
    with pytest.raises(ValueError):
        dd.optimize(resnet, workers=4, model_bytes="100MB", strategies=["nosuch"])


def test_optimize_job_equals_the_program(dd, cli):
    """A job: its slowest rank is optimized, for the job's world size."""
    from conftest import SOURCE

    folder = SOURCE / "tests" / "data" / "param_dlrm_8rank_v100"
    assert folder.is_dir(), folder
    js = cli("optimize", folder, "--bandwidth", "10Gbps", "--strategy", "tensor_fusion", "--time-budget", "600s",
             "--json")
    for res in (dd.optimize(folder, bandwidth="10Gbps", strategies=["tensor_fusion"], time_budget="600s"),
                dd.optimize(dd.load(folder), bandwidth="10Gbps", strategies=["tensor_fusion"], time_budget="600s")):
        assert not res["budget_hit"]
        for k in ("baseline_us", "trace_baseline_us", "iteration", "workers", "cluster"):
            assert res[k] == js[k], k
        for k in ("predicted_us", "strategy", "from"):
            assert res["best"][k] == js["best"][k], k
        assert list(res["baselines"]["predicted_us"]) == [b["predicted_us"] for b in js["baselines"]]
        assert res["world_size"] == res["workers"] == js["workers"] > 1
        assert "the slowest" in res["trace"] and f"rank {res['rank']} " in res["trace"]
    text = cli("optimize", folder, "--bandwidth", "10Gbps", "--strategy", "tensor_fusion", "--time-budget", "600s")
    assert f"daydream optimize: {res['trace']}, iteration {res['iteration']}\n" in text
    assert all(f"note: {n}" in text for n in res["notes"]) and res["notes"]
