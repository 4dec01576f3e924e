#!/usr/bin/env python3
"""Records real before/after training runs on one CUDA GPU: the ground truth that
daydream's predictions are checked against.

    python3 examples/ground_truth/record.py            # the whole matrix, within --budget-s
    python3 examples/ground_truth/record.py --list     # what it records (no torch needed)
    python3 examples/ground_truth/record.py --only resnet50_amp_fp16,mlp_amp_fp16

A pair is a baseline training loop ("before") and the same loop with one change
("after"): ResNet-50 with AMP, fused Adam, a larger batch, channels_last, DataLoader
workers; a GPT-2-small-sized transformer in bf16 with FP32, activation checkpointing,
gradient accumulation, torch.compile, CUDA graphs; a small CPU-bound MLP with AMP and
CUDA graphs. One run can be the "before" of several pairs; it is recorded once.

Each run: a few warm-up steps, then N steps timed WITHOUT the profiler (the median step
time: `measured_without_profiler_ms`), then a profiled window with the settings of
examples/collect_trace.py (schedule wait=1, warmup=2, active=5; record_shapes,
with_modules, profile_memory; with_stack where the pair needs layers), exported as
Kineto JSON and cut by tests/data/trim_trace.py to its first active-1 steps (gzip'd).
The output folder (default tests/data/ground_truth/<gpu>/) gets the traces and
`pairs.json`, the manifest that `daydream compare --manifest` and scripts/validation.sh
read (README.md beside this file gives its schema).

Time: the runs are recorded most valuable pair first; a run that would end past
--budget-s (default 420 s, the whole command included) is skipped and listed as skipped
with the reason, as is a run that fails (e.g. torch.compile unavailable). torch.compile
and CUDA-graph runs run in a child process, killed when the budget runs out.

Needs PyTorch with CUDA, torchvision, transformers and numpy; no network (models are
built from configurations, data is synthetic). Only --list and --dry-run work without
torch: this module imports torch inside the functions that run models.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import importlib.metadata
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
KIT = "examples/ground_truth/record.py"  # the manifest's "kit" and "origin"
TRIM_SCRIPT = REPO / "tests" / "data" / "trim_trace.py"
DEFAULT_OUT_ROOT = REPO / "tests" / "data" / "ground_truth"
MANIFEST = "pairs.json"
LICENSE = "MIT (this project)"

DEFAULT_BUDGET_S = 420.0  # the whole command, torch's import and the last trims included
TAIL_RESERVE_S = 20.0     # kept free at the end of the budget: the last trims, the manifest
STARTUP_S = 15.0          # importing torch, starting CUDA (counted in the budget, not estimated)
DEFAULT_STEPS = 20        # steps timed without the profiler
PROFILE_WAIT = 1          # torch.profiler.schedule(wait=1, warmup=2, active=--active)
PROFILE_WARMUP = 2
DEFAULT_ACTIVE = 5        # profiled steps; the trimmed trace keeps the first active - 1:
                          # 3 steady steps and the last kept one (which has no next to overlap)
TRIM_WORKERS = 2          # trim_trace.py processes at once (niced; the GPU runs meanwhile)


# ---------------------------------------------------------------------------------------
# The matrix: the runs (one training configuration each) and the pairs (before -> after).
# ---------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Run:
    """One training configuration to record: its settings and what it costs."""
    name: str
    settings: dict
    est_s: float               # wall time on an H100: build, warm-up, timing, profiling, export
    isolate: bool = False      # in its own process, killed when the budget runs out
    warmup: int = 5            # steps before timing (cuDNN heuristics, allocator, compilation)
    steps_factor: int = 1      # timed steps = --steps x this (short steps need more)


@dataclasses.dataclass(frozen=True)
class Pair:
    """A before/after pair: the daydream pass that predicts `after` from `before`."""
    name: str
    before: str
    after: str
    pass_spec: str             # "" where no daydream pass models the change (plain diff)
    differs: str
    set: int = 1               # the matrix it belongs to (--set): 1 fits one default budget


def variant(base: dict, **changes) -> dict:
    """A copy of the settings `base` with `changes` applied."""
    return {**base, **changes}


# ResNet-50 (torchvision, no weights), batch 64 of 3x224x224 made on the GPU each step.
# Adam(foreach=False) as examples/collect_trace.py records it: the per-parameter step the
# fused_adam pass replaces. "fp32" keeps PyTorch's defaults (cuDNN convolutions may use
# TF32; the run's settings record the flags).
RESNET50 = {"model": "resnet50", "batch": 64, "precision": "fp32", "optimizer": "adam",
            "foreach": False, "fused": False, "channels_last": False, "data": "gpu",
            "stack": False}
# The same, fed by a DataLoader over a synthetic dataset whose __getitem__ costs real CPU
# time: a seeded random image, 4 rounds of a 5-point blur and a normalization in numpy
# (a few ms per sample, a deterministic stand-in for decoding and augmentation).
RESNET50_LOADER = variant(RESNET50, data="dataloader", workers=0, decode_rounds=4,
                          pin_memory=False)
# GPT-2 small (transformers.GPT2Config(n_layer=12, n_embd=768, n_head=12)), built from
# its configuration, sequences of 512 random tokens, bf16 autocast, AdamW (PyTorch's
# default foreach). with_stack: the recompute pass needs the nn.Module events.
GPT2 = {"model": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "seq": 512,
        "batch": 8, "precision": "bf16", "optimizer": "adamw", "checkpointing": False,
        "accum": 1, "compile": None, "stack": True}
# A small MLP whose step is CPU-bound: 4 Linear(1024, 1024) layers, batch 32, SGD.
MLP = {"model": "mlp", "layers": 4, "width": 1024, "batch": 32, "precision": "fp32",
       "optimizer": "sgd", "momentum": 0.9, "cuda_graph": False, "stack": False}
# The same layers as two towers that read one input and run at once on two CUDA streams
# (the second tower on a side stream forked from and joined to the step's stream; autograd
# runs each tower's backward on its forward's stream); their outputs are added. Captured as
# a CUDA graph, the graph has two parallel branches.
MLP_BRANCHES = variant(MLP, model="mlp_branches", towers=2)
# ViT-B/16 (torchvision, no weights), batch 32 of random 3x224x224 images made on the GPU
# each step, AdamW (PyTorch's default foreach): a GEMM-bound transformer for the AMP pass.
VIT = {"model": "vit_b_16", "batch": 32, "precision": "fp32", "optimizer": "adamw",
       "stack": False}

RUNS = [
    Run("resnet50_fp32", RESNET50, 14),
    Run("resnet50_amp_fp16", variant(RESNET50, precision="fp16"), 12),
    Run("resnet50_amp_bf16", variant(RESNET50, precision="bf16"), 12),
    Run("resnet50_fused_adam", variant(RESNET50, fused=True, foreach=None), 12),
    Run("resnet50_batch128", variant(RESNET50, batch=128), 16),
    Run("resnet50_channels_last", variant(RESNET50, channels_last=True), 14),
    Run("resnet50_loader_workers0", RESNET50_LOADER, 22),
    Run("resnet50_loader_workers4", variant(RESNET50_LOADER, workers=4), 16),
    Run("gpt2_bf16", GPT2, 16),
    Run("gpt2_fp32", variant(GPT2, precision="fp32"), 18),
    Run("gpt2_checkpointing", variant(GPT2, checkpointing=True), 16),
    Run("gpt2_grad_accum2", variant(GPT2, accum=2), 18),
    Run("gpt2_compile", variant(GPT2, compile="default"), 100, isolate=True),
    Run("gpt2_compile_cudagraphs", variant(GPT2, compile="reduce-overhead"), 75, isolate=True),
    Run("mlp_fp32", MLP, 6, warmup=20, steps_factor=10),
    Run("mlp_amp_fp16", variant(MLP, precision="fp16"), 6, warmup=20, steps_factor=10),
    Run("mlp_cuda_graphs", variant(MLP, cuda_graph=True), 6, warmup=20, steps_factor=10),
    Run("gpt2_adamw_loop", variant(GPT2, foreach=False), 18),
    Run("gpt2_fused_adamw", variant(GPT2, fused=True), 16),
    Run("vit_fp32", VIT, 20),
    Run("vit_amp_bf16", variant(VIT, precision="bf16"), 14),
    Run("vit_amp_fp16", variant(VIT, precision="fp16"), 14),
    Run("mlp_branches_fp32", MLP_BRANCHES, 8, warmup=20, steps_factor=10),
    Run("mlp_branches_cuda_graphs", variant(MLP_BRANCHES, cuda_graph=True), 8, warmup=20,
        steps_factor=10),
]

# Most valuable first: the runs are recorded in the order the pairs name them, so when
# time runs out the pairs at the end go. First the changes a daydream pass models, then
# the plain diffs, then the compiled runs (the slowest to record).
PAIRS = [
    Pair("resnet50_amp_fp16", "resnet50_fp32", "resnet50_amp_fp16", "amp:dtype=fp16",
         "torch.autocast(float16) + GradScaler; same model, batch, optimizer, GPU"),
    Pair("resnet50_fused_adam", "resnet50_fp32", "resnet50_fused_adam", "fused_adam",
         "torch.optim.Adam(fused=True) instead of Adam(foreach=False); same model, batch, "
         "FP32, GPU"),
    Pair("mlp_amp_fp16", "mlp_fp32", "mlp_amp_fp16", "amp:dtype=fp16",
         "torch.autocast(float16) + GradScaler on a CPU-bound loop (4 Linear(1024, 1024), "
         "batch 32, SGD): autocast adds cast kernels, GradScaler a host sync per step; "
         "same GPU"),
    Pair("resnet50_dataloader_workers4", "resnet50_loader_workers0", "resnet50_loader_workers4",
         "dataloader:workers=4",
         "DataLoader(num_workers=4, persistent_workers=True) instead of num_workers=0, over a "
         "synthetic dataset with a few ms of numpy work per sample; FP32, batch 64, same GPU"),
    Pair("gpt2_recompute", "gpt2_bf16", "gpt2_checkpointing", "recompute",
         "model.gradient_checkpointing_enable() (non-reentrant torch.utils.checkpoint around "
         "every GPT2Block); same model, batch, bf16 autocast, GPU"),
    Pair("gpt2_grad_accum2", "gpt2_bf16", "gpt2_grad_accum2", "grad_accum:k=2",
         "2 micro-batches of 4 sequences, gradients accumulated, one optimizer step, instead "
         "of 1 batch of 8: the same samples per step; bf16 autocast, same GPU"),
    Pair("resnet50_amp_bf16", "resnet50_fp32", "resnet50_amp_bf16", "amp:dtype=bf16",
         "torch.autocast(bfloat16), no GradScaler; same model, batch, optimizer, GPU"),
    Pair("mlp_cuda_graphs", "mlp_fp32", "mlp_cuda_graphs", "cuda_graphs",
         "the whole training step (batch generation, forward, backward, SGD step) captured "
         "once with torch.cuda.graph and replayed; same model, batch, FP32, GPU"),
    Pair("resnet50_batch128", "resnet50_fp32", "resnet50_batch128", "",
         "batch 128 instead of 64 (times are per step, not per sample); no daydream pass "
         "models a batch-size change: a plain diff"),
    Pair("resnet50_channels_last", "resnet50_fp32", "resnet50_channels_last", "",
         "model and input in torch.channels_last (NHWC), FP32; no daydream pass models the "
         "memory format: a plain diff"),
    Pair("gpt2_fp32", "gpt2_bf16", "gpt2_fp32", "",
         "no autocast: FP32 (PyTorch's default float32 matmul precision) instead of bf16 "
         "autocast, the reverse AMP question; the amp pass does not model it: a plain diff"),
    Pair("gpt2_compile", "gpt2_bf16", "gpt2_compile", "compile",
         "torch.compile(model) (default mode, Inductor); the optimizer step stays eager; "
         "same batch, bf16 autocast, GPU"),
    Pair("gpt2_compile_across_layers", "gpt2_bf16", "gpt2_compile", "compile:scope=phase",
         "torch.compile(model) (default mode, Inductor); the optimizer step stays eager; "
         "same batch, bf16 autocast, GPU; predicted with the compile pass fusing across layer "
         "boundaries (scope=phase) instead of within one layer (the default)"),
    Pair("gpt2_cuda_graphs", "gpt2_compile", "gpt2_compile_cudagraphs", "cuda_graphs:scope=model",
         "torch.compile(model, mode=\"reduce-overhead\") instead of the default mode: the "
         "same Inductor kernels, launched as CUDA graphs (forward and backward; the "
         "optimizer step stays eager)"),
    Pair("gpt2_compile_cuda_graphs", "gpt2_bf16", "gpt2_compile_cudagraphs",
         "compile+cuda_graphs:scope=model",
         "torch.compile(model, mode=\"reduce-overhead\"): Inductor kernels launched as CUDA "
         "graphs, from the eager bf16 baseline; the optimizer step stays eager"),
    # The second set: the same passes on other models and the reverse of a plain diff.
    Pair("gpt2_amp_bf16", "gpt2_fp32", "gpt2_bf16", "amp:dtype=bf16",
         "torch.autocast(bfloat16) instead of FP32 (PyTorch's default float32 matmul "
         "precision: no TF32 for matrix products); same model, batch, AdamW, GPU", set=2),
    Pair("gpt2_fused_adamw", "gpt2_adamw_loop", "gpt2_fused_adamw", "fused_adam",
         "torch.optim.AdamW(fused=True) instead of AdamW(foreach=False); same model, batch, "
         "bf16 autocast, GPU", set=2),
    Pair("vit_amp_bf16", "vit_fp32", "vit_amp_bf16", "amp:dtype=bf16",
         "ViT-B/16: torch.autocast(bfloat16), no GradScaler, instead of FP32; same batch, "
         "AdamW, GPU", set=2),
    Pair("vit_amp_fp16", "vit_fp32", "vit_amp_fp16", "amp:dtype=fp16",
         "ViT-B/16: torch.autocast(float16) + GradScaler instead of FP32; same batch, AdamW, "
         "GPU", set=2),
    Pair("mlp_branches_cuda_graphs", "mlp_branches_fp32", "mlp_branches_cuda_graphs",
         "cuda_graphs",
         "two MLP towers on two CUDA streams: the whole step captured once with "
         "torch.cuda.graph (a graph with two parallel branches) and replayed; same model, "
         "batch, FP32, GPU", set=2),
]

RUN_BY_NAME = {r.name: r for r in RUNS}
PAIR_BY_NAME = {p.name: p for p in PAIRS}


def recording_order(pairs=PAIRS, runs=RUNS) -> list:
    """The runs in the order they are recorded: as the pairs (most valuable first) name
    them, each pair's before then its after, each run once; runs of no pair last."""
    order, seen = [], set()
    by_name = {r.name: r for r in runs}
    for pair in pairs:
        for name in (pair.before, pair.after):
            if name in by_name and name not in seen:
                seen.add(name)
                order.append(by_name[name])
    order += [r for r in runs if r.name not in seen]
    return order


