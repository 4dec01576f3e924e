"""dd.strategy equals `daydream strategy --json` on the bundled trace."""

import json

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


def test_timeline_equals_the_program(dd, resnet, cli, tmp_path):
    # The given strategies and the grid's best (not among them): the same file byte for byte.
    specs = ["dp=8", "dp=2,tp=4"]
    mine, theirs = tmp_path / "py.json", tmp_path / "cli.json"
    js = cli("strategy", resnet, "--cluster", "1x8", "--grid", *[a for s in specs for a in ("--strategy", s)],
             "--model-bytes", "100MB", "--timeline", theirs, "--json")
    res = dd.strategy(resnet, "1x8", specs, grid=True, model_bytes="100MB", timeline=mine)
    _check(res, js)
    assert res["timeline"] == str(mine)
    assert mine.read_bytes() == theirs.read_bytes()
    doc = json.loads(mine.read_text())
    names = {e["args"]["name"].split(":")[0] for e in doc["traceEvents"] if e.get("name") == "process_name"}
    assert {"dp=8,tp=1,pp=1,micro=1", "dp=2,tp=4,pp=1,micro=1"} <= names and res["best"] in names
    with pytest.raises(ValueError, match="cannot write timeline"):
        dd.strategy(resnet, "1x8", ["dp=8"], model_bytes="100MB", timeline=tmp_path / "no" / "such" / "dir.json")


def test_strategy_errors(dd, resnet):
    with pytest.raises(ValueError, match="gradient sizes"):
        dd.strategy(resnet, "2x8", ["dp=16"])
    with pytest.raises(ValueError):
        dd.strategy(resnet, "2x8", ["dp=banana"], model_bytes="100MB")
    with pytest.raises(ValueError):
        dd.strategy(resnet, "nosuchcluster", ["dp=2"], model_bytes="100MB")
    with pytest.raises(ValueError, match="grid"):
        dd.strategy(resnet, "2x8", model_bytes="100MB")


BERT = "tests/data/tracelens_h100_inference/gaunernst_bert-small-uncased__1016001.json.gz"
RESNET_CKPT = "tests/data/tracelens_mi300_ddp_8rank/resnet_act_checkpoint.json.gz"
MEGATRON = "examples/strategy/megatron_tree.json"
CKPT_TREE = "examples/strategy/resnet_checkpoint_tree.json"


def _inputs(*paths):
    from conftest import SOURCE

    out = [SOURCE / p for p in paths]
    for p in out:
        assert p.is_file(), f"test input missing: {p}"
    return out


def _flatten(node, out):
    """The --show-tree JSON's nodes depth first, as the tree table lists them."""
    out.append(node)
    for c in node["children"]:
        _flatten(c, out)
    return out


def _values(column):
    """A column as a list, pandas' missing values as None."""
    import pandas as pd

    return [None if pd.isna(v) else v for v in column]


def _check_tree(tree, js):
    nodes = _flatten(js["tree"], [])
    assert list(tree["name"]) == [n["name"] for n in nodes]
    assert list(tree["path"]) == [n["path"] for n in nodes]
    assert list(tree["layer"]) == [n.get("layer", -1) for n in nodes]
    assert _values(tree["splits"]) == [n.get("splits") for n in nodes]
    keys = ("partition", "split", "fwd_all_reduce", "fwd_all_gather", "bwd_all_reduce", "bwd_all_gather", "recompute",
            "stage")
    for k in keys:
        assert _values(tree["plan_" + k]) == [n["plan"][k] if "plan" in n else None for n in nodes], k
    for k in ("iteration", "layers", "modules", "nodes"):
        assert js[k] is not None


def test_tree_file_equals_the_program(dd, cli):
    trace, tree = _inputs(RESNET_CKPT, CKPT_TREE)
    specs = [tree, "dp=4,pp=2,micro=8"]
    js = cli("strategy", trace, "--cluster", "dgx1-v100", "--batch", "32", *[a for s in specs for a in ("--strategy", s)],
             "--json")
    res = dd.strategy(trace, "dgx1-v100", specs, batch=32)
    _check(res, js)
    assert "dp=4,tp=1,pp=2,micro=8+tree(resnet_checkpoint_tree.json)" in list(res["strategies"]["strategy"])
    # The result's tree is --show-tree's with the file: each layer's resolved plan.
    shown = cli("strategy", trace, "--show-tree", "--strategy", tree, "--json")
    _check_tree(res["tree"], shown)
    for k in ("iteration", "layers", "modules", "nodes"):
        assert res[k] == shown[k], k
    assert res["tree"]["plan_recompute"].any() and res["tree"]["recompute"].notna().any()


def test_show_tree_equals_the_program(dd, cli):
    bert, megatron = _inputs(BERT, MEGATRON)
    js = cli("strategy", bert, "--show-tree", "--json")
    res = dd.strategy(bert, show_tree=True)
    assert "strategies" not in res
    _check_tree(res["tree"], js)
    for k in ("iteration", "layers", "modules", "nodes"):
        assert res[k] == js[k], k
    assert res["nodes"] == len(res["tree"]) > res["layers"] > 0
    tree = res["tree"]
    assert (tree["depth"] > 0).sum() == len(tree) - 1 and tree["plan_partition"].isna().all()
    # With a tree file: its settings and each layer's plan (Megatron's column and row splits).
    js = cli("strategy", bert, "--show-tree", "--strategy", megatron, "--json")
    res = dd.strategy(bert, strategies=megatron, show_tree=True)
    _check_tree(res["tree"], js)
    assert {"column", "row", "through"} <= set(res["tree"]["plan_partition"].dropna())
    assert "column" in set(res["tree"]["partition"].dropna())


def test_tree_file_errors(dd, tmp_path):
    trace, = _inputs(BERT)
    with pytest.raises(FileNotFoundError):
        dd.strategy(trace, "dgx1-v100", [tmp_path / "none.json"], model_bytes="116MB")
    bad = tmp_path / "bad.json"
    bad.write_text('{"nodes": {"NoSuchModule_9": {"partition": "column"}}}')
    with pytest.raises(ValueError, match="NoSuchModule_9"):
        dd.strategy(trace, "dgx1-v100", [bad], model_bytes="116MB")
    bad.write_text('{"nodes": {"model": {"partition": "diagonal"}}}')
    with pytest.raises(ValueError, match="diagonal"):
        dd.strategy(trace, show_tree=True, strategies=[bad])


def test_tree_without_pandas_is_a_dict_of_arrays(dd, cli, monkeypatch):
    import numpy as np

    bert, megatron = _inputs(BERT, MEGATRON)
    with_pandas = dd.strategy(bert, strategies=megatron, show_tree=True)["tree"]
    monkeypatch.setattr(dd, "_pd", None)
    plain = dd.strategy(bert, strategies=megatron, show_tree=True)["tree"]
    assert isinstance(plain, dict) and isinstance(plain["layer"], np.ndarray)
    assert list(plain["name"]) == list(with_pandas["name"])
    assert list(plain["plan_stage"]) == _values(with_pandas["plan_stage"])
    assert list(plain["splits"]) == _values(with_pandas["splits"])
