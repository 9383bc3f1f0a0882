"""Training and evaluation throughput (images/s) of every CIFAR-10 model kind.

Usage: python benchmarks/vision_throughput.py [--repeats 5] [--out results/benchmarks/vision_throughput]

For each model of ``attnconv.models.MODEL_NAMES`` at the named config's sizes (``cpu-quick`` on the CPU; on a
GPU also ``gpu-10min``, the paper's sizes, with bf16 autocast), one training step is: augment a batch on the
device (crop, flip, normalise), forward, cross-entropy, backward, SGD step. One evaluation step is a forward
pass without gradients on a normalised batch. Throughput is the batch size divided by the median time of
``--repeats`` steps, after two warm-up steps. The machine's load average is recorded next to the numbers:
on a shared machine it explains most of their noise.
"""

from __future__ import annotations

import torch

torch.set_flush_denormal(True)  # before the thread pool starts, so every thread inherits it

import argparse  # noqa: E402
import contextlib  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch.nn.functional as F  # noqa: E402
from _measure import machine, write_record  # noqa: E402

from attnconv.data import CropFlip, normalize  # noqa: E402
from attnconv.models import MODEL_NAMES, build_model, count_parameters  # noqa: E402
from attnconv.train import named_config  # noqa: E402
from attnconv.train.provenance import device_description  # noqa: E402


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_time(step, repeats: int, device: torch.device) -> float:
    for _ in range(2):
        step()
    _sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(name: str, config_name: str, device: torch.device, repeats: int) -> dict:
    config = named_config(config_name, name)
    torch.manual_seed(0)
    model = build_model(name, config.model_config).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    amp = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if device.type == "cuda" else contextlib.nullcontext
    augment, gen = CropFlip(), torch.Generator(device).manual_seed(0)
    train_x = torch.randint(0, 256, (config.batch_size, 32, 32, 3), dtype=torch.uint8, device=device)
    train_y = torch.randint(0, 10, (config.batch_size,), device=device)
    eval_x = torch.randint(0, 256, (config.eval_batch_size, 32, 32, 3), dtype=torch.uint8, device=device)

    def train_step():
        model.train()
        with amp():
            loss = F.cross_entropy(model(augment(train_x, gen)).float(), train_y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    @torch.no_grad()
    def eval_step():
        model.eval()
        with amp():
            model(normalize(eval_x))

    train_s = _median_time(train_step, repeats, device)
    eval_s = _median_time(eval_step, repeats, device)
    return {"model": name, "config": config_name, "params": count_parameters(model),
            "train_batch": config.batch_size, "eval_batch": config.eval_batch_size,
            "train_images_per_s": config.batch_size / train_s, "eval_images_per_s": config.eval_batch_size / eval_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="results/benchmarks/vision_throughput")
    args = parser.parse_args()
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    load_start = os.getloadavg()
    rows = []
    for device in devices:
        for config_name in (["cpu-quick"] if device.type == "cpu" else ["gpu-10min"]):
            for name in MODEL_NAMES:
                row = {"device": device_description(device), **measure(name, config_name, device, args.repeats)}
                rows.append(row)
                print(f"{row['device'][:40]:40s} {config_name:10s} {name:20s} {row['params'] / 1e6:6.2f}M  "
                      f"train {row['train_images_per_s']:8.0f} img/s  eval {row['eval_images_per_s']:8.0f} img/s",
                      flush=True)
    meta = {"benchmark": "CIFAR-10 models: training and evaluation throughput", "repeats": args.repeats,
            "statistic": "median", **machine(), "load_average_start": load_start}
    end = meta["load_average"]
    write_record(args.out, {"meta": meta, "rows": rows}, title=meta["benchmark"],
                 note=f"float32 on the CPU (bf16 autocast on a GPU), median of {args.repeats} steps after 2 warm-up "
                      f"steps. Load average (1, 5, 15 min) {load_start[0]:.1f} / {load_start[1]:.1f} / "
                      f"{load_start[2]:.1f} at the start and {end[0]:.1f} / {end[1]:.1f} / {end[2]:.1f} at the end: "
                      "other work shared the cores.",
                 columns=[("device", "{device}"), ("config", "{config}"), ("model", "{model}"),
                          ("params (M)", "{params_m:.2f}"), ("train batch", "{train_batch}"),
                          ("train images/s", "{train_images_per_s:.0f}"), ("eval batch", "{eval_batch}"),
                          ("eval images/s", "{eval_images_per_s:.0f}")],
                 rows=[{**r, "params_m": r["params"] / 1e6} for r in rows])
    print(f"wrote {args.out}.json and {args.out}.md")


if __name__ == "__main__":
    main()