def trace_file(run_name: str) -> str:
    """The trimmed trace of a run, relative to the manifest's folder."""
    return f"{run_name}.json.gz"


def describe(settings: dict) -> str:
    """A run's settings in a few words, for --list."""
    s = settings
    words = [s["model"], f"batch {s['batch']}", s["precision"]]
    if s["model"] == "gpt2":
        words.insert(2, f"seq {s['seq']}")
    if s.get("towers", 1) > 1:
        words.append(f"{s['towers']} towers on {s['towers']} streams")
    if s.get("accum", 1) > 1:
        words.append(f"{s['accum']} micro-batches")
    if s.get("checkpointing"):
        words.append("activation checkpointing")
    if s.get("compile"):
        words.append(f"torch.compile({s['compile']})")
    if s.get("cuda_graph"):
        words.append("CUDA graph")
    if s.get("channels_last"):
        words.append("channels_last")
    if s.get("data") == "dataloader":
        words.append(f"DataLoader workers={s['workers']}")
    opt = s["optimizer"]
    if s.get("fused"):
        opt += " fused"
    elif s.get("foreach") is False:
        opt += " foreach=False"
    words.append(opt)
    return ", ".join(words)


SETS = sorted({p.set for p in PAIRS})


def set_runs(number: int) -> list:
    """The runs the pairs of matrix `number` need, in recording order (a run that an
    earlier set also needs is recorded by that set, in one session, and is not repeated)."""
    earlier = {n for p in PAIRS if p.set < number for n in (p.before, p.after)}
    mine = {n for p in PAIRS if p.set == number for n in (p.before, p.after)} - earlier
    return [r for r in recording_order() if r.name in mine]


