"""How close each CIFAR-10 model's training step comes to the machine's matrix-multiply roofline (CPU).

Usage: python benchmarks/training_roofline.py [--rounds 5] [--steps 2] [--threads 1 2] [--model-threads 1]
       [--compile] [--out results/benchmarks/training_roofline]

In one interleaved run (every round measures every case once, so a change in the machine's load touches all of
them alike) it measures:

- the roofline: the GFLOP/s of a 1024³ matrix product per precision (float32, bfloat16) and thread count;
- every vision model at ``cpu-quick`` width: one training step (forward, cross-entropy, backward, SGD with
  momentum) on a batch of 100 images, in float32 and under bfloat16 autocast, as the trainer runs it (layer
  checks deferred to the loss, :mod:`attnconv.finite`). Its training FLOPs are 3 x the forward FLOPs of
  :func:`attnconv.models.model_cost`; achieved GFLOP/s over the roofline of the same precision and threads is
  its share of the roofline;
- the same step with the layer code as it was before the fast paths ("reference": per-example factorised
  attention :func:`attnconv.attention.attend_factorized_reference`, ``nn.Dropout``, a finiteness check in every
  attention layer), for every attention model;
- each of resnet18, sa-quadratic and sa-learned with its weight layers alone ("weight-layers": every
  ``nn.Linear`` and ``nn.Conv2d``, forward and backward, at the shapes a training batch gives them): a step cannot
  be faster than they are, so the whole model's training FLOPs over their time bound its share of the roofline
  from above, and that bound over resnet18's share bounds the ratio the fast paths could reach;
- sa-quadratic with the official model's attention ("official": the dense Gaussian attention of the official code,
  transcribed in ``quadratic_attention.py``: scores of every query-key pair from its relative-feature table, one
  softmax over all keys, one dense contraction), at ``cpu-quick`` width and, on a batch of 8, at the paper's width
  (``paper``: hidden 400, 6 layers), beside attnconv's fast path on the same weights and batch; the two compute the
  same outputs (checked when the case is built);
- one attention layer alone (forward and backward), fast and reference;
- what the trainer's data pipeline (crop, flip, normalise) costs per batch;
- with ``--compile``, ``torch.compile`` of sa-quadratic and resnet18 in both precisions.

Times are CPU seconds of this process (``time.process_time``) as well as wall seconds: on a shared machine the
wall clock also counts the time other processes hold the cores, the CPU clock does not. Shares and img/s are
reported from CPU time (per thread, a thread's CPU second is what the roofline was measured in); the medians of
both clocks are in the JSON. The load average, the CPU model and flags, versions and the commit are recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import machine, write_record  # noqa: E402
from quadratic_attention import official_attend, official_table  # noqa: E402

import attnconv.attention as attention  # noqa: E402
from attnconv.data import CropFlip  # noqa: E402
from attnconv.finite import deferred_finite_checks  # noqa: E402
from attnconv.models import MODEL_NAMES, SelfAttentionNet, build_model, model_cost  # noqa: E402
from attnconv.models.vision import AttentionBlock, make_attention  # noqa: E402
from attnconv.train import named_config  # noqa: E402
from attnconv.train.provenance import git_commit  # noqa: E402

BATCH = 100
PAPER_BATCH = 8  # the paper-width cases: 6 layers of width 400 on a batch of 100 take half a minute a step
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def cpu_info() -> dict:
    """The CPU's model name and instruction-set flags (Linux), and the cores this process may use."""
    name, flags = platform.processor() or "unknown", []
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name") and name in ("unknown", platform.processor()):
                name = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line.split(":", 1)[1].split()
    wanted = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "avx_vnni", "fma")
    return {"model": name, "simd_flags": [f for f in wanted if f in flags],
            "available_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()}


class Timer:
    """Median CPU and wall seconds of a callable over interleaved rounds."""

    def __init__(self, fn: Callable[[], None], threads: int, per_call: int = 1) -> None:
        self.fn, self.threads, self.per_call = fn, threads, per_call
        self.cpu: list[float] = []
        self.wall: list[float] = []

    def warm(self, calls: int = 2) -> None:
        torch.set_num_threads(self.threads)
        for _ in range(calls):
            self.fn()

    def once(self) -> None:
        torch.set_num_threads(self.threads)
        c, w = time.process_time(), time.perf_counter()
        for _ in range(self.per_call):
            self.fn()
        self.cpu.append((time.process_time() - c) / self.per_call)
        self.wall.append((time.perf_counter() - w) / self.per_call)

    def medians(self) -> dict:
        return {"cpu_s": statistics.median(self.cpu), "wall_s": statistics.median(self.wall),
                "cpu_s_all": self.cpu, "wall_s_all": self.wall}


def gemm_case(dtype: torch.dtype, n: int = 1024) -> Callable[[], None]:
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    return lambda: torch.mm(a, b)


@contextlib.contextmanager
def reference_layers(net: nn.Module):
    """The layer code as it was before the fast paths, for the models built inside: per-example factorised
    attention, ``nn.Dropout`` in every block, and every attention layer checking its output."""
    saved_merge = attention.MultiHeadSelfAttention.attend_factorized_merged
    drops = [(block, block.drop) for block in net.modules() if isinstance(block, AttentionBlock)]
    attention.MultiHeadSelfAttention.attend_factorized_merged = (
        lambda self, axes, v, grid: self.merge_heads(attention.attend_factorized_reference(axes, v, grid), grid))
    for block, drop in drops:
        block.drop = nn.Dropout(drop.p)
    try:
        yield
    finally:
        attention.MultiHeadSelfAttention.attend_factorized_merged = saved_merge
        for block, drop in drops:
            block.drop = drop


@contextlib.contextmanager
def official_layers(net: nn.Module):
    """Inside: every quadratic attention layer of ``net`` attends as the official model does
    (:func:`quadratic_attention.official_attend` over its shared values, then ``W_out``)."""
    layers = [m for m in net.modules() if isinstance(m, attention.MultiHeadSelfAttention)]
    table = official_table(16)  # the 16 x 16 token grid of a 32 x 32 image in 2 x 2 blocks

    def attend(layer, axes, v, grid):
        b, shared, n, d = v.shape
        if shared != 1:
            raise ValueError("the official model's heads share one value map")
        enc = layer.positional
        mixed = official_attend(table, enc.centers, (2 * enc.alpha).sqrt(), v.reshape(b, *grid, d))
        return layer.out_proj(mixed.reshape(b, n, -1)).view(b, *grid, layer.out_dim)
    for layer in layers:
        layer.attend_factorized_merged = lambda axes, v, grid, _layer=layer: attend(_layer, axes, v, grid)
    try:
        yield
    finally:
        for layer in layers:
            del layer.attend_factorized_merged


def train_case(name: str, precision: str, reference: bool = False, compiled: bool = False, official: bool = False,
               config_name: str = "cpu-quick", batch: int = BATCH) -> tuple[Callable, dict]:
    """One training step of ``name`` at ``config_name``'s width on ``batch`` images, and the model's cost.
    ``official``: with the official model's attention (:func:`official_layers`), after checking that its logits
    equal the fast path's on the same weights and batch."""
    config = named_config(config_name, name)
    torch.manual_seed(0)
    net = build_model(name, config.model_config)
    cost = model_cost(net)
    model = torch.compile(net) if compiled else net
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 32, 32, 3)
    y = torch.randint(0, 10, (batch,))
    dtype = DTYPES[precision]
    if official:
        with torch.no_grad():
            fast = net.eval()(x)
            with official_layers(net):
                theirs = net(x)
        net.train()
        if not torch.allclose(fast, theirs, rtol=1e-4, atol=1e-4):
            raise RuntimeError(f"the official attention differs from attnconv's by {(fast - theirs).abs().max():.2e}")

    def step() -> None:
        checks = contextlib.nullcontext() if reference else deferred_finite_checks()
        layers = (reference_layers(net) if reference else official_layers(net) if official
                  else contextlib.nullcontext())
        with layers, checks, torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float(), y)
        if not torch.isfinite(loss):
            raise RuntimeError(f"{name}: non-finite loss in the benchmark")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return step, cost.as_dict()


