"""The paper's quadratic attention layer, three ways: forward + backward time and peak memory on the CPU.

Layer shape (Cordonnier et al. 2020): batch 8, a 16 x 16 grid of tokens, hidden 400, 9 heads that all attend over
the input tokens themselves (no value projection), concatenated and mapped 3600 -> 400. All three compute the same
outputs from the same weights:

1. ``attnconv``: ``MultiHeadSelfAttention(..., shared_values=True, value_proj=False)`` with ``QuadraticEncoding``.
   The softmax factorises over rows and columns (P = P_row ⊗ P_col), so the layer attends one axis at a time and
   never forms an N x N matrix.
2. ``naive``: Lemma 2's formula written directly. For every batch element it builds the relative encodings
   r_δ = (‖δ‖², δ_1, δ_2) of all N x N pairs, multiplies them by each head's positional query v^(h), takes the
   softmax and applies the (N_h, N, N) probabilities densely.
3. ``official``: the official ``GaussianSelfAttention`` (isotropic, without the blur trick), written out step by
   step: its parameters (``attention_centers`` μ, ``attention_spreads`` s), its relative-feature table for grids up
   to 50 x 50 (50^4 x 5 floats, 119 MiB), the scores of every (query, key) pair from that table, one softmax, the
   dense contraction of the (H, W, N_h, H, W) probabilities with the tokens, and its ``value`` map. attnconv holds
   the same layer as Δ = μ, α = s²/2 and ``out_proj`` = ``value``.

Usage: python benchmarks/quadratic_attention.py [--repeats 9] [--out results/benchmarks/quadratic_attention]
       python benchmarks/quadratic_attention.py --flush-denormal --out results/benchmarks/quadratic_attention_flushed

Without ``--flush-denormal`` the tails of the softmax underflow into subnormal floats, which x86 CPUs process
5-10x slower, in the naive and official versions; attnconv's factorised softmax sets probabilities below eps²
to zero and has none. With it, the hardware flushes them in all three, and the comparison is of the algorithms
alone.

Timing is interleaved: each round runs one step of every implementation, in a rotating order, so that a change in
the machine's load affects all of them alike; the record keeps the median time and the median of the per-round
time ratios, and the CPU model and load average before and after. Peak memory counts the layer's own buffers (the
119 MiB table included) plus one forward + backward pass: the resident set's high-water mark over a baseline taken
after the input exists, median of three fresh processes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import torch
from _measure import child_peak, cpu_model, machine, peak_since, reset_peak, write_record
from torch import nn

from attnconv import MultiHeadSelfAttention
from attnconv.positional import QuadraticEncoding, quadratic_features, relative_offsets

BATCH, SIDE, HIDDEN, HEADS = 8, 16, 400, 9
TABLE_SIDE = 50  # the official code's maximum grid side
IMPLS = ("attnconv", "naive", "official")


def library_layer() -> MultiHeadSelfAttention:
    torch.manual_seed(0)
    encoding = QuadraticEncoding(HEADS, alpha=torch.rand(HEADS) + 0.5)
    return MultiHeadSelfAttention(HIDDEN, HEADS, head_dim=HIDDEN, positional=encoding, content=False,
                                  shared_values=True, value_proj=False)


class NaiveLayer(nn.Module):
    """Same weights; Lemma 2's logits v^(h) · r_δ built from the N x N x 3 encodings for every batch element."""

    def __init__(self, layer: MultiHeadSelfAttention) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, _ = x.shape
        outs = []
        for i in range(b):
            enc = self.layer.positional
            r = quadratic_features(relative_offsets((h, w)).float())  # (N, N, 3), for this element only
            probs = torch.softmax(torch.einsum("qkp,hp->hqk", r, enc.positional_query()), dim=-1)  # (N_h, N, N)
            heads = probs @ x[i].reshape(h * w, -1)  # (N_h, N, C)
            outs.append(self.layer.out_proj(heads.transpose(0, 1).reshape(h * w, -1)))
        return torch.stack(outs).reshape(b, h, w, -1)