def select(names: Optional[str], set_number: int = 1) -> list:
    """The runs that `--only NAME[,NAME]` selects, in recording order: a pair's name
    selects its before and after, a run's name the run; without names, the runs of the
    matrix `set_number` (--set). Raises ValueError naming the unknown names."""
    order = recording_order()
    if not names:
        if set_number not in SETS:
            raise ValueError(f"no set {set_number} (sets: {', '.join(map(str, SETS))})")
        return set_runs(set_number)
    wanted, unknown = set(), []
    for name in (n.strip() for n in names.split(",")):
        if not name:
            continue
        if name in PAIR_BY_NAME:
            wanted |= {PAIR_BY_NAME[name].before, PAIR_BY_NAME[name].after}
        elif name in RUN_BY_NAME:
            wanted.add(name)
        else:
            unknown.append(name)
    if unknown:
        raise ValueError(f"unknown name(s): {', '.join(unknown)} (pairs: "
                         f"{', '.join(PAIR_BY_NAME)}; runs: {', '.join(RUN_BY_NAME)})")
    if not wanted:
        raise ValueError("no name given")
    return [r for r in order if r.name in wanted]


def gpu_slug(name: str) -> str:
    """The output folder's name for a GPU: "NVIDIA H100 80GB HBM3" -> "h100-80gb-hbm3"
    (lowercase, runs of other characters to one '-', no leading "nvidia-")."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if slug.startswith("nvidia-"):
        slug = slug[len("nvidia-"):]
    return slug or "unknown-gpu"


# ---------------------------------------------------------------------------------------
# Results and the manifest (pairs.json).
# ---------------------------------------------------------------------------------------

@dataclasses.dataclass
class RunResult:
    """What recording one run gave: its trimmed trace once trimmed, or why it has none."""
    name: str
    trace: Optional[str] = None          # trimmed trace, relative to the manifest
    measured_ms: Optional[float] = None  # median step time without the profiler
    settings: dict = dataclasses.field(default_factory=dict)
    skipped: Optional[str] = None        # why the run has no trace; None when it has one
    raw: Optional[str] = None            # the untrimmed trace, until trim_trace.py is done
    duration_s: float = 0.0              # wall time spent on it

    def usable(self) -> bool:
        return self.skipped is None and self.trace is not None

    def why_unusable(self) -> str:
        if self.skipped:
            return self.skipped
        if self.raw:
            return "its trace was not trimmed (recording stopped before trim_trace.py ended)"
        return "no trace"


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_entry(run: Run, result: Optional[RunResult]) -> dict:
    """The manifest's entry for a run."""
    if result is None:
        return {"name": run.name, "trace": None, "measured_without_profiler_ms": None,
                "settings": dict(run.settings), "skipped": "not recorded"}
    ok = result.usable()
    return {"name": run.name,
            "trace": result.trace if ok else None,
            "measured_without_profiler_ms": result.measured_ms,
            "settings": result.settings or dict(run.settings),
            "skipped": None if ok else result.why_unusable()}


def pair_entry(pair: Pair, results: dict, env: dict) -> dict:
    """The manifest's entry for a pair; a pair missing a run is listed as skipped, with
    the reason and without `after`."""
    before, after = results.get(pair.before), results.get(pair.after)
    entry = {"name": pair.name,
             "before": trace_file(pair.before),
             "after": trace_file(pair.after),
             "pass": pair.pass_spec,
             "differs": pair.differs,
             "gpu": env["gpu"],
             "framework": f"PyTorch {env['pytorch']}",
             "origin": f"recorded with {KIT}",
             "license": LICENSE,
             "measured_without_profiler_ms": {
                 "before": before.measured_ms if before is not None else None,
                 "after": after.measured_ms if after is not None else None}}
    for role, name, result in (("before", pair.before, before), ("after", pair.after, after)):
        if result is None or not result.usable():
            why = result.why_unusable() if result is not None else "not recorded"
            del entry["after"]
            entry["measured_without_profiler_ms"].pop("after")
            entry["skipped"] = f"{role} run {name}: {why}"
            break
    return entry


