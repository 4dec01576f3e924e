#!/usr/bin/env python3
"""Tests of record.py's CPU side (stdlib unittest; no torch, no GPU):

    python3 -m unittest discover -s examples/ground_truth -p 'test_*.py' -v

The arguments (--list, --only, --dry-run), the matrix, the GPU slug, the manifest, the
time budget and the trimming of a synthetic Kineto trace by tests/data/trim_trace.py.
"""
import gzip
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import types
import unittest
from contextlib import redirect_stdout
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import record  # noqa: E402  (after the path)

SCRIPT = HERE / "record.py"
ENV = {"gpu": "NVIDIA H100 80GB HBM3", "pytorch": "2.11.0", "cuda": "12.8",
       "recorded": "2026-11-27T06:00:00Z"}
PAIR_KEYS = {"name", "before", "after", "pass", "differs", "gpu", "framework", "origin",
             "license", "measured_without_profiler_ms"}
RUN_KEYS = {"name", "trace", "measured_without_profiler_ms", "settings", "skipped"}


def run_script(*args):
    """record.py run as a command: (exit code, stdout, stderr)."""
    p = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


class Arguments(unittest.TestCase):
    def test_list_prints_every_run_and_pair(self):
        out = ""
        for n in record.SETS:
            code, text, err = run_script("--list", "--set", str(n))
            self.assertEqual(code, 0, err)
            out += text
        for r in record.RUNS:
            self.assertIn(r.name, out)
        for p in record.PAIRS:
            self.assertIn(p.name, out)
            self.assertIn(p.pass_spec or "(plain diff)", out)
        code, _, err = run_script("--list", "--set", "9")
        self.assertEqual(code, 2)
        self.assertIn("no set 9", err)

    def test_list_and_dry_run_do_not_import_torch(self):
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import record, io, contextlib, tempfile\n"
                "with contextlib.redirect_stdout(io.StringIO()):\n"
                "    record.main(['--list'])\n"
                "    record.main(['--dry-run', '--out', tempfile.mkdtemp()])\n"
                "print('torch' in sys.modules)")
        p = subprocess.run([sys.executable, "-c", code, str(HERE)], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "False")

    def test_only_unknown_name_exits_2_naming_it(self):
        code, out, err = run_script("--only", "resnet50_amp_fp16,no_such_pair", "--list")
        self.assertEqual(code, 2)
        self.assertIn("--only: unknown name(s): no_such_pair", err)
        self.assertIn("resnet50_amp_fp16", err)  # the known names are listed
        self.assertEqual(out, "")

    def test_only_selects_pairs_and_runs_in_recording_order(self):
        names = [r.name for r in record.select("gpt2_recompute,mlp_fp32")]
        self.assertEqual(names, ["mlp_fp32", "gpt2_bf16", "gpt2_checkpointing"])
        # A name that is both a pair and a run (the pair's after) selects the pair.
        names = [r.name for r in record.select("resnet50_amp_fp16")]
        self.assertEqual(names, ["resnet50_fp32", "resnet50_amp_fp16"])
        self.assertEqual(record.select(None), record.set_runs(1))
        # The sets together are the whole matrix, each run recorded by one set.
        runs = [r.name for n in record.SETS for r in record.set_runs(n)]
        self.assertEqual(sorted(runs), sorted(r.name for r in record.RUNS))
        # A later set reuses an earlier set's run (gpt2_amp_bf16: gpt2_fp32 -> gpt2_bf16).
        self.assertNotIn("gpt2_bf16", [r.name for r in record.select(None, 2)])
        self.assertIn("vit_fp32", [r.name for r in record.select(None, 2)])
        with self.assertRaises(ValueError):
            record.select(None, 9)
        with self.assertRaises(ValueError):
            record.select(",")

    def test_only_with_list_shows_the_subset(self):
        code, out, err = run_script("--list", "--only", "mlp_amp_fp16")
        self.assertEqual(code, 0, err)
        self.assertIn("mlp_fp32", out)
        self.assertNotIn("resnet50_fp32", out)

    def test_bad_numbers_exit_2(self):
        for args in (["--active", "1"], ["--steps", "0"]):
            code, _, err = run_script("--list", *args)
            self.assertEqual(code, 2, args)
            self.assertIn("error", err)

    def test_dry_run_writes_the_skeleton(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, out, err = run_script("--dry-run", "--out", tmp, "--only", "mlp_amp_fp16")
            self.assertEqual(code, 0, err)
            m = json.loads((Path(tmp) / "pairs.json").read_text())
            self.assertEqual(set(m), {"gpu", "pytorch", "cuda", "recorded", "kit", "runs", "pairs"})
            self.assertEqual([r["name"] for r in m["runs"]], [r.name for r in record.RUNS])
            self.assertEqual(len(m["pairs"]), len(record.PAIRS))
            by_name = {r["name"]: r for r in m["runs"]}
            self.assertIn("dry run", by_name["mlp_fp32"]["skipped"])
            self.assertIn("not selected", by_name["resnet50_fp32"]["skipped"])
            for p in m["pairs"]:
                self.assertNotIn("after", p)
                self.assertTrue(p["skipped"])
            # Nothing but the manifest: no traces, no GPU folder.
            self.assertEqual(sorted(os.listdir(tmp)), ["pairs.json"])


class Matrix(unittest.TestCase):
    def test_names_unique(self):
        runs = [r.name for r in record.RUNS]
        pairs = [p.name for p in record.PAIRS]
        self.assertEqual(len(runs), len(set(runs)))
        self.assertEqual(len(pairs), len(set(pairs)))
        for name in runs + pairs:
            self.assertRegex(name, r"^[a-z0-9_]+$")  # a file name and a --only word

    def test_pairs_refer_to_runs_of_the_matrix(self):
        for p in record.PAIRS:
            self.assertIn(p.before, record.RUN_BY_NAME, p.name)
            self.assertIn(p.after, record.RUN_BY_NAME, p.name)
            self.assertNotEqual(p.before, p.after)
            self.assertTrue(p.differs)

    def test_every_run_is_in_a_pair(self):
        used = {n for p in record.PAIRS for n in (p.before, p.after)}
        self.assertEqual(used, set(record.RUN_BY_NAME))

    def test_baselines_are_reused(self):
        befores = [p.before for p in record.PAIRS]
        self.assertGreaterEqual(befores.count("resnet50_fp32"), 4)
        self.assertGreaterEqual(befores.count("gpt2_bf16"), 4)

    def test_pass_specs(self):
        allowed = {"amp:dtype=fp16", "amp:dtype=bf16", "fused_adam", "dataloader:workers=4",
                   "recompute", "grad_accum:k=2", "compile", "compile:scope=phase", "cuda_graphs",
                   "cuda_graphs:scope=model", "compile+cuda_graphs:scope=model", ""}
        for p in record.PAIRS:
            self.assertIn(p.pass_spec, allowed, p.name)
            if p.pass_spec == "":
                self.assertIn("plain diff", p.differs, p.name)

    def test_recording_order(self):
        order = record.recording_order()
        self.assertEqual(sorted(r.name for r in order), sorted(r.name for r in record.RUNS))
        names = [r.name for r in order]
        first = record.PAIRS[0]
        self.assertEqual(names[:2], [first.before, first.after])
        # The runs of own processes (torch.compile, the slowest) come last in their set.
        first = record.set_runs(1)
        isolated = [i for i, r in enumerate(first) if r.isolate]
        self.assertTrue(isolated)
        self.assertEqual(isolated, list(range(len(first) - len(isolated), len(first))))
        # Every pair's runs are recorded no later than the pairs after it need theirs.
        position = {n: i for i, n in enumerate(names)}
        for n in record.SETS:  # within a set (a later set can reuse an earlier set's runs)
            last = [max(position[p.before], position[p.after]) for p in record.PAIRS if p.set == n]
            self.assertEqual(last, sorted(last), n)

    def test_estimate_fits_the_default_budget(self):
        for n in record.SETS:  # each set is one command under the default budget
            total = sum(r.est_s for r in record.set_runs(n)) + record.STARTUP_S
            self.assertLessEqual(total, record.DEFAULT_BUDGET_S - record.TAIL_RESERVE_S, n)
        self.assertLess(record.DEFAULT_BUDGET_S, 8 * 60)

    def test_settings_are_json_and_described(self):
        for r in record.RUNS:
            json.dumps(r.settings)
            self.assertIn(r.settings["model"], record.MODELS)
            self.assertTrue(record.describe(r.settings))

    def test_each_pair_changes_its_runs_settings(self):
        for p in record.PAIRS:
            a, b = record.RUN_BY_NAME[p.before].settings, record.RUN_BY_NAME[p.after].settings
            self.assertNotEqual(a, b, p.name)
            self.assertEqual(a["model"], b["model"], p.name)


class GpuSlug(unittest.TestCase):
    def test_examples(self):
        cases = {"NVIDIA H100 80GB HBM3": "h100-80gb-hbm3",
                 "NVIDIA H200": "h200",
                 "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb",
                 "NVIDIA H100 PCIe": "h100-pcie",
                 "  NVIDIA  GeForce RTX 4090 ": "geforce-rtx-4090",
                 "Tesla V100-SXM2-32GB": "tesla-v100-sxm2-32gb",
                 "AMD Instinct MI300X": "amd-instinct-mi300x",
                 "NVIDIA": "nvidia",
                 "": "unknown-gpu"}
        for name, slug in cases.items():
            self.assertEqual(record.gpu_slug(name), slug, name)


def fake_results():
    """A recording with a good pair, a failed after, a before out of budget and a trace
    whose trim never ended."""
    R = record.RunResult
    return {
        "resnet50_fp32": R("resnet50_fp32", trace="resnet50_fp32.json.gz", measured_ms=100.1,
                           settings={"model": "resnet50", "batch": 64}),
        "resnet50_amp_fp16": R("resnet50_amp_fp16", trace="resnet50_amp_fp16.json.gz", measured_ms=60.2),
        "resnet50_fused_adam": R("resnet50_fused_adam", skipped="failed: RuntimeError: boom"),
        "gpt2_bf16": R("gpt2_bf16", skipped="out of time budget: 400 s of --budget-s 420 used"),
        "gpt2_checkpointing": R("gpt2_checkpointing", trace="gpt2_checkpointing.json.gz", measured_ms=50.0),
        "mlp_fp32": R("mlp_fp32", measured_ms=1.5, raw="/tmp/mlp_fp32.json"),
    }


class Manifest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.folder = Path(self.tmp.name) / "h100-80gb-hbm3"
        self.folder.mkdir()
        for r in fake_results().values():
            if r.trace:
                (self.folder / r.trace).write_bytes(gzip.compress(b"{}"))
        record.write_manifest(self.folder / "pairs.json", record.build_manifest(ENV, fake_results()))
        self.m = json.loads((self.folder / "pairs.json").read_text(encoding="utf-8"))

    def tearDown(self):
        self.tmp.cleanup()

    def pair(self, name):
        return next(p for p in self.m["pairs"] if p["name"] == name)

    def run_(self, name):
        return next(r for r in self.m["runs"] if r["name"] == name)

    def test_top_level(self):
        self.assertEqual(set(self.m), {"gpu", "pytorch", "cuda", "recorded", "kit", "runs", "pairs"})
        self.assertEqual(self.m["gpu"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(self.m["pytorch"], "2.11.0")
        self.assertEqual(self.m["cuda"], "12.8")
        self.assertEqual(self.m["recorded"], "2026-11-27T06:00:00Z")
        self.assertEqual(self.m["kit"], "examples/ground_truth/record.py")
        self.assertTrue((record.REPO / self.m["kit"]).is_file())
        self.assertEqual(len(self.m["runs"]), len(record.RUNS))
        self.assertEqual(len(self.m["pairs"]), len(record.PAIRS))
        self.assertFalse(list(self.folder.glob("*.tmp")))  # the atomic write's temporary

    def test_runs(self):
        for r in self.m["runs"]:
            self.assertEqual(set(r), RUN_KEYS)
        good = self.run_("resnet50_fp32")
        self.assertEqual(good["trace"], "resnet50_fp32.json.gz")
        self.assertEqual(good["measured_without_profiler_ms"], 100.1)
        self.assertEqual(good["settings"], {"model": "resnet50", "batch": 64})
        self.assertIsNone(good["skipped"])
        failed = self.run_("resnet50_fused_adam")
        self.assertIsNone(failed["trace"])
        self.assertEqual(failed["skipped"], "failed: RuntimeError: boom")
        self.assertEqual(failed["settings"], record.RUN_BY_NAME["resnet50_fused_adam"].settings)
        self.assertIn("not trimmed", self.run_("mlp_fp32")["skipped"])
        self.assertEqual(self.run_("gpt2_fp32")["skipped"], "not recorded")

    def test_good_pair(self):
        p = self.pair("resnet50_amp_fp16")
        self.assertEqual(set(p), PAIR_KEYS)
        self.assertEqual(p["before"], "resnet50_fp32.json.gz")
        self.assertEqual(p["after"], "resnet50_amp_fp16.json.gz")
        self.assertEqual(p["pass"], "amp:dtype=fp16")
        self.assertEqual(p["gpu"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(p["framework"], "PyTorch 2.11.0")
        self.assertEqual(p["origin"], "recorded with examples/ground_truth/record.py")
        self.assertEqual(p["license"], "MIT (this project)")
        self.assertEqual(p["measured_without_profiler_ms"], {"before": 100.1, "after": 60.2})

    def test_paths_are_relative_to_the_manifest(self):
        for p in self.m["pairs"]:
            for key in ("before", "after"):
                if key in p:
                    self.assertFalse(Path(p[key]).is_absolute())
                    self.assertNotIn("/", p[key])
        for key in ("before", "after"):
            self.assertTrue((self.folder / self.pair("resnet50_amp_fp16")[key]).is_file())
        for r in self.m["runs"]:
            if r["trace"]:
                self.assertTrue((self.folder / r["trace"]).is_file(), r["name"])

    def test_skipped_pairs(self):
        p = self.pair("resnet50_fused_adam")  # the after failed
        self.assertEqual(set(p), PAIR_KEYS - {"after"} | {"skipped"})
        self.assertEqual(p["skipped"], "after run resnet50_fused_adam: failed: RuntimeError: boom")
        self.assertEqual(p["before"], "resnet50_fp32.json.gz")
        self.assertEqual(p["measured_without_profiler_ms"], {"before": 100.1})
        p = self.pair("gpt2_recompute")  # the before ran out of budget, the after is fine
        self.assertNotIn("after", p)
        self.assertTrue(p["skipped"].startswith("before run gpt2_bf16: out of time budget"))
        self.assertEqual(self.pair("resnet50_batch128")["skipped"], "after run resnet50_batch128: not recorded")
        self.assertIn("not trimmed", self.pair("mlp_amp_fp16")["skipped"])
        good = [p["name"] for p in self.m["pairs"] if "skipped" not in p]
        self.assertEqual(good, ["resnet50_amp_fp16"])

    def test_earlier_recordings_are_kept(self):
        previous = record.read_manifest(self.folder / "pairs.json")
        earlier = record.earlier_results(previous, self.folder, ENV)
        self.assertEqual(sorted(earlier), ["gpt2_checkpointing", "resnet50_amp_fp16", "resnet50_fp32"])
        self.assertEqual(earlier["resnet50_fp32"].measured_ms, 100.1)
        # Another GPU or PyTorch: nothing is kept.
        self.assertEqual(record.earlier_results(previous, self.folder, dict(ENV, gpu="NVIDIA H200")), {})
        self.assertEqual(record.earlier_results(previous, self.folder, dict(ENV, pytorch="2.12.0")), {})
        # A trace that is gone is not kept.
        (self.folder / "gpt2_checkpointing.json.gz").unlink()
        self.assertNotIn("gpt2_checkpointing", record.earlier_results(previous, self.folder, ENV))
        # This session: fp32 failed (the earlier one stays), amp recorded again (it wins),
        # gpt2_bf16 recorded for the first time.
        R = record.RunResult
        now = {"resnet50_fp32": R("resnet50_fp32", skipped="failed: x"),
               "resnet50_amp_fp16": R("resnet50_amp_fp16", trace="resnet50_amp_fp16.json.gz", measured_ms=58.0),
               "gpt2_bf16": R("gpt2_bf16", trace="gpt2_bf16.json.gz", measured_ms=40.0),
               "gpt2_fp32": R("gpt2_fp32", skipped="failed: y")}
        merged = record.merge_results(earlier, now)
        self.assertEqual(merged["resnet50_fp32"].measured_ms, 100.1)
        self.assertEqual(merged["resnet50_amp_fp16"].measured_ms, 58.0)
        self.assertEqual(merged["gpt2_bf16"].measured_ms, 40.0)
        self.assertEqual(merged["gpt2_fp32"].skipped, "failed: y")

    def test_missing_or_bad_manifest_reads_as_none(self):
        self.assertIsNone(record.read_manifest(self.folder / "nothing.json"))
        (self.folder / "bad.json").write_text("{")
        self.assertIsNone(record.read_manifest(self.folder / "bad.json"))


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def fake_matrix(estimates):
    return [record.Run(name, {"model": "mlp"}, est) for name, est in estimates]


def record_fake(runs, durations, budget_s, reserve_s=10.0, pairs=(), fail=()):
    """record_runs on a fake clock: each run takes durations[name] seconds; the runs in
    `fail` fail. Returns (results, seconds_left given to each executed run)."""
    clock = FakeClock()
    budget = record.Budget(budget_s, clock=clock, reserve_s=reserve_s)
    given = {}

    def execute(run, seconds_left):
        given[run.name] = seconds_left
        clock.t += durations[run.name]
        if run.name in fail:
            return record.RunResult(run.name, skipped="failed: boom")
        return record.RunResult(run.name, trace=record.trace_file(run.name), measured_ms=1.0)
    return record.record_runs(runs, execute, budget, pairs=list(pairs)), given


class BudgetLogic(unittest.TestCase):
    def skipped(self, results):
        return {n: r.skipped for n, r in results.items() if r.skipped}

    def test_runs_until_the_budget_then_skips(self):
        runs = fake_matrix([("a", 30), ("b", 30), ("c", 30), ("d", 5)])
        results, given = record_fake(runs, {"a": 30, "b": 30, "c": 30, "d": 5}, budget_s=100)
        self.assertEqual(list(given), ["a", "b", "c"])  # c: 60 s used, 30 s left, needs 30
        self.assertEqual(given, {"a": 90, "b": 60, "c": 30})  # what is left, for a child's timeout
        skipped = self.skipped(results)
        self.assertEqual(list(skipped), ["d"])
        self.assertIn("out of time budget", skipped["d"])
        self.assertIn("90 s of --budget-s 100", skipped["d"])
        self.assertEqual([r.name for r in results.values()], ["a", "b", "c", "d"])

    def test_a_big_run_is_skipped_and_smaller_ones_still_run(self):
        runs = fake_matrix([("a", 20), ("big", 100), ("small", 10)])
        results, given = record_fake(runs, {"a": 20, "big": 100, "small": 10}, budget_s=100)
        self.assertEqual(list(given), ["a", "small"])
        self.assertEqual(list(self.skipped(results)), ["big"])

    def test_slow_runs_scale_the_estimates(self):
        # a takes twice its estimate: later estimates are doubled (at most 2x).
        runs = fake_matrix([("a", 20), ("b", 20), ("c", 10), ("d", 5)])
        results, given = record_fake(runs, {"a": 40, "b": 40, "c": 10, "d": 5}, budget_s=100)
        # b: 40 s used, needs 40, 50 left -> runs; c: 80 used, needs 20, 10 left -> skipped;
        # d: needs 10, 10 left -> runs.
        self.assertEqual(list(given), ["a", "b", "d"])
        self.assertIn("needs ~20 s", self.skipped(results)["c"])

    def test_failed_runs_do_not_scale_the_estimates(self):
        runs = fake_matrix([("a", 10), ("b", 40)])
        results, given = record_fake(runs, {"a": 60, "b": 40}, budget_s=110, fail={"a"})
        self.assertEqual(list(given), ["a", "b"])  # 60 used, 40 left, b needs 40 (not 80)

    def test_durations_are_recorded(self):
        runs = fake_matrix([("a", 10)])
        results, _ = record_fake(runs, {"a": 7.5}, budget_s=100)
        self.assertEqual(results["a"].duration_s, 7.5)

    def test_runs_no_pair_can_use_are_skipped(self):
        P = record.Pair
        pairs = [P("p1", "x", "y", "", "d"), P("p2", "x", "z", "", "d"), P("p3", "w", "z", "", "d")]
        runs = fake_matrix([("x", 1), ("y", 1), ("w", 1), ("z", 1)])
        results, given = record_fake(runs, dict.fromkeys("xyzw", 1), budget_s=100, pairs=pairs,
                                     fail={"x"})
        self.assertEqual(list(given), ["x", "w", "z"])  # z is still the after of w
        self.assertIn("not needed", results["y"].skipped)
        self.assertIn("(x)", results["y"].skipped)
        # z unneeded too once w failed as well.
        results, given = record_fake(runs, dict.fromkeys("xyzw", 1), budget_s=100, pairs=pairs,
                                     fail={"x", "w"})
        self.assertEqual(list(given), ["x", "w"])
        self.assertIn("not needed", results["z"].skipped)

    def test_the_real_matrix_fits_when_runs_take_their_estimates(self):
        order = record.select(None)
        durations = {r.name: r.est_s for r in order}
        results, given = record_fake(order, durations,
                                     budget_s=record.DEFAULT_BUDGET_S - record.STARTUP_S,
                                     reserve_s=record.TAIL_RESERVE_S)
        self.assertEqual(self.skipped(results), {})

    def test_the_real_matrix_sheds_the_compiled_runs_first(self):
        order = record.select(None)
        durations = {r.name: r.est_s * 1.3 for r in order}
        results, _ = record_fake(order, durations,
                                 budget_s=record.DEFAULT_BUDGET_S - record.STARTUP_S,
                                 reserve_s=record.TAIL_RESERVE_S)
        skipped = self.skipped(results)
        self.assertTrue(skipped)
        self.assertTrue(all(record.RUN_BY_NAME[n].isolate for n in skipped), skipped)


def synthetic_trace(steps=5):
    """A small Kineto trace: `steps` ProfilerStep#N annotations, each with an operator, a
    launch (cudaLaunchKernel, correlation N) and its kernel on the GPU, which starts late
    and ends in the next step (as when the GPU lags the CPU), with their ac2g flow; a
    Python frame over the whole trace; metadata and device properties."""
    ev = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python3"}},
          {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
          {"ph": "X", "cat": "python_function", "name": "train.py(1): <module>", "pid": 1, "tid": 1,
           "ts": 900, "dur": 6000}]
    for i in range(1, steps + 1):
        t = 1000 * i
        ev += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                "ts": t, "dur": 1000},
               {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 100,
                "dur": 300, "args": {"External id": i}},
               {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                "ts": t + 150, "dur": 20, "args": {"correlation": i, "External id": i}},
               {"ph": "X", "cat": "kernel", "name": f"gemm_step{i}", "pid": 0, "tid": 7,
                "ts": t + 800.125, "dur": 500.25, "args": {"correlation": i, "External id": i,
                                                            "blocks per SM": 0.009259259}},
               {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": i, "pid": 1, "tid": 1, "ts": t + 150},
               {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": i, "pid": 0, "tid": 7, "ts": t + 800.125,
                "bp": "e"}]
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Fake GPU"}],
            "traceEvents": ev}


class Trimming(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.raw = self.dir / "run.json"
        self.raw.write_text(json.dumps(synthetic_trace()))

    def tearDown(self):
        self.tmp.cleanup()

    def read(self, path):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)

    def check_first_three_steps(self, doc):
        names = [e.get("name") for e in doc["traceEvents"]]
        steps = sorted(n for n in names if n.startswith("ProfilerStep#"))
        self.assertEqual(steps, ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"])
        kernels = sorted(e["name"] for e in doc["traceEvents"] if e.get("cat") == "kernel")
        # Step 3's kernel ends after step 4 began: it stays with its launch.
        self.assertEqual(kernels, ["gemm_step1", "gemm_step2", "gemm_step3"])
        launches = sorted(e["args"]["correlation"] for e in doc["traceEvents"]
                          if e.get("cat") == "cuda_runtime")
        self.assertEqual(launches, [1, 2, 3])
        self.assertEqual(sum(1 for e in doc["traceEvents"] if e.get("cat") == "cpu_op"), 3)
        self.assertEqual(sorted(e["id"] for e in doc["traceEvents"] if e.get("cat") == "ac2g"),
                         [1, 1, 2, 2, 3, 3])
        self.assertNotIn("train.py(1): <module>", names)  # spans the cut
        self.assertEqual(sum(1 for e in doc["traceEvents"] if e.get("ph") == "M"), 2)
        self.assertEqual(doc["deviceProperties"], [{"id": 0, "name": "Fake GPU"}])
        self.assertTrue(all(e.get("ts", 0) < 4000 for e in doc["traceEvents"]))

    def check_numbers_copied(self, path):
        """Numbers stay JSON numbers, with their digits (trim_trace.py's promise)."""
        with gzip.open(path, "rt", encoding="utf-8") as f:
            text = f.read()
        self.assertIn('"ts":3800.125,"dur":500.25,', text)
        self.assertIn('"blocks per SM":0.009259259', text)
        self.assertNotIn("raw:", text)

    def test_trim_keeps_the_first_steps(self):
        out = self.dir / "run.json.gz"
        report = record.trim_trace_file(self.raw, out, keep=3)
        self.assertIn("cut at start of ProfilerStep#4", report)
        self.assertEqual(out.read_bytes()[:2], b"\x1f\x8b")  # gzip
        self.assertFalse(Path(str(out) + ".part").exists())
        self.check_first_three_steps(self.read(out))
        self.check_numbers_copied(out)

    def test_trim_command_is_trim_trace(self):
        cmd = record.trim_command(Path("a.json"), Path("b.json.gz"), 3)
        self.assertEqual(Path(cmd[1]), record.REPO / "tests" / "data" / "trim_trace.py")
        self.assertTrue(Path(cmd[1]).is_file())
        self.assertEqual(cmd[2:], ["a.json", "b.json.gz", "--iterations", "3"])

    def test_trim_failure_says_why(self):
        short = self.dir / "short.json"
        short.write_text(json.dumps(synthetic_trace(steps=2)))
        with self.assertRaisesRegex(RuntimeError, "2 ProfilerSteps"):
            record.trim_trace_file(short, self.dir / "short.json.gz", keep=3)
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), ["run.json", "short.json"])

    def test_background_trims(self):
        short = self.dir / "short.json"
        short.write_text(json.dumps(synthetic_trace(steps=2)))
        trims = record.Trims(workers=1)
        trims.submit("a", self.raw, self.dir / "a.json.gz", 3)
        trims.submit("b", self.raw, self.dir / "b.json.gz", 3)
        trims.submit("c", short, self.dir / "c.json.gz", 3)
        ended = {name: (error, report) for name, error, report in trims.wait(poll_s=0.05)}
        self.assertFalse(trims.busy())
        self.assertEqual(sorted(ended), ["a", "b", "c"])
        for name in ("a", "b"):
            self.assertIsNone(ended[name][0])
            self.assertIn("kept", ended[name][1])
            self.check_first_three_steps(self.read(self.dir / f"{name}.json.gz"))
        self.assertIn("2 ProfilerSteps", ended["c"][0])
        self.assertFalse((self.dir / "c.json.gz").exists())
        self.assertFalse(list(self.dir.glob("*.part")))

    def test_a_trim_that_ends_during_submit_is_reported_once(self):
        # submit() polls: a trim it sees end must still reach the next poll(), once
        # (a recording whose trims all ended that way listed no trace at all).
        trims = record.Trims(workers=2)
        trims.submit("a", self.raw, self.dir / "a.json.gz", 3)
        for proc, _, _ in list(trims._running.values()):   # a ends; nobody has polled yet
            proc.wait(timeout=60)
        trims.submit("b", self.raw, self.dir / "b.json.gz", 3)   # sees a's end
        ended = [name for name, error, _ in trims.wait(poll_s=0.05) if error is None]
        self.assertEqual(sorted(ended), ["a", "b"])
        self.assertEqual(trims.poll(), [])


class FakeTorch:
    """What record_main asks of torch before recording, on a pretend H100."""
    __version__ = "2.11.0+cu128"
    version = types.SimpleNamespace(cuda="12.8")
    cuda = types.SimpleNamespace(is_available=lambda: True,
                                 get_device_name=lambda: "NVIDIA H100 80GB HBM3",
                                 synchronize=lambda: None)


class Recording(unittest.TestCase):
    """record_main from start to manifest, with torch and the GPU work faked: a run
    "records" by writing a synthetic trace of --active ProfilerSteps."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = Path(self.tmp.name) / "out"
        self.fail = {}       # run name -> the exception its recording raises
        self.raw_dirs = set()
        self.saved = {name: getattr(record, name) for name in ("_torch", "record_run", "run_isolated")}
        record._torch = lambda: FakeTorch
        record.record_run = self.fake_record_run
        # Isolated runs in this process too (the child's command is tested on its own).
        record.run_isolated = lambda run, left, raw_dir, args: record.record_run_safely(
            run, raw_dir, args.steps, args.active, args.stack)

    def tearDown(self):
        for name, value in self.saved.items():
            setattr(record, name, value)
        self.tmp.cleanup()

    def fake_record_run(self, run, raw_dir, steps, active, stack):
        self.raw_dirs.add(Path(raw_dir))
        if run.name in self.fail:
            raise self.fail[run.name]
        raw = Path(raw_dir) / f"{run.name}.json"
        raw.write_text(json.dumps(synthetic_trace(steps=active)))
        return record.RunResult(run.name, measured_ms=float(len(run.name)),
                                settings=dict(run.settings, timed_steps=steps), raw=str(raw))

    def record(self, *argv):
        args, selected = record.parse_args(["--out", str(self.out), *argv])
        with redirect_stdout(io.StringIO()) as log:
            code = record.record_main(args, selected)
        manifest = json.loads((self.out / "pairs.json").read_text())
        return code, manifest, log.getvalue()

    def test_records_trims_and_writes_the_manifest(self):
        self.fail["resnet50_fused_adam"] = RuntimeError("fused=True needs CUDA\nmore")
        old_int = signal.getsignal(signal.SIGINT)
        code, m, log = self.record("--only", "resnet50_amp_fp16,resnet50_fused_adam,gpt2_cuda_graphs")
        self.assertEqual(code, 0, log)
        self.assertIs(signal.getsignal(signal.SIGINT), old_int)  # handlers given back
        self.assertEqual((m["gpu"], m["pytorch"], m["cuda"]), ("NVIDIA H100 80GB HBM3", "2.11.0", "12.8"))
        pairs = {p["name"]: p for p in m["pairs"]}
        runs = {r["name"]: r for r in m["runs"]}
        good = pairs["resnet50_amp_fp16"]
        self.assertEqual(good["measured_without_profiler_ms"],
                         {"before": float(len("resnet50_fp32")), "after": float(len("resnet50_amp_fp16"))})
        self.assertNotIn("skipped", good)
        self.assertNotIn("skipped", pairs["gpt2_cuda_graphs"])  # both compiled runs
        self.assertEqual(pairs["resnet50_fused_adam"]["skipped"],
                         "after run resnet50_fused_adam: failed: RuntimeError: fused=True needs CUDA")
        self.assertIn("not selected (--only)", pairs["gpt2_compile"]["skipped"])  # gpt2_bf16
        self.assertEqual(runs["gpt2_bf16"]["skipped"], "not selected (--only)")
        self.assertEqual(runs["resnet50_fp32"]["settings"]["timed_steps"], record.DEFAULT_STEPS)
        # The traces: trimmed to active - 1 = 4 steps, gzip'd, next to the manifest.
        traces = sorted(p.name for p in self.out.iterdir())
        self.assertEqual(traces, ["gpt2_compile.json.gz", "gpt2_compile_cudagraphs.json.gz", "pairs.json",
                                  "resnet50_amp_fp16.json.gz", "resnet50_fp32.json.gz"])
        with gzip.open(self.out / "resnet50_fp32.json.gz", "rt") as f:
            steps = [e["name"] for e in json.load(f)["traceEvents"] if e.get("name", "").startswith("ProfilerStep")]
        self.assertEqual(len(steps), record.DEFAULT_ACTIVE - 1)
        # The untrimmed traces are gone.
        self.assertEqual(len(self.raw_dirs), 1)
        self.assertFalse(any(d.exists() for d in self.raw_dirs))
        self.assertIn("pairs recorded", log)

    def test_a_later_session_adds_to_the_earlier_recordings(self):
        self.record("--only", "resnet50_amp_fp16")
        code, m, _ = self.record("--only", "resnet50_batch128")
        self.assertEqual(code, 0)
        pairs = {p["name"]: p for p in m["pairs"]}
        self.assertNotIn("skipped", pairs["resnet50_amp_fp16"])  # kept from the first session
        self.assertNotIn("skipped", pairs["resnet50_batch128"])
        # --fresh forgets them (the files stay; the manifest no longer lists them).
        code, m, _ = self.record("--only", "resnet50_batch128", "--fresh")
        pairs = {p["name"]: p for p in m["pairs"]}
        self.assertIn("not selected", pairs["resnet50_amp_fp16"]["skipped"])
        self.assertNotIn("skipped", pairs["resnet50_batch128"])

    def test_a_failed_run_keeps_its_earlier_recording(self):
        self.record("--only", "mlp_amp_fp16")
        self.fail["mlp_amp_fp16"] = RuntimeError("boom")
        code, m, log = self.record("--only", "mlp_amp_fp16")
        self.assertIn("mlp_amp_fp16: skipped: failed: RuntimeError: boom", log)
        pairs = {p["name"]: p for p in m["pairs"]}
        self.assertNotIn("skipped", pairs["mlp_amp_fp16"])

    def test_out_of_budget(self):
        code, m, log = self.record("--only", "resnet50_amp_fp16,mlp_amp_fp16", "--budget-s", "33")
        self.assertEqual(code, 0)
        runs = {r["name"]: r for r in m["runs"]}
        # 33 s - 20 s reserve: resnet50_fp32 (~14 s) does not fit, so its after is not
        # needed; the MLP runs (~6 s each) fit.
        self.assertIn("out of time budget", runs["resnet50_fp32"]["skipped"])
        self.assertIn("not needed", runs["resnet50_amp_fp16"]["skipped"])
        self.assertIsNone(runs["mlp_fp32"]["skipped"])
        self.assertIsNone(runs["mlp_amp_fp16"]["skipped"])
        self.assertIn("resnet50_fp32: skipped: out of time budget", log)

    def test_interrupted(self):
        self.fail["resnet50_amp_fp16"] = record.Interrupted("SIGTERM")
        code, m, log = self.record("--only", "resnet50_amp_fp16,mlp_amp_fp16")
        self.assertEqual(code, 128 + signal.SIGTERM)
        runs = {r["name"]: r for r in m["runs"]}
        self.assertEqual(runs["resnet50_fp32"]["measured_without_profiler_ms"], float(len("resnet50_fp32")))
        self.assertIn("interrupted (SIGTERM)", runs["mlp_fp32"]["skipped"])
        self.assertIn("interrupted (SIGTERM)", runs["resnet50_amp_fp16"]["skipped"])
        self.assertFalse(list(self.out.glob("*.part")))


class IsolatedRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.args, _ = record.parse_args([])
        self.run_ = record.RUN_BY_NAME["gpt2_compile"]

    def tearDown(self):
        self.tmp.cleanup()

    def child(self, code):
        return [sys.executable, "-c", code, str(self.dir)]

    def test_reads_the_childs_result(self):
        code = ("import json, sys; json.dump({'name': 'gpt2_compile', 'measured_ms': 12.5, "
                "'raw': sys.argv[1] + '/gpt2_compile.json', 'settings': {'compile': 'default'}}, "
                "open(sys.argv[1] + '/gpt2_compile.result.json', 'w'))")
        r = record.run_isolated(self.run_, 30, self.dir, self.args, command=self.child(code))
        self.assertIsNone(r.skipped)
        self.assertEqual(r.measured_ms, 12.5)
        self.assertEqual(r.raw, str(self.dir / "gpt2_compile.json"))

    def test_a_child_without_result_is_a_failure(self):
        r = record.run_isolated(self.run_, 30, self.dir, self.args, command=self.child("raise SystemExit(3)"))
        self.assertEqual(r.skipped, "failed: its process exited with code 3 and no result")

    def test_a_child_past_the_budget_is_killed(self):
        r = record.run_isolated(self.run_, 1, self.dir, self.args,
                                command=self.child("import time; time.sleep(60)"))
        self.assertIn("out of time budget: stopped after 1 s", r.skipped)

    def test_the_default_child_is_this_script(self):
        code = ("import json, sys; json.dump({'name': 'gpt2_compile', 'skipped': 'x'}, "
                "open(sys.argv[1] + '/gpt2_compile.result.json', 'w'))")
        self.assertTrue(record.run_isolated(self.run_, 30, self.dir, self.args, command=self.child(code)).skipped)
        # --run-one NAME --raw-dir DIR is accepted (hidden) and checked.
        args, _ = record.parse_args(["--run-one", "gpt2_compile", "--raw-dir", str(self.dir)])
        self.assertEqual(args.run_one, "gpt2_compile")
        code, _, err = run_script("--run-one", "no_such_run", "--raw-dir", str(self.dir))
        self.assertEqual(code, 2)


if __name__ == "__main__":
    unittest.main()
