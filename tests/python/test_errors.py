"""Errors become Python exceptions with the library's message, never a crash."""

import gzip

import pytest


def test_missing_file_is_file_not_found(dd, tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        dd.load(tmp_path / "nope.json.gz")
    with pytest.raises(FileNotFoundError):
        dd.compare(tmp_path / "a.json", tmp_path / "b.json")


@pytest.mark.parametrize("content", [b"", b"{not json", b'{"traceEvents": 3}', b'{"traceEvents": [{"ph": 1}]}'])
def test_bad_traces_are_value_errors(dd, tmp_path, content):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(ValueError):
        dd.load(p)


def test_corrupt_gzip_is_a_value_error(dd, tmp_path, small):
    data = small.read_bytes()
    p = tmp_path / "cut.json.gz"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError):
        dd.load(p)
    q = tmp_path / "empty.json.gz"
    q.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    with pytest.raises(ValueError, match="empty"):
        dd.load(q)


def test_usage_errors_are_value_errors(dd, resnet_trace, small):
    with pytest.raises(ValueError, match="unknown pass 'nosuch'"):
        resnet_trace.whatif("nosuch")
    with pytest.raises(ValueError, match="no parameter named: nokey"):
        resnet_trace.whatif("amp:nokey=3")
    with pytest.raises(ValueError):
        resnet_trace.replay("ddp:workers=-1")
    with pytest.raises(ValueError, match="no pass of the sweep takes"):
        resnet_trace.sweep(["amp"], vary={"workers": [2, 4]})
    with pytest.raises(ValueError):
        resnet_trace.sweep(["ddp"], vary={"workers": []})
    with pytest.raises(ValueError, match="no iteration 999"):
        dd.load(small, iteration=999)
    with pytest.raises(ValueError, match="scenario"):
        resnet_trace.whatif([3])