def build_manifest(env: dict, results: dict, runs=RUNS, pairs=PAIRS) -> dict:
    """The manifest for `results` ({run name: RunResult}); `env` gives gpu, pytorch,
    cuda and recorded."""
    return {"gpu": env["gpu"], "pytorch": env["pytorch"], "cuda": env["cuda"],
            "recorded": env["recorded"], "kit": KIT,
            "runs": [run_entry(r, results.get(r.name)) for r in runs],
            "pairs": [pair_entry(p, results, env) for p in pairs]}


def write_manifest(path: Path, manifest: dict) -> None:
    """Writes `manifest` to `path` atomically (a reader never sees half a file)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_manifest(path: Path) -> Optional[dict]:
    """The manifest at `path`, or None when there is none or it does not parse."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def earlier_results(previous: Optional[dict], folder: Path, env: dict) -> dict:
    """The usable runs of an earlier manifest of `folder`, as {name: RunResult}: those
    recorded on the same GPU with the same PyTorch whose trace is still there. A run this
    session does not record (not selected, skipped, failed) keeps its earlier recording."""
    if not previous or previous.get("gpu") != env["gpu"] or previous.get("pytorch") != env["pytorch"]:
        return {}
    out = {}
    for e in previous.get("runs", []):
        name, trace = e.get("name"), e.get("trace")
        if name in RUN_BY_NAME and not e.get("skipped") and trace and (Path(folder) / trace).is_file():
            out[name] = RunResult(name, trace=trace, measured_ms=e.get("measured_without_profiler_ms"),
                                  settings=e.get("settings") or {})
    return out


def merge_results(earlier: dict, current: dict) -> dict:
    """This session's results over the earlier ones: a usable current result wins; an
    unusable one gives way to a usable earlier recording."""
    merged = dict(earlier)
    for name, result in current.items():
        if result.usable() or name not in earlier:
            merged[name] = result
    return merged


# ---------------------------------------------------------------------------------------
# Time budget and the recording loop (no torch here: `execute` records one run).
# ---------------------------------------------------------------------------------------

class Budget:
    """The time budget of the whole command. A run is started only when its estimate,
    scaled by how much slower than estimated the runs so far were (1x to 2x), fits in
    what is left before the budget's end minus a reserve for the last trims."""

    def __init__(self, budget_s: float, clock: Callable[[], float] = time.monotonic,
                 start: Optional[float] = None, reserve_s: float = TAIL_RESERVE_S):
        self.budget_s = budget_s
        self.clock = clock
        self.start = clock() if start is None else start
        self.reserve_s = reserve_s
        self._estimated = 0.0
        self._actual = 0.0

    def elapsed(self) -> float:
        return self.clock() - self.start

    def remaining(self) -> float:
        """Seconds a run may still take."""
        return self.budget_s - self.reserve_s - self.elapsed()

    def slowdown(self) -> float:
        if self._estimated <= 0:
            return 1.0
        return min(2.0, max(1.0, self._actual / self._estimated))

    def estimate(self, run: Run) -> float:
        return run.est_s * self.slowdown()

    def observe(self, run: Run, seconds: float) -> None:
        """A run was recorded in `seconds`."""
        self._estimated += run.est_s
        self._actual += seconds

    def skip_reason(self, run: Run) -> Optional[str]:
        """Why `run` does not fit any more, or None when it does."""
        need, left = self.estimate(run), self.remaining()
        if need <= left:
            return None
        return (f"out of time budget: {self.elapsed():.0f} s of --budget-s {self.budget_s:.0f} used, "
                f"the run needs ~{need:.0f} s, {max(left, 0.0):.0f} s left")


def unneeded_reason(run: Run, results: dict, pairs=PAIRS) -> Optional[str]:
    """Why recording `run` is pointless: every pair it belongs to lost its other run
    earlier in this session. None when some pair can still use it (or it is in none)."""
    lost = []
    for pair in pairs:
        if run.name not in (pair.before, pair.after):
            continue
        other = pair.after if run.name == pair.before else pair.before
        result = results.get(other)
        if result is None or result.skipped is None:
            return None
        lost.append(other)
    if not lost:
        return None
    return f"not needed: its pairs lost their other run ({', '.join(sorted(set(lost)))})"


def record_runs(order: list, execute: Callable, budget: Budget,
                on_result: Optional[Callable] = None, pairs=PAIRS) -> dict:
    """Records the runs of `order` one after another with `execute(run, seconds_left)`,
    which returns a RunResult; a run that no longer fits the budget, or that no pair can
    use, is skipped with the reason. Calls `on_result(result)` after each. Returns
    {name: RunResult} for every run of `order`."""
    results = {}
    for run in order:
        reason = unneeded_reason(run, results, pairs) or budget.skip_reason(run)
        if reason:
            result = RunResult(run.name, settings=dict(run.settings), skipped=reason)
        else:
            t0 = budget.clock()
            result = execute(run, budget.remaining())
            result.duration_s = budget.clock() - t0
            if result.skipped is None:
                budget.observe(run, result.duration_s)
        results[run.name] = result
        if on_result:
            on_result(result)
    return results


# ---------------------------------------------------------------------------------------
# Trimming: tests/data/trim_trace.py --iterations K, in the background.
# ---------------------------------------------------------------------------------------

def trim_command(raw: Path, out: Path, keep: int) -> list:
    """The command that cuts the trace `raw` to its first `keep` ProfilerSteps into
    `out` (gzip'd): tests/data/trim_trace.py."""
    return [sys.executable, str(TRIM_SCRIPT), str(raw), str(out), "--iterations", str(keep)]


def trim_trace_file(raw: Path, out: Path, keep: int) -> str:
    """Trims `raw` into `out` now; returns trim_trace.py's report line. Raises
    RuntimeError with its message when it fails."""
    part = Path(str(out) + ".part")
    proc = subprocess.run(trim_command(raw, part, keep), capture_output=True, text=True)
    if proc.returncode != 0:
        part.unlink(missing_ok=True)
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"trim_trace.py: exit code {proc.returncode}")
    os.replace(part, out)
    return proc.stdout.strip()


