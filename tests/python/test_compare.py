"""dd.compare equals `daydream compare --json` on a bundled before/after pair."""


def test_compare_equals_the_program(dd, pair, cli):
    fp32, amp = pair
    js = cli("compare", fp32, amp, "--pass", "amp", "--json")
    js = js[0] if isinstance(js, list) else js
    c = dd.compare(fp32, amp, passes="amp")
    for k in ("predicted_us", "measured_us", "before_us", "error", "predicted_iterations", "measured_iterations",
              "explanations", "kernels", "operators", "counts", "peak_memory"):
        assert c[k] == js[k], k
    assert list(c["predicted_spread_us"]) == js["predicted_spread_us"]
    rows = c["rows"]
    assert list(rows["key"]) == [r["key"] for r in js["rows"]]
    assert list(rows["delta_us"]) == [r["delta_us"] for r in js["rows"]]
    plain = dd.compare(dd.load(fp32), amp)
    assert plain["error"] is None and plain["pass"] == ""
