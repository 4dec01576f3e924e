"""t.sensitivity gives the rows of `daydream sensitivity --json`."""

import pytest


@pytest.mark.parametrize("by", ["class", "kernel"])
def test_sensitivity_equals_the_program(resnet_trace, resnet, cli, by):
    js = cli("sensitivity", resnet, "--by", by, "--json")
    df = resnet_trace.sensitivity(by=by)
    assert df.attrs["baseline_us"] == js["baseline_us"]
    assert df.attrs["by"] == js["by"]
    assert df.attrs["groups"] == js["groups"]
    assert df.attrs["iterations"] == js["iterations"]
    assert list(df["key"]) == [r["key"] for r in js["rows"]]
    for k in ("tasks", "gpu_us", "gpu_share", "predicted_us", "saved_us"):
        assert list(df[k]) == [r[k] for r in js["rows"]], k
    # Most saved first, and no group saves more than the step.
    saved = list(df["saved_us"])
    assert saved == sorted(saved, reverse=True)
    assert all(s <= df.attrs["baseline_us"] for s in saved)


def test_sensitivity_refuses_bad_arguments(resnet_trace):
    with pytest.raises(ValueError, match="factor"):
        resnet_trace.sensitivity(factor=0)
    with pytest.raises(ValueError, match="grouping"):
        resnet_trace.sensitivity(by="module")