class Trims:
    """trim_trace.py runs in the background while the GPU records the next run: at most
    `workers` at a time, niced. Each writes OUT.part, renamed to OUT when it succeeds."""

    def __init__(self, workers: int = TRIM_WORKERS, nice: int = 10):
        self.workers = workers
        self.nice = nice
        self._pending = []   # (name, raw, out, keep)
        self._running = {}   # name -> (Popen, part, out)
        self._ended = []     # ended trims not yet returned by poll()

    def submit(self, name: str, raw: Path, out: Path, keep: int) -> None:
        """Queues a trim and starts what may start; the trims that ended meanwhile are
        kept for the next poll()."""
        self._pending.append((name, Path(raw), Path(out), keep))
        ended = self.poll()  # resets self._ended
        self._ended.extend(ended)

    def busy(self) -> bool:
        return bool(self._pending or self._running)

    def poll(self) -> list:
        """Starts what may start; returns [(name, error or None, report)] of the trims
        that ended since the last call."""
        ended, self._ended = self._ended, []
        for name, (proc, part, out) in list(self._running.items()):
            if proc.poll() is None:
                continue
            stdout, stderr = proc.communicate()
            del self._running[name]
            if proc.returncode == 0 and part.is_file():
                os.replace(part, out)
                ended.append((name, None, stdout.strip()))
            else:
                part.unlink(missing_ok=True)
                lines = (stderr or stdout).strip().splitlines()
                ended.append((name, lines[-1] if lines else f"exit code {proc.returncode}", ""))
        while self._pending and len(self._running) < self.workers:
            name, raw, out, keep = self._pending.pop(0)
            part = Path(str(out) + ".part")
            nice = self.nice
            lower = (lambda: os.nice(nice)) if nice and os.name == "posix" else None
            proc = subprocess.Popen(trim_command(raw, part, keep), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, preexec_fn=lower)
            self._running[name] = (proc, part, out)
        return ended

    def wait(self, poll_s: float = 0.2) -> list:
        """Waits for every trim; returns what poll() returned along the way."""
        ended = self.poll()
        while self.busy():
            time.sleep(poll_s)
            ended += self.poll()
        return ended

    def kill(self) -> None:
        """Stops the running trims (their partial outputs are removed)."""
        self._pending.clear()
        for proc, part, _ in self._running.values():
            proc.kill()
            proc.communicate()
            part.unlink(missing_ok=True)
        self._running.clear()


# ---------------------------------------------------------------------------------------
# Running a model (torch is imported here, never at module level).
# ---------------------------------------------------------------------------------------

def _torch():
    import torch
    return torch


class SyntheticImages:
    """A map-style dataset of 3x224x224 float images and labels whose __getitem__ costs
    real CPU time, as decoding and augmenting a JPEG does: a random uint8 image from a
    generator seeded with the index, `rounds` passes of a 5-point blur and a
    normalization, all in numpy (single-threaded, deterministic; no sleep)."""

    MEAN = (0.485, 0.456, 0.406)
    STD = (0.229, 0.224, 0.225)

    def __init__(self, length: int, rounds: int, size: int = 224):
        self.length = length
        self.rounds = rounds
        self.size = size

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        import numpy as np
        import torch
        rng = np.random.default_rng(index)
        x = rng.integers(0, 256, size=(self.size, self.size, 3), dtype=np.uint8).astype(np.float32)
        x *= 1.0 / 255.0
        for _ in range(self.rounds):
            x = 0.2 * (x + np.roll(x, 1, 0) + np.roll(x, -1, 0) + np.roll(x, 1, 1) + np.roll(x, -1, 1))
        x = (x - np.asarray(self.MEAN, np.float32)) / np.asarray(self.STD, np.float32)
        return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1))), index % 1000


@dataclasses.dataclass
class Parts:
    """A model ready to train: `loss_of(model, batch)` is the forward with the loss,
    `next_batch()` makes or loads the next (micro-)batch on the GPU, `close()` frees what
    the data source holds, `info` goes to the run's settings."""
    model: object
    next_batch: Callable
    loss_of: Callable
    close: Callable = lambda: None
    info: dict = dataclasses.field(default_factory=dict)


def build_resnet50(torch, s: dict, device: str, batches: int) -> Parts:
    import torchvision
    with torch.device(device):
        model = torchvision.models.resnet50(weights=None)
    if s["channels_last"]:
        model = model.to(memory_format=torch.channels_last)
    criterion = torch.nn.CrossEntropyLoss()
    b = s["batch"]

    def loss_of(m, batch):
        x, y = batch
        return criterion(m(x), y)

    if s["data"] == "dataloader":
        next_batch, close, info = dataloader_batches(torch, s, device, batches)
        return Parts(model, next_batch, loss_of, close, info)

    def next_batch():
        if s["channels_last"]:  # NHWC storage seen as NCHW: no conversion kernel
            x = torch.randn(b, 224, 224, 3, device=device).permute(0, 3, 1, 2)
        else:
            x = torch.randn(b, 3, 224, 224, device=device)
        return x, torch.randint(0, 1000, (b,), device=device)
    return Parts(model, next_batch, loss_of)


def dataloader_batches(torch, s: dict, device: str, batches: int):
    """(next_batch, close, info) of a DataLoader over SyntheticImages with s["workers"]
    worker processes; the iterator (and its workers) is made here, before warm-up."""
    dataset = SyntheticImages(length=s["batch"] * batches, rounds=s["decode_rounds"])
    t0 = time.perf_counter()
    for i in range(8):
        dataset[i]
    per_sample_ms = (time.perf_counter() - t0) * 1e3 / 8
    workers = s["workers"]
    loader = torch.utils.data.DataLoader(dataset, batch_size=s["batch"], shuffle=False,
                                         num_workers=workers, persistent_workers=workers > 0,
                                         pin_memory=s["pin_memory"], drop_last=True)
    it = iter(loader)

    def next_batch():
        x, y = next(it)
        return x.to(device, non_blocking=True), y.to(device, non_blocking=True)

    def close():
        shutdown = getattr(it, "_shutdown_workers", None)
        if shutdown:
            shutdown()
    return next_batch, close, {"decode_ms_per_sample": round(per_sample_ms, 3)}


def build_gpt2(torch, s: dict, device: str, batches: int) -> Parts:
    import transformers
    config = transformers.GPT2Config(n_layer=s["n_layer"], n_embd=s["n_embd"], n_head=s["n_head"],
                                     n_positions=max(1024, s["seq"]), use_cache=False)
    with torch.device(device):
        model = transformers.GPT2LMHeadModel(config)
    if s["checkpointing"]:
        try:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        except TypeError:  # transformers before 4.35
            model.gradient_checkpointing_enable()
    micro = s["batch"] // s["accum"]

    def next_batch():
        return torch.randint(0, config.vocab_size, (micro, s["seq"]), device=device)

    def loss_of(m, ids):
        return m(input_ids=ids, labels=ids).loss
    info = {"attn_implementation": getattr(model.config, "_attn_implementation", None),
            "transformers": transformers.__version__, "micro_batch": micro}
    return Parts(model, next_batch, loss_of, info=info)


def mlp_layers(torch, s: dict):
    """`s["layers"]` Linear(width, width) layers with a ReLU between two of them."""
    w = s["width"]
    layers = []
    for i in range(s["layers"]):
        layers.append(torch.nn.Linear(w, w))
        if i + 1 < s["layers"]:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def regression_parts(torch, model, s: dict, device: str, info: Optional[dict] = None) -> Parts:
    """The MLPs' data and loss: random inputs and targets of the layers' width, MSE."""
    w, b = s["width"], s["batch"]
    criterion = torch.nn.MSELoss()

    def next_batch():
        return torch.randn(b, w, device=device), torch.randn(b, w, device=device)

    def loss_of(m, batch):
        x, y = batch
        return criterion(m(x), y)
    return Parts(model, next_batch, loss_of, info=dict(info or {}))


