"""Shared fixtures of the Python module's tests: the bundled traces, and the `daydream`
program whose results the module must equal (DAYDREAM_CLI, set by CTest)."""

import json
import os
import pathlib
import subprocess

import pytest

SOURCE = pathlib.Path(os.environ.get("DAYDREAM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
RESNET = SOURCE / "examples" / "traces" / "resnet50_v100.json.gz"
DLRM = SOURCE / "examples" / "traces" / "dlrm_v100_rank0.json.gz"
SMALL = SOURCE / "tests" / "data" / "hta_small_train_gp100" / "step_based_trace_2543932.json.gz"
FP32 = SOURCE / "tests" / "data" / "ground_truth" / "h200" / "mlp_fp32.json.gz"
AMP = SOURCE / "tests" / "data" / "ground_truth" / "h200" / "mlp_amp_fp16.json.gz"


def _need(path):
    assert path.is_file(), f"test input missing: {path}"
    return path


@pytest.fixture(scope="session")
def resnet():
    return _need(RESNET)


@pytest.fixture(scope="session")
def dlrm():
    return _need(DLRM)


@pytest.fixture(scope="session")
def small():
    return _need(SMALL)


@pytest.fixture(scope="session")
def pair():
    return _need(FP32), _need(AMP)


@pytest.fixture(scope="session")
def cli():
    """Runs `daydream ARGS...` and returns its stdout (JSON parsed when --json is given)."""
    program = os.environ.get("DAYDREAM_CLI")
    assert program and os.path.isfile(program), "set DAYDREAM_CLI to the daydream program (CTest does)"

    # Under the sanitizers the interpreter runs with the ASan runtime preloaded; the program
    # carries its own, so it runs without the preload.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}

    def run(*args):
        out = subprocess.run([program, *map(str, args)], check=True, capture_output=True, text=True, env=env).stdout
        return json.loads(out) if "--json" in args else out

    return run


@pytest.fixture(scope="session")
def dd():
    import daydream

    return daydream


@pytest.fixture(scope="session")
def resnet_trace(dd, resnet):
    return dd.load(str(resnet))