def weight_layers_case(name: str, precision: str) -> tuple[Callable[[], None], int]:
    """The model's weight layers alone (every ``nn.Linear`` and ``nn.Conv2d``), forward and backward, at the shapes
    one cpu-quick training batch gives them, with nothing between them; and their forward FLOPs.

    A training step cannot be faster than its weight layers, so ``3 x forward FLOPs of the whole model`` over this
    time bounds the step's share of the roofline from above: the share it would have if attention, norms,
    activations, dropout and copies cost nothing.
    """
    config = named_config("cpu-quick", name)
    torch.manual_seed(0)
    net = build_model(name, config.model_config)
    seen: list[tuple[nn.Module, torch.Size, torch.Size]] = []
    hooks = [m.register_forward_hook(lambda mod, inp, out: seen.append((mod, inp[0].shape, out.shape)))
             for m in net.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
    with torch.no_grad():
        net(torch.randn(BATCH, 32, 32, 3))
    for hook in hooks:
        hook.remove()
    flops = 0
    for mod, inp, out in seen:
        if isinstance(mod, nn.Linear):
            flops += 2 * out.numel() * mod.in_features
        else:
            flops += 2 * out.numel() * (mod.in_channels // mod.groups) * mod.kernel_size[0] * mod.kernel_size[1]
    replay = [(mod, torch.randn(inp).requires_grad_(), torch.randn(out)) for mod, inp, out in seen]
    dtype = DTYPES[precision]

    def step() -> None:
        for mod, inp, grad in replay:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
                result = mod(inp)
            result.backward(grad.to(result.dtype))
        net.zero_grad(set_to_none=True)
    return step, flops


def layer_case(precision: str, reference: bool) -> Callable[[], None]:
    """One cpu-quick sa-quadratic attention layer, forward and backward, on a batch of 100 token grids."""
    torch.manual_seed(0)
    layer = make_attention(named_config("cpu-quick", "sa-quadratic").sa)
    x = torch.randn(BATCH, 16, 16, layer.embed_dim, requires_grad=True)
    grad = torch.randn(BATCH, 16, 16, layer.out_dim)
    dtype = DTYPES[precision]
    holder = nn.Module()
    holder.attn = layer

    def step() -> None:
        ctx = reference_layers(holder) if reference else deferred_finite_checks()
        with ctx, torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            out, _ = layer(x)
        out.backward(grad.to(out.dtype))
    return step


def data_case() -> Callable[[], None]:
    """The trainer's per-step data work: draw crops and flips, gather, normalise a uint8 batch."""
    images = torch.randint(0, 256, (10_000, 32, 32, 3), dtype=torch.uint8)
    order = torch.randperm(len(images))
    augment, gen = CropFlip(), torch.Generator().manual_seed(0)
    state = {"i": 0}

    def step() -> None:
        i = state["i"] = (state["i"] + 1) % (len(images) // BATCH)
        params = augment.sample(BATCH, gen)
        augment.apply(images[order[i * BATCH:(i + 1) * BATCH]], params)
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2, help="training steps per measurement")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts of the roofline")
    parser.add_argument("--model-threads", type=int, nargs="+", default=[1], help="thread counts of the models")
    parser.add_argument("--models", nargs="+", default=list(MODEL_NAMES))
    parser.add_argument("--reference-models", nargs="*", default=["sa-quadratic", "sa-learned"],
                        help="models also timed with the reference layer code")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps per case before the rounds")
    parser.add_argument("--no-paper", dest="paper", action="store_false",
                        help="skip the paper-width cases (about 2 s a step each)")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile (minutes of compiling)")
    parser.add_argument("--out", default="results/benchmarks/training_roofline")
    args = parser.parse_args()

    load_before = list(os.getloadavg())
    code = git_commit()  # before the first round rewrites the tracked record, which would read as a dirty tree
    cases: dict[str, tuple[Timer, dict]] = {}
    for threads in args.threads:
        for precision, dtype in DTYPES.items():
            cases[f"gemm/{precision}/{threads}"] = (Timer(gemm_case(dtype), threads, per_call=4),
                                                    {"kind": "gemm", "precision": precision, "threads": threads,
                                                     "flops": 2 * 1024**3})
    for threads in args.model_threads:
        for name in args.models:
            for precision in DTYPES:
                variants = [False, True] if name in args.reference_models else [False]
                for reference in variants:
                    step, cost = train_case(name, precision, reference)
                    label = f"{name}/{precision}/{threads}" + ("/reference" if reference else "")
                    cases[label] = (Timer(step, threads, args.steps),
                                    {"kind": "train", "model": name, "precision": precision, "threads": threads,
                                     "path": "reference" if reference else "fast", "cost": cost,
                                     "flops": 3 * cost["flops"] * BATCH})
    for threads in args.model_threads:
        for name in ("resnet18", "sa-quadratic", "sa-learned"):
            if name not in args.models:
                continue
            for precision in DTYPES:
                step, weight_flops = weight_layers_case(name, precision)
                cost = cases[f"{name}/{precision}/{threads}"][1]["cost"]
                cases[f"{name}/{precision}/{threads}/weight-layers"] = (Timer(step, threads, args.steps), {
                    "kind": "weights", "model": name, "precision": precision, "threads": threads,
                    "weight_flops": 3 * weight_flops, "flops": 3 * cost["flops"] * BATCH})
    for config_name, batch in (("cpu-quick", BATCH), ("paper", PAPER_BATCH)):
        if "sa-quadratic" not in args.models or (config_name == "paper" and not args.paper):
            continue
        for precision in DTYPES:
            for path in (("fast", "official") if config_name == "paper" else ("official",)):
                step, cost = train_case("sa-quadratic", precision, official=path == "official",
                                        config_name=config_name, batch=batch)
                label = (f"sa-quadratic/{precision}/1" + ("/paper" if config_name == "paper" else "")
                         + ("/official" if path == "official" else ""))
                cases[label] = (Timer(step, 1, args.steps), {
                    "kind": "train", "model": "sa-quadratic", "precision": precision, "threads": 1, "path": path,
                    "width": config_name, "batch": batch, "cost": cost, "flops": 3 * cost["flops"] * batch})
    if args.compile:
        for name in ("resnet18", "sa-quadratic"):
            for precision in DTYPES:
                step, cost = train_case(name, precision, compiled=True)
                cases[f"{name}/{precision}/1/compiled"] = (Timer(step, 1, args.steps), {
                    "kind": "train", "model": name, "precision": precision, "threads": 1, "path": "compiled",
                    "cost": cost, "flops": 3 * cost["flops"] * BATCH})
    for precision in DTYPES:
        for reference in (False, True):
            cases[f"layer/{precision}/{'reference' if reference else 'fast'}"] = (
                Timer(layer_case(precision, reference), 1, args.steps),
                {"kind": "layer", "precision": precision, "threads": 1, "path": "reference" if reference else "fast"})
    cases["data/1"] = (Timer(data_case(), 1, 10), {"kind": "data", "threads": 1})

    for label, (timer, _) in cases.items():
        print("warming", label, flush=True)
        timer.warm(args.warmup + 2 if "compiled" in label else args.warmup)
    for r in range(args.rounds):
        for label, (timer, _) in cases.items():
            timer.once()
        print(f"round {r + 1}/{args.rounds} done, load {os.getloadavg()[0]:.1f}", flush=True)
        text = report(args, cases, load_before, r + 1, code)
    print(text)


def report(args, cases, load_before, rounds_done: int, code: dict) -> str:
    """Write the record of the rounds done so far (each round rewrites it) and return its Markdown; ``code`` is
    :func:`git_commit` taken before the rounds."""
    rows = []
    for label, (timer, info) in cases.items():
        rows.append({"case": label, **info, **timer.medians()})
    roof = {(r["precision"], r["threads"]): r["flops"] / r["cpu_s"] * r["threads"] / 1e9
            for r in rows if r["kind"] == "gemm"}  # GFLOP/s per thread-second x threads
    for r in rows:
        if r["kind"] == "gemm":
            r["gflops"] = roof[(r["precision"], r["threads"])]
            r["gflops_wall"] = r["flops"] / r["wall_s"] / 1e9
        if r["kind"] == "train":
            r["img_per_s"] = r.get("batch", BATCH) / r["cpu_s"] * r["threads"]
            r["img_per_s_wall"] = r.get("batch", BATCH) / r["wall_s"]
            r["gflops"] = r["flops"] / r["cpu_s"] * r["threads"] / 1e9
            r["roofline_share"] = r["gflops"] / roof[(r["precision"], r["threads"])]
        if r["kind"] == "weights":  # the weight layers' own rate, and the bound it puts on the whole step's share
            r["gflops"] = r["weight_flops"] / r["cpu_s"] * r["threads"] / 1e9
            r["weight_share"] = r["gflops"] / roof[(r["precision"], r["threads"])]
            r["share_bound"] = r["flops"] / r["cpu_s"] * r["threads"] / 1e9 / roof[(r["precision"], r["threads"])]
    by = {r["case"]: r for r in rows}
    summary = {}
    for precision in DTYPES:
        for threads in args.model_threads:
            sa, cnn = by.get(f"sa-quadratic/{precision}/{threads}"), by.get(f"resnet18/{precision}/{threads}")
            ref = by.get(f"sa-quadratic/{precision}/{threads}/reference")
            bound = by.get(f"sa-quadratic/{precision}/{threads}/weight-layers")
            if sa and cnn:
                summary[f"{precision}/{threads}"] = {
                    "sa_quadratic_share": sa["roofline_share"], "resnet18_share": cnn["roofline_share"],
                    "share_ratio": sa["roofline_share"] / cnn["roofline_share"], "goal": 0.9,
                    "speedup_over_reference": ref["cpu_s"] / sa["cpu_s"] if ref else None,
                    # the ratio sa-quadratic would reach if everything but its weight layers cost nothing
                    "share_ratio_bound": bound["share_bound"] / cnn["roofline_share"] if bound else None}
            for width, fast_label in (("cpu-quick", f"sa-quadratic/{precision}/1"),
                                      ("paper", f"sa-quadratic/{precision}/1/paper")):
                fast, theirs = by.get(fast_label), by.get(fast_label + "/official")
                if fast and theirs:  # > 1: attnconv's step is faster than the official model's
                    summary.setdefault("official", {})[f"{precision}/{width}"] = {
                        "attnconv_img_per_s": fast["img_per_s"], "official_img_per_s": theirs["img_per_s"],
                        "speedup_over_official": theirs["cpu_s"] / fast["cpu_s"], "batch": fast.get("batch", BATCH)}
    record = {"meta": {**machine(), "cpu": cpu_info(), **code, "load_average_before": load_before,
                       "load_average_after": list(os.getloadavg()), "batch": BATCH, "rounds": rounds_done,
                       "steps_per_measurement": args.steps, "clock": "process CPU time (wall time also recorded)"},
              "summary": summary, "rows": rows}
    table = []
    for r in rows:
        if r["kind"] == "gemm":
            table.append({"case": r["case"], "ips": "", "gf": f"{r['gflops']:.0f}", "share": "", "wall": f"{r['wall_s'] * 1e3:.1f}"})
        elif r["kind"] == "train":
            table.append({"case": r["case"], "ips": f"{r['img_per_s']:.{0 if r['img_per_s'] >= 20 else 1}f}", "gf": f"{r['gflops']:.1f}",
                          "share": f"{100 * r['roofline_share']:.1f}%", "wall": f"{r['wall_s'] * 1e3:.0f}"})
        elif r["kind"] == "weights":
            table.append({"case": r["case"], "ips": "", "gf": f"{r['gflops']:.1f}",
                          "share": f"{100 * r['weight_share']:.1f}% (step <= {100 * r['share_bound']:.1f}%)",
                          "wall": f"{r['wall_s'] * 1e3:.0f}"})
        else:
            table.append({"case": r["case"], "ips": "", "gf": "", "share": "", "wall": f"{r['wall_s'] * 1e3:.1f}",
                          "cpu": r["cpu_s"]})
    for t, r in zip(table, rows):
        t["cpu_ms"] = f"{r['cpu_s'] * 1e3:.1f}"
    official = summary.get("official", {})
    lines = [f"{k}: sa-quadratic {100 * v['sa_quadratic_share']:.1f}% of the roofline, resnet18 "
             f"{100 * v['resnet18_share']:.1f}%, ratio {v['share_ratio']:.2f} (goal >= 0.9); fast path "
             + (f"{v['speedup_over_reference']:.2f}x the reference" if v["speedup_over_reference"] else "")
             + (f"; even with nothing but its weight layers costing time, the ratio could reach only "
                f"{v['share_ratio_bound']:.2f}" if v["share_ratio_bound"] else "")
             for k, v in summary.items() if k != "official"]
    lines += [f"{k}: attnconv's sa-quadratic step {v['speedup_over_official']:.2f}x as fast as the official model's "
              f"attention on the same weights ({v['attnconv_img_per_s']:.1f} against {v['official_img_per_s']:.1f} "
              f"img/s, batch {v['batch']})" for k, v in official.items()]
    text = write_record(
        args.out, record, title="Training steps against the matrix-multiply roofline (CPU, cpu-quick widths)",
        note=(f"Batch {BATCH}; medians of {rounds_done} interleaved rounds of {args.steps} steps; img/s, GFLOP/s and "
              f"the share of the roofline from process CPU time (training FLOPs = 3 x forward). CPU "
              f"{record['meta']['cpu']['model']} ({', '.join(record['meta']['cpu']['simd_flags'])}); load average "
              f"{load_before[0]:.1f} before, {record['meta']['load_average_after'][0]:.1f} after; commit "
              f"{str(record['meta']['commit'])[:10]}."),
        columns=[("case", "{case}"), ("img/s", "{ips}"), ("GFLOP/s", "{gf}"), ("share of roofline", "{share}"),
                 ("CPU ms", "{cpu_ms}"), ("wall ms", "{wall}")],
        rows=table, summary="\n".join(lines))
    return text


if __name__ == "__main__":
    main()