def build_mlp(torch, s: dict, device: str, batches: int) -> Parts:
    with torch.device(device):  # the layers' parameters are made on the GPU
        model = mlp_layers(torch, s)
    return regression_parts(torch, model, s, device)


def build_mlp_branches(torch, s: dict, device: str, batches: int) -> Parts:
    """`towers` copies of the MLP's layers on one input, the first on the step's stream and
    each other on its own side stream (forked from the step's stream and joined back before
    the sum), so that their kernels overlap, eagerly and in a captured graph alike."""

    class Towers(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.towers = torch.nn.ModuleList(mlp_layers(torch, s) for _ in range(s["towers"]))
            self.streams = [torch.cuda.Stream() for _ in range(s["towers"] - 1)]

        def forward(self, x):
            main = torch.cuda.current_stream()
            outs = [self.towers[0](x)]
            for t, side in zip(self.towers[1:], self.streams):
                side.wait_stream(main)
                with torch.cuda.stream(side):
                    outs.append(t(x))
            for side in self.streams:
                main.wait_stream(side)
            return torch.stack(outs).sum(0)

    with torch.device(device):
        model = Towers()
    return regression_parts(torch, model, s, device, {"streams": s["towers"]})


def build_vit(torch, s: dict, device: str, batches: int) -> Parts:
    import torchvision
    with torch.device(device):
        model = getattr(torchvision.models, s["model"])(weights=None)
    criterion = torch.nn.CrossEntropyLoss()
    b = s["batch"]

    def next_batch():
        return (torch.randn(b, 3, 224, 224, device=device),
                torch.randint(0, 1000, (b,), device=device))

    def loss_of(m, batch):
        x, y = batch
        return criterion(m(x), y)
    return Parts(model, next_batch, loss_of)


MODELS = {"resnet50": build_resnet50, "gpt2": build_gpt2, "mlp": build_mlp,
          "mlp_branches": build_mlp_branches, "vit_b_16": build_vit}


def make_optimizer(torch, model, s: dict):
    params = model.parameters()
    if s["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=0.01, momentum=s["momentum"])
    kwargs = {"lr": 1e-4}
    if s.get("fused"):
        kwargs["fused"] = True
    elif s.get("foreach") is not None:
        kwargs["foreach"] = s["foreach"]
    if s["optimizer"] == "adam":
        return torch.optim.Adam(params, **kwargs)
    if s["optimizer"] == "adamw":
        return torch.optim.AdamW(params, **kwargs)
    raise ValueError(f"unknown optimizer {s['optimizer']}")


def autocast_dtype(torch, precision: str):
    return {"fp32": None, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]


def training_step(torch, model, opt, parts: Parts, s: dict) -> Callable:
    """One eager (or compiled-model) training step: zero_grad, `accum` forward/backward
    passes under autocast, the optimizer step (through GradScaler for fp16)."""
    dtype = autocast_dtype(torch, s["precision"])
    scaler = torch.amp.GradScaler("cuda") if s["precision"] == "fp16" else None
    accum = s.get("accum", 1)
    mark_step = None
    if s.get("compile") == "reduce-overhead":
        mark_step = getattr(torch.compiler, "cudagraph_mark_step_begin", None)

    def autocast():
        return torch.autocast("cuda", dtype=dtype) if dtype is not None else contextlib.nullcontext()

    def step():
        if mark_step:
            mark_step()
        opt.zero_grad(set_to_none=True)
        for _ in range(accum):
            batch = parts.next_batch()
            with autocast():
                loss = parts.loss_of(model, batch)
            if accum > 1:
                loss = loss / accum
            (scaler.scale(loss) if scaler else loss).backward()
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
    return step


def graphed_step(torch, model, opt, parts: Parts, s: dict) -> Callable:
    """The whole FP32 step (batch generation, forward, backward, optimizer step) captured
    once as a CUDA graph (PyTorch's whole-network capture recipe: warm-up on a side
    stream, gradients set to None before capture); the step replays it."""
    if s["precision"] != "fp32" or s.get("accum", 1) != 1 or s["optimizer"] != "sgd":
        raise ValueError("the CUDA-graph step is for FP32, one batch, SGD")
    eager = training_step(torch, model, opt, parts, s)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            eager()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        parts.loss_of(model, parts.next_batch()).backward()
        opt.step()
    return graph.replay


@dataclasses.dataclass
class Workload:
    step: Callable
    close: Callable
    info: dict


def build_workload(torch, s: dict, device: str, batches: int) -> Workload:
    """The training step of the settings `s`."""
    parts = MODELS[s["model"]](torch, s, device, batches)
    model = parts.model
    model.train()
    opt = make_optimizer(torch, model, s)
    if s.get("compile"):
        model = torch.compile(model) if s["compile"] == "default" else torch.compile(model, mode=s["compile"])
    step = graphed_step(torch, model, opt, parts, s) if s.get("cuda_graph") else \
        training_step(torch, model, opt, parts, s)
    return Workload(step, parts.close, dict(parts.info))


def time_steps(torch, step: Callable, n: int) -> dict:
    """Times `n` back-to-back steps without the profiler: a CUDA event recorded on the
    stream at each step's start gives the period of each step on the GPU's timeline
    (what a steady-state iteration in a trace is); torch.cuda.synchronize() before and
    after the window gives its wall time. The median period is the measured time."""
    events = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(n):
        events[i].record()
        step()
    events[n].record()
    torch.cuda.synchronize()
    wall_ms = (time.perf_counter() - t0) * 1e3
    periods = [events[i].elapsed_time(events[i + 1]) for i in range(n)]
    return {"median_ms": statistics.median(periods), "mean_ms": wall_ms / n,
            "min_ms": min(periods), "max_ms": max(periods), "timed_steps": n,
            "method": "median of per-step CUDA-event periods over back-to-back steps; "
                      "mean_ms: wall time / steps, torch.cuda.synchronize() around the window",
            "peak_allocated_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1),
            "peak_reserved_mib": round(torch.cuda.max_memory_reserved() / 2**20, 1)}


def profile_steps(torch, step: Callable, raw: Path, active: int, with_stack: bool) -> None:
    """Runs wait + warm-up + `active` steps under torch.profiler (the settings of
    examples/collect_trace.py) and writes the Kineto trace to `raw` (JSON)."""
    prof_mod = torch.profiler
    total = PROFILE_WAIT + PROFILE_WARMUP + active
    with prof_mod.profile(
            activities=[prof_mod.ProfilerActivity.CPU, prof_mod.ProfilerActivity.CUDA],
            schedule=prof_mod.schedule(wait=PROFILE_WAIT, warmup=PROFILE_WARMUP, active=active, repeat=1),
            record_shapes=True, with_modules=True, with_stack=with_stack, profile_memory=True,
            on_trace_ready=lambda p: p.export_chrome_trace(str(raw))) as prof:
        for i in range(total):
            step()
            if i == total - 1:
                # The last profiled step is cut off by trim_trace.py: let the kernels of
                # the kept ones end inside the profiling window.
                torch.cuda.synchronize()
            prof.step()
    if not Path(raw).is_file():
        raise RuntimeError("the profiler wrote no trace")


def scan_trace(raw: Path) -> dict:
    """Counts in the untrimmed trace that say what was recorded."""
    data = Path(raw).read_bytes()
    return {"profiler_steps": len(set(re.findall(rb'"ProfilerStep#(\d+)"', data))),
            "cuda_graph_launches": len(re.findall(rb'"cudaGraphLaunch', data)),
            "raw_trace_mib": round(len(data) / 2**20, 1)}


def environment_flags(torch) -> dict:
    """The global settings that change what FP32 means."""
    flags = {}
    for key, get in (("float32_matmul_precision", lambda: torch.get_float32_matmul_precision()),
                     ("cudnn_allow_tf32", lambda: torch.backends.cudnn.allow_tf32),
                     ("cudnn_benchmark", lambda: torch.backends.cudnn.benchmark)):
        try:
            flags[key] = get()
        except Exception:  # an API gone in this PyTorch
            flags[key] = None
    return flags


def record_run(run: Run, raw_dir: Path, steps: int, active: int, stack: str) -> RunResult:
    """Records `run` on the GPU in this process: warm-up, timing, profiling. Returns the
    result with the untrimmed trace in `raw`. Raises on failure; frees the GPU either way."""
    torch = _torch()
    s = run.settings
    with_stack = {"auto": bool(s.get("stack")), "on": True, "off": False}[stack]
    timed = steps * run.steps_factor
    steps_total = run.warmup + timed + PROFILE_WAIT + PROFILE_WARMUP + active
    raw = Path(raw_dir) / f"{run.name}.json"
    torch.manual_seed(0)
    workload = build_workload(torch, s, "cuda", steps_total * s.get("accum", 1) + 4)
    try:
        for _ in range(run.warmup):
            workload.step()
        torch.cuda.synchronize()
        measurement = time_steps(torch, workload.step, timed)
        profile_steps(torch, workload.step, raw, active, with_stack)
        measurement.update(scan_trace(raw))
        measurement.update(workload.info)
    finally:
        workload.close()
        del workload
        gc.collect()
        torch.cuda.empty_cache()
    settings = {**s, "stack": with_stack, "warmup_steps": run.warmup,
                "profiler": {"wait": PROFILE_WAIT, "warmup": PROFILE_WARMUP, "active": active,
                             "record_shapes": True, "with_modules": True, "with_stack": with_stack,
                             "profile_memory": True},
                "kept_steps": active - 1, "environment": environment_flags(torch),
                "measurement": measurement}
    return RunResult(run.name, measured_ms=round(measurement["median_ms"], 3), settings=settings,
                     raw=str(raw))


def describe_error(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    text = f"{type(e).__name__}: {lines[0] if lines else ''}".strip()
    return text if len(text) <= 300 else text[:297] + "..."


def record_run_safely(run: Run, raw_dir: Path, steps: int, active: int, stack: str) -> RunResult:
    """record_run, with a failure recorded as the run's skip reason."""
    try:
        return record_run(run, raw_dir, steps, active, stack)
    except Exception as e:  # torch.compile unavailable, out of memory, ...
        reason = f"failed: {describe_error(e)}"
    gc.collect()  # what a failed build left (the traceback is gone by now)
    with contextlib.suppress(Exception):
        _torch().cuda.empty_cache()
    return RunResult(run.name, settings=dict(run.settings), skipped=reason)


def cuda_healthy() -> bool:
    """Whether this process's CUDA context still works after a failed run."""
    try:
        _torch().cuda.synchronize()
        return True
    except Exception:
        return False


# ---------------------------------------------------------------------------------------
# The command.
# ---------------------------------------------------------------------------------------

class Interrupted(BaseException):
    """SIGTERM (e.g. from `timeout`) or Ctrl-C: stop, write what was recorded."""


class Log:
    def __init__(self, start: float):
        self.start = start

    def __call__(self, msg: str) -> None:
        print(f"[{time.monotonic() - self.start:6.1f} s] {msg}", flush=True)


def run_isolated(run: Run, seconds_left: float, raw_dir: Path, args,
                 command: Optional[list] = None) -> RunResult:
    """Records `run` in a child process (`command`; by default this script with
    --run-one), which writes RAW_DIR/NAME.result.json; the child is killed with its
    process group when `seconds_left` runs out."""
    result_path = Path(raw_dir) / f"{run.name}.result.json"
    cmd = command or [sys.executable, str(Path(__file__).resolve()), "--run-one", run.name,
                      "--raw-dir", str(raw_dir), "--steps", str(args.steps),
                      "--active", str(args.active), "--stack", args.stack]
    proc = subprocess.Popen(cmd, start_new_session=True)
    timeout = max(1.0, seconds_left)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return RunResult(run.name, settings=dict(run.settings),
                         skipped=f"out of time budget: stopped after {timeout:.0f} s, at the budget's end")
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    data = read_manifest(result_path)  # any JSON file
    if not data:
        return RunResult(run.name, settings=dict(run.settings),
                         skipped=f"failed: its process exited with code {rc} and no result")
    return RunResult(**data)


def run_one_main(args) -> int:
    """--run-one NAME: record one run in this process and write its result as JSON."""
    run = RUN_BY_NAME[args.run_one]
    result = record_run_safely(run, Path(args.raw_dir), args.steps, args.active, args.stack)
    (Path(args.raw_dir) / f"{run.name}.result.json").write_text(json.dumps(dataclasses.asdict(result)))
    return 0


def dry_run_main(args, selected: list) -> int:
    """--dry-run: the manifest as a recording would start it, without torch or GPU."""
    out = Path(args.out) if args.out else Path(tempfile.gettempdir()) / "ground_truth-dry-run"
    out.mkdir(parents=True, exist_ok=True)
    try:
        pytorch = importlib.metadata.version("torch").split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        pytorch = ""
    env = {"gpu": "(dry run: no GPU queried)", "pytorch": pytorch, "cuda": "", "recorded": utc_now()}
    chosen = {r.name for r in selected}
    results = {r.name: RunResult(r.name, settings=dict(r.settings),
                                 skipped="dry run: not recorded" if r.name in chosen
                                 else "not selected (--only)")
               for r in RUNS}
    write_manifest(out / MANIFEST, build_manifest(env, results))
    print(f"wrote {out / MANIFEST} ({len(RUNS)} runs, {len(PAIRS)} pairs, nothing recorded)")
    return 0


def list_main(selected: list, budget_s: float) -> int:
    """--list: the runs in recording order and the pairs."""
    print("runs, in recording order (estimated seconds on an H100; * = own process):")
    total = 0.0
    for i, r in enumerate(selected, 1):
        total += r.est_s
        print(f"  {i:2d}. {r.name:26s} {r.est_s:5.0f} s{'*' if r.isolate else ' '}  {describe(r.settings)}")
    print(f"  total ~{total:.0f} s + ~{STARTUP_S:.0f} s to start, of a {budget_s:.0f} s budget "
          f"({TAIL_RESERVE_S:.0f} s kept for the last trims)")
    print("pairs, most valuable first (before -> after, daydream pass):")
    names = {r.name for r in selected}
    for p in PAIRS:
        if p.before in names or p.after in names:
            print(f"  {p.name:28s} {p.before} -> {p.after}   {p.pass_spec or '(plain diff)'}")
            print(f"  {'':28s} {p.differs}")
    return 0


def record_main(args, selected: list) -> int:
    """Records `selected` and writes the traces and pairs.json."""
    start = time.monotonic()
    log = Log(start)
    # No network on the GPU machines: keep transformers from trying the Hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    def on_signal(signum, frame):
        raise Interrupted(signal.Signals(signum).name)
    handlers = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return _record(args, selected, start, log)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def _record(args, selected: list, start: float, log: Log) -> int:
    """record_main's work, under its signal handlers."""
    try:
        torch = _torch()
    except ImportError as e:
        print(f"record.py: PyTorch is needed to record ({e}); --list and --dry-run work without it",
              file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("record.py: no CUDA GPU visible to PyTorch", file=sys.stderr)
        return 1
    env = {"gpu": torch.cuda.get_device_name(), "pytorch": torch.__version__.split("+")[0],
           "cuda": torch.version.cuda or "", "recorded": utc_now()}
    out = Path(args.out) if args.out else DEFAULT_OUT_ROOT / gpu_slug(env["gpu"])
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST
    earlier = {} if args.fresh else earlier_results(read_manifest(manifest_path), out, env)
    raw_dir = Path(tempfile.mkdtemp(prefix="ground_truth-raw-"))
    log(f"{env['gpu']}, PyTorch {env['pytorch']}, CUDA {env['cuda']}: {len(selected)} runs into {out}"
        + (f" ({len(earlier)} earlier recordings kept unless recorded again)" if earlier else ""))

    budget = Budget(args.budget_s, start=start)
    trims = Trims()
    results = {}  # this session's, by name
    state = {"isolate_all": False}

    def save():
        env["recorded"] = utc_now()
        write_manifest(manifest_path, build_manifest(env, merge_results(earlier, results)))

    def collect(ended):
        for name, error, report in ended:
            r = results[name]
            if error is None:
                r.trace, r.raw = trace_file(name), None
                log(f"{name}: trimmed: {report}")
            else:
                r.skipped = f"trim_trace.py failed: {error}"
                log(f"{name}: trim_trace.py failed: {error}")
        if ended:
            save()

    def execute(run: Run, seconds_left: float) -> RunResult:
        collect(trims.poll())
        log(f"{run.name}: recording ({describe(run.settings)})")
        if run.isolate or state["isolate_all"]:
            return run_isolated(run, seconds_left, raw_dir, args)
        result = record_run_safely(run, raw_dir, args.steps, args.active, args.stack)
        if result.skipped and not cuda_healthy():
            state["isolate_all"] = True
            log("the CUDA context is broken: the remaining runs run in their own processes")
        return result

    def on_result(result: RunResult):
        results[result.name] = result
        if result.skipped:
            log(f"{result.name}: skipped: {result.skipped}")
        else:
            log(f"{result.name}: {result.measured_ms:.3f} ms/step without the profiler "
                f"({result.duration_s:.0f} s)")
            trims.submit(result.name, Path(result.raw), out / trace_file(result.name), args.active - 1)
        save()

    code = 0
    try:
        record_runs(selected, execute, budget, on_result)
        collect(trims.wait())
    except Interrupted as e:
        code = 128 + int(signal.SIGTERM if str(e) == "SIGTERM" else signal.SIGINT)
        log(f"interrupted ({e}): writing what was recorded")
        trims.kill()
        for run in selected:
            if run.name not in results:
                results[run.name] = RunResult(run.name, settings=dict(run.settings),
                                              skipped=f"interrupted ({e}) after {budget.elapsed():.0f} s")
    for run in RUNS:  # the runs --only left out, unless recorded earlier
        if run.name not in results and run.name not in earlier:
            results[run.name] = RunResult(run.name, settings=dict(run.settings),
                                          skipped="not selected (--only)")
    save()
    if args.keep_raw:
        log(f"untrimmed traces kept in {raw_dir}")
    else:
        shutil.rmtree(raw_dir, ignore_errors=True)
    manifest = read_manifest(manifest_path) or {}
    usable = sum(1 for p in manifest.get("pairs", []) if "skipped" not in p)
    log(f"wrote {manifest_path}: {usable} of {len(PAIRS)} pairs recorded")
    return code


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="record.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the matrix and exit (no torch needed)")
    ap.add_argument("--dry-run", action="store_true",
                    help="write the manifest skeleton, record nothing (no torch needed; default "
                         "--out: a folder in the system's temporary directory)")
    ap.add_argument("--only", metavar="NAME[,NAME]",
                    help="record only these pairs (a pair's before and after) or runs")
    ap.add_argument("--set", type=int, default=1, metavar="N",
                    help="without --only: record the runs of matrix N (1: the first pairs, "
                         "which fit the default budget; 2: the same passes on other models, "
                         "for a second session; default %(default)s)")
    ap.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S,
                    help="seconds the whole command may take; runs that would end later are "
                         "skipped (default %(default).0f)")
    ap.add_argument("--out", help="output folder (default tests/data/ground_truth/<gpu>/)")
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS,
                    help="steps timed without the profiler (x10 for the MLP; default %(default)s)")
    ap.add_argument("--active", type=int, default=DEFAULT_ACTIVE,
                    help="profiled steps; the trimmed trace keeps the first active-1 (default %(default)s)")
    ap.add_argument("--stack", choices=["auto", "on", "off"], default="auto",
                    help="profiler with_stack: auto = where the pair needs nn.Module layers (GPT-2)")
    ap.add_argument("--fresh", action="store_true",
                    help="ignore the recordings of an earlier pairs.json in --out")
    ap.add_argument("--keep-raw", action="store_true", help="keep the untrimmed traces")
    ap.add_argument("--run-one", help=argparse.SUPPRESS)   # the child process of an isolated run
    ap.add_argument("--raw-dir", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    if args.active < 2:
        ap.error("--active must be at least 2 (the trimmed trace keeps active-1 steps)")
    if args.run_one and (args.run_one not in RUN_BY_NAME or not args.raw_dir):
        ap.error("--run-one needs a run name and --raw-dir")
    try:
        selected = select(args.only, args.set)
    except ValueError as e:
        ap.error(f"{'--only' if args.only else '--set'}: {e}")
    return args, selected


def main(argv=None) -> int:
    args, selected = parse_args(argv)
    if args.list:
        return list_main(selected, args.budget_s)
    if args.dry_run:
        return dry_run_main(args, selected)
    if args.run_one:
        return run_one_main(args)
    return record_main(args, selected)


if __name__ == "__main__":
    sys.exit(main())
