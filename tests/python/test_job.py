"""A distributed job: dd.load of a directory (or several files) equals `daydream whatif DIR --json`."""

import pytest


def test_job_equals_the_program(dd, cli):
    from conftest import SOURCE

    folder = SOURCE / "tests" / "data" / "param_dlrm_8rank_v100"
    assert folder.is_dir(), folder
    js = cli("whatif", folder, "--json")
    j = dd.load(folder)
    assert isinstance(j, dd.Job)
    assert j.files == js["traces"]
    assert j.iterations == js["iterations"] and j.iteration == js["iteration"]
    assert j.baseline_us == js["baseline_us"] and j.measured_us == js["measured_us"]
    assert j.warnings == js["warnings"]
    ranks = j.ranks()
    want = js["job"]["ranks"]
    assert list(ranks["rank"]) == [r["rank"] for r in want]
    for k in ("baseline_us", "clock_offset_us", "compute_us", "transfer_us", "wait_us", "other_us"):
        mine = "predicted_us" if k == "baseline_us" else k
        assert list(ranks[mine]) == [r[k] for r in want], k
    assert j.straggler["rank"] == js["job"]["straggler"]["rank"]
    assert j.straggler["reason"] == js["job"]["straggler"]["reason"]
    assert j.alignment["method"] == js["job"]["alignment"]["method"]
    w = j.whatif()
    assert list(w["name"]) == [s["name"] for s in js["scenarios"]]
    assert list(w["predicted_us"]) == [s["predicted_us"] for s in js["scenarios"]]
    assert list(w["speedup"]) == [s["speedup"] for s in js["scenarios"]]
    for row, s in zip(w["ranks"], js["scenarios"]):
        assert list(row["predicted_us"]) == [r["predicted_us"] for r in s["ranks"]]
    files = sorted(folder.glob("*.json.gz"))
    assert dd.load(*files).baseline_us == j.baseline_us


def test_job_errors(dd, resnet, tmp_path):
    with pytest.raises(FileNotFoundError):
        dd.load(resnet, tmp_path / "missing.json.gz")
    with pytest.raises(ValueError):
        dd.load(tmp_path)  # a directory without traces
    with pytest.raises(ValueError, match="for a job"):
        dd.load(resnet, comm="fine")