def official_table(side: int = TABLE_SIDE) -> torch.Tensor:
    """The official code's relative-feature table ``(side, side, side, side, 5)``: entry ``[i, j, k, l]`` holds
    (δ0, δ1, δ0², δ1², δ0δ1) for δ = (k, l) - (i, j), key minus query (50^4 x 5 floats, 119 MiB at side 50)."""
    pos = torch.arange(side)
    grid = torch.stack(torch.meshgrid(pos, pos, indexing="ij"), dim=-1)  # (side, side, 2)
    rel = grid[None, None] - grid[:, :, None, None]
    return torch.cat([rel, rel**2, (rel[..., 0] * rel[..., 1])[..., None]], dim=-1).float()


def official_attend(table: torch.Tensor, centers: torch.Tensor, spreads: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The official isotropic Gaussian attention as its forward pass computes it: the scores of every (query, key)
    pair from ``table``, one softmax over all keys, and the dense contraction of the ``(H, W, N_h, H, W)``
    probabilities with the tokens ``x`` ``(B, H, W, D)``. Returns ``(B, H, W, N_h * D)``, heads concatenated.
    ``centers`` μ ``(N_h, 2)``, ``spreads`` s ``(N_h,)``: attnconv's Δ = μ and α = s²/2."""
    b, w, h, _ = x.shape
    heads = centers.shape[0]
    a = spreads**2
    mu1, mu2 = centers[:, 0], centers[:, 1]
    zero = torch.zeros_like(a)
    target = -0.5 * torch.stack([-2 * a * mu1, -2 * a * mu2, a, a, zero], dim=-1)  # (N_h, 5)
    scores = torch.einsum("ijkld,hd->ijhkl", table[:w, :h, :w, :h], target)
    probs = torch.softmax(scores.reshape(w, h, heads, -1), dim=-1).reshape(w, h, heads, w, h)
    return torch.einsum("ijhkl,bkld->bijhd", probs.to(x.dtype), x).reshape(b, w, h, -1)


class OfficialLayer(nn.Module):
    """The official GaussianSelfAttention's forward pass (isotropic, no blur trick), with attnconv's weights copied in:
    μ = Δ, s = √(2α), ``value`` = ``out_proj``."""

    def __init__(self, layer: MultiHeadSelfAttention, side: int = TABLE_SIDE) -> None:
        super().__init__()
        enc = layer.positional
        self.attention_centers = nn.Parameter(enc.centers.detach().clone())
        self.attention_spreads = nn.Parameter((2 * enc.alpha.detach()).sqrt())
        self.value = layer.out_proj
        self.register_buffer("R", official_table(side))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.value(official_attend(self.R, self.attention_centers, self.attention_spreads, x))


def build(impl: str) -> nn.Module:
    layer = library_layer()
    return {"attnconv": lambda: layer, "naive": lambda: NaiveLayer(layer), "official": lambda: OfficialLayer(layer)}[impl]()


def forward(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    out = module(x)
    return out[0] if isinstance(out, tuple) else out


def step_fn(module: nn.Module, x: torch.Tensor):
    return lambda: forward(module, x).sum().backward()


def child(impl: str) -> None:
    torch.manual_seed(1)
    x = torch.randn(BATCH, SIDE, SIDE, HIDDEN, requires_grad=True)
    baseline = reset_peak()
    module = build(impl)
    step_fn(module, x)()
    print(json.dumps({"peak_mib": peak_since(baseline)}))


def interleaved_times(steps: dict, repeats: int, warmup: int = 2) -> dict[str, list[float]]:
    """Seconds per step of each implementation, ``repeats`` rounds, each round running every one once in a rotating
    order."""
    names = list(steps)
    for _ in range(warmup):
        for name in names:
            steps[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = time.perf_counter()
            steps[name]()
            times[name].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", default="results/benchmarks/quadratic_attention")
    parser.add_argument("--flush-denormal", action="store_true",
                        help="flush subnormal floats to zero in every implementation (torch.set_flush_denormal)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_flush_denormal(args.flush_denormal)
    if args.child:
        return child(args.child)

    load_before = list(os.getloadavg())
    torch.manual_seed(1)
    x = torch.randn(BATCH, SIDE, SIDE, HIDDEN, requires_grad=True)
    modules = {impl: build(impl) for impl in IMPLS}
    with torch.no_grad():
        reference = forward(modules["attnconv"], x)
        max_diff = {impl: float((forward(m, x) - reference).abs().max()) for impl, m in modules.items()}
    times = interleaved_times({impl: step_fn(m, x) for impl, m in modules.items()}, args.repeats)
    flush = ["--flush-denormal"] * args.flush_denormal
    rows = {}
    for impl in IMPLS:
        ms = 1000 * statistics.median(times[impl])
        rows[impl] = {"ms": ms, "ms_runs": [1000 * t for t in times[impl]],
                      "peak_mib": child_peak(__file__, ["--child", impl] + flush), "max_abs_diff": max_diff[impl]}
        print(f"{impl:10s} {ms:8.1f} ms  peak {rows[impl]['peak_mib']:7.1f} MiB  max |diff| {max_diff[impl]:.1e}",
              flush=True)
    ours = times["attnconv"]
    ratios = {
        "speedup_vs_naive": statistics.median(n / o for n, o in zip(times["naive"], ours)),
        "speedup_vs_official": statistics.median(n / o for n, o in zip(times["official"], ours)),
        "memory_vs_official": rows["attnconv"]["peak_mib"] / rows["official"]["peak_mib"],
    }
    meta = {"benchmark": "quadratic attention layer, forward + backward", "batch": BATCH, "grid": [SIDE, SIDE],
            "hidden": HIDDEN, "heads": HEADS, "head_dim": HIDDEN, "repeats": args.repeats,
            "statistic": "median over interleaved rounds; speedups are medians of per-round ratios",
            "flush_denormal": args.flush_denormal, "cpu_model": cpu_model(), **machine(),
            "load_average_before": load_before}
    meta["load_average_after"] = meta.pop("load_average")
    loaded = max(load_before[0], meta["load_average_after"][0]) > (meta["cpus"] or 1)
    summary = (f"attnconv is {ratios['speedup_vs_naive']:.2f}x as fast as naive and "
               f"{ratios['speedup_vs_official']:.2f}x as fast as the official layer, with "
               f"{ratios['memory_vs_official']:.2f}x the official layer's peak memory.")
    load_note = (f" CPU: {meta['cpu_model']}; 1-minute load average {load_before[0]:.1f} before and "
                 f"{meta['load_average_after'][0]:.1f} after" + (
                     f", above the {meta['cpus']} cores: the machine was shared and busy, so times are inflated and "
                     "noisy; the interleaved rounds give every implementation the same load." if loaded else "."))
    write_record(args.out, {"meta": meta, "rows": rows, "ratios": ratios}, title=meta["benchmark"],
                 note=f"batch {BATCH}, {SIDE}x{SIDE} tokens, hidden {HIDDEN}, {HEADS} heads attending over the input "
                      f"tokens (no value projection), float32, median of {args.repeats} interleaved rounds. Subnormal "
                      "floats " + ("flushed to zero in every implementation (--flush-denormal)." if args.flush_denormal
                                   else "left as they are: only attnconv's flushed softmax avoids them.") + load_note,
                 columns=[("implementation", "{name}"), ("time (ms)", "{ms:.1f}"), ("peak memory (MiB)", "{peak_mib:.1f}"),
                          ("max abs diff vs attnconv", "{max_abs_diff:.1e}")],
                 rows=[{"name": k, **v} for k, v in rows.items()], summary=summary)
    print(summary)


if __name__ == "__main__":
    main()
