"""A distributed job: dd.load of a directory (or several files) equals `daydream whatif DIR --json`."""

import json

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


def _folder():
    from conftest import SOURCE

    folder = SOURCE / "tests" / "data" / "param_dlrm_8rank_v100"
    assert folder.is_dir(), folder
    return folder


def test_job_timeline_report_and_representative_equal_the_program(dd, cli, tmp_path):
    folder = _folder()
    js = cli("whatif", folder, "--json", "--representative", "--timeline", tmp_path / "cli.json", "--report",
             tmp_path / "cli.html")
    j = dd.load(folder)
    assert j.timeline(tmp_path / "py.json") == tmp_path / "py.json"
    j.report(tmp_path / "py.html")
    assert (tmp_path / "py.html").read_bytes() == (tmp_path / "cli.html").read_bytes()
    mine, theirs = json.loads((tmp_path / "py.json").read_text()), json.loads((tmp_path / "cli.json").read_text())
    assert mine == theirs and len(mine["traceEvents"]) > 0
    rep = js["job"]["representative"] if "representative" in js["job"] else js["representative"]
    assert j.representative == rep and rep["rank"] in list(j.ranks()["rank"])
    # Scenarios of one's own, on some ranks; the baseline alone.
    js = cli("whatif", folder, "--pass", "amp", "--on-rank", "3", "--report", tmp_path / "cli2.html", "--timeline",
             tmp_path / "cli2.json", "--json")
    j.report(tmp_path / "py2.html", ["amp"], on_ranks=[3])
    j.timeline(tmp_path / "py2.json", ["amp"], on_ranks=[3])
    assert (tmp_path / "py2.html").read_bytes() == (tmp_path / "cli2.html").read_bytes()
    assert json.loads((tmp_path / "py2.json").read_text()) == json.loads((tmp_path / "cli2.json").read_text())
    j.timeline(tmp_path / "base.json", [])
    base = json.loads((tmp_path / "base.json").read_text())
    assert 0 < len(base["traceEvents"]) < len(mine["traceEvents"])
    with pytest.raises(ValueError):
        j.report(tmp_path / "x.html", ["nosuchpass"])
    with pytest.raises(ValueError):
        j.report(tmp_path / "no" / "such" / "dir" / "x.html")
