#!/usr/bin/env python3
"""Record a PyTorch profiler trace that daydream reads best.

Runs a few training steps of a model under torch.profiler with a schedule (wait, warm-up,
several active steps), record_shapes (tensor sizes: memory and gradient-size models),
with_modules and with_stack (layer mapping), and profile_memory ([memory] events: peak
memory prediction), then writes a gzip-compressed Kineto trace.

    python3 collect_trace.py --model resnet50 --batch-size 64 --out resnet50.json.gz
    daydream-whatif resnet50.json.gz

Any CUDA (or ROCm) machine with PyTorch works; torchvision is needed for the vision models
and transformers for bert/gpt2. Use --amp / --fused-adam to record the optimized runs whose
measured iteration time you want to compare with daydream's prediction.
"""
import argparse
import gzip
import os
import shutil
import statistics
import tempfile
import time

import torch


def build(model_name, batch_size, device):
    """Returns (model, make_batch, loss_fn) for a model name."""
    if model_name in ("resnet50", "resnet18"):
        import torchvision
        model = getattr(torchvision.models, model_name)()
        def make_batch():
            return (torch.randn(batch_size, 3, 224, 224, device=device),
                    torch.randint(0, 1000, (batch_size,), device=device))
        return model, make_batch, torch.nn.CrossEntropyLoss()
    if model_name in ("bert", "gpt2"):
        import transformers
        if model_name == "bert":
            config = transformers.BertConfig()
            model = transformers.BertForMaskedLM(config)
        else:
            config = transformers.GPT2Config()
            model = transformers.GPT2LMHeadModel(config)
        seq = 128 if model_name == "bert" else 512
        def make_batch():
            ids = torch.randint(0, config.vocab_size, (batch_size, seq), device=device)
            return ids, ids
        def loss_fn(out, labels):
            return out.loss
        return model, make_batch, loss_fn
    if model_name == "mlp":
        layers = []
        for _ in range(8):
            layers += [torch.nn.Linear(4096, 4096), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers)
        def make_batch():
            return (torch.randn(batch_size, 4096, device=device),
                    torch.randn(batch_size, 4096, device=device))
        return model, make_batch, torch.nn.MSELoss()
    raise SystemExit(f"unknown model {model_name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resnet50", choices=["resnet50", "resnet18", "bert", "gpt2", "mlp"])
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--out", default="trace.json.gz")
    ap.add_argument("--amp", action="store_true", help="torch.autocast + GradScaler")
    ap.add_argument("--fused-adam", action="store_true", help="torch.optim.Adam(fused=True)")
    ap.add_argument("--sgd", action="store_true", help="SGD instead of Adam")
    ap.add_argument("--active", type=int, default=4, help="profiled steps")
    ap.add_argument("--measure", type=int, default=50, help="steps timed without the profiler")
    args = ap.parse_args()

    device = "cuda"
    model, make_batch, loss_fn = build(args.model, args.batch_size, device)
    model.to(device).train()
    if args.sgd:
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False, fused=args.fused_adam or None)
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp)
    transformer = args.model in ("bert", "gpt2")

    def step():
        x, y = make_batch()
        with torch.autocast("cuda", dtype=torch.float16, enabled=args.amp):
            out = model(input_ids=x, labels=y) if transformer else model(x)
            loss = loss_fn(out, y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(10):  # warm up: cuDNN autotuning, allocator
        step()
    torch.cuda.synchronize()

    # Iteration time without the profiler: the ground truth a prediction is compared with.
    times = []
    for _ in range(args.measure):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    print(f"median iteration time: {statistics.median(times) * 1e3:.3f} ms over {len(times)} steps")

    tmp = tempfile.mkdtemp()
    sched = torch.profiler.schedule(wait=1, warmup=2, active=args.active, repeat=1)
    with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=sched, record_shapes=True, with_stack=True, with_modules=True,
            profile_memory=True,
            on_trace_ready=torch.profiler.tensorboard_trace_handler(tmp)) as prof:
        for _ in range(1 + 2 + args.active):
            step()
            prof.step()
    files = [f for f in os.listdir(tmp) if f.endswith(".json")]
    with open(os.path.join(tmp, files[0]), "rb") as src, gzip.open(args.out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    shutil.rmtree(tmp)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
