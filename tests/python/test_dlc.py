"""dd.dlc_analyze, dd.dlc_replay, dd.dlc_export and t.whatif(dlc=DIR) equal `daydream dlc
analyze|replay|export --json` and `daydream whatif --dlc DIR` on the bundled DLC job and trace."""

import json

import pytest

from conftest import SOURCE

DLC_JOB = SOURCE / "tests" / "data" / "dlc" / "small"


def _job():
    files = sorted(DLC_JOB.glob("*.dlc"))
    assert len(files) == 3, f"test input missing: {DLC_JOB}"
    return files


def _rows(table):
    """A table as a list of dicts (a DataFrame or a dict of arrays)."""
    cols = {k: list(table[k]) for k in table.keys()}
    n = len(next(iter(cols.values()))) if cols else 0
    return [{k: v[i] for k, v in cols.items()} for i in range(n)]


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_analyze_equals_the_program(dd, cli, tmp_path):
    files = _job()
    js = cli("dlc", "analyze", *files, "--json", "--report", tmp_path / "cli.html")
    res = dd.dlc_analyze(files, report=tmp_path / "py.html")
    for k in ("nodes", "iterations", "message_sizes", "volume"):
        assert _rows(res[k]) == js[k], k
        res[k] = js[k]
    assert res == js
    assert (tmp_path / "py.html").read_bytes() == (tmp_path / "cli.html").read_bytes()
    assert len(js["iterations"]) > 0 and js["workers"] == 2 and js["servers"] == 1
    # A directory is its files.
    assert _rows(dd.dlc_analyze(DLC_JOB)["iterations"]) == js["iterations"]


def test_replay_equals_the_program(dd, cli, tmp_path):
    files = _job()
    js = cli("dlc", "replay", *files, "--bandwidth-scale", "2", "--out", tmp_path / "cli", "--json",
             "--report", tmp_path / "cli.html")
    res = dd.dlc_replay(files, bandwidth_scale=2, out=tmp_path / "py", report=tmp_path / "py.html")
    assert [p.replace("/py/", "/cli/") for p in res.pop("written")] == js.pop("written")
    assert res == js
    assert res["what_if"]["makespan_us"] < res["recorded"]["makespan_us"]
    assert _files(tmp_path / "py") == _files(tmp_path / "cli") != {}
    assert (tmp_path / "py.html").read_bytes() == (tmp_path / "cli.html").read_bytes()
    js = cli("dlc", "replay", *files, "--bandwidth", "1Gbps", "--workers", "4", "--json")
    assert dd.dlc_replay(files, bandwidth="1Gbps", workers=4) == js


def test_export_and_whatif_dlc_equal_the_program(dd, cli, resnet, tmp_path):
    spec = "p3:workers=4,ps=2,model_bytes=102MB"
    js = cli("dlc", "export", resnet, "--pass", spec, "--out", tmp_path / "cli", "--json")
    res = dd.dlc_export(resnet, spec, tmp_path / "py")
    assert [p.replace("/py/", "/cli/") for p in res.pop("files")] == js.pop("files")
    assert res == js and res["messages"] > 0 and res["workers"] == 4 and res["servers"] == 2
    assert _files(tmp_path / "py") == _files(tmp_path / "cli")

    cli("whatif", resnet, "--pass", spec, "--pass", "amp", "--dlc", tmp_path / "wcli")
    t = dd.load(resnet)
    w = t.whatif([spec, "amp"], dlc=tmp_path / "wpy")
    assert _files(tmp_path / "wpy") == _files(tmp_path / "wcli")
    assert list(w.attrs["dlc"]) == [spec]  # amp has no parameter-server push and pull
    assert all(f.startswith(str(tmp_path / "wpy")) for f in w.attrs["dlc"][spec])


def test_dlc_errors(dd, resnet, tmp_path):
    with pytest.raises(FileNotFoundError):
        dd.dlc_analyze([tmp_path / "none.dlc"])
    w0 = _job()[1]
    with pytest.raises(ValueError, match="both hold the records"):
        dd.dlc_analyze([w0, w0])
    with pytest.raises(ValueError, match="bandwidth"):
        dd.dlc_replay(_job(), bandwidth="fast")
    with pytest.raises(ValueError, match="push and pull"):
        dd.dlc_export(resnet, "amp", tmp_path / "out")
    with pytest.raises(ValueError):
        dd.dlc_export(resnet, "nosuchpass", tmp_path / "out")


def test_dlc_without_pandas(dd, monkeypatch):
    with_pandas = dd.dlc_analyze(_job())
    monkeypatch.setattr(dd, "_pd", None)
    plain = dd.dlc_analyze(_job())
    assert isinstance(plain["iterations"], dict)
    assert list(plain["iterations"]["phase3_us"]) == list(with_pandas["iterations"]["phase3_us"])
