"""The paper's quadratic attention layer, three ways: forward + backward time and peak memory on the CPU.

Layer shape (Cordonnier et al. 2020): batch 8, a 16 x 16 grid of tokens, hidden 400, 9 heads of dimension 400
sharing one value projection, concatenated (3600 -> 400). All three compute the same outputs:

1. ``attnconv``: ``MultiHeadSelfAttention`` with ``QuadraticEncoding``. The softmax factorises over rows and
   columns (P = P_row ⊗ P_col), so the layer attends one axis at a time and never forms an N x N matrix.
2. ``naive``: Lemma 2's formula written directly. For every batch element it builds the relative encodings
   r_δ = (‖δ‖², δ_1, δ_2) of all N x N pairs, multiplies them by each head's positional query v^(h), takes the
   softmax and applies the (N_h, N, N) probabilities densely.
3. ``dense-table``: the published implementation's approach. It keeps a relative-feature table for positions
   up to 50 x 50 (50^4 x 5 floats, 119 MiB), slices it to the grid, computes the probabilities once per forward
   pass and applies them densely.

Usage: python benchmarks/quadratic_attention.py [--repeats 7] [--out results/benchmarks/quadratic_attention]
       python benchmarks/quadratic_attention.py --flush-denormal --out results/benchmarks/quadratic_attention_flushed

Without ``--flush-denormal`` the tails of the softmax underflow into subnormal floats, which x86 CPUs process
5-10x slower, in the naive and dense-table versions; attnconv's factorised softmax sets probabilities below eps²
to zero and has none. With it, the hardware flushes them in all three, and the comparison is of the algorithms
alone.

Peak memory counts the layer's own buffers (the 119 MiB table included) plus one forward + backward pass:
the resident set's high-water mark over a baseline taken after the input exists, median of three fresh
processes.
"""

from __future__ import annotations

import argparse
import json

import torch
from _measure import child_peak, machine, median_time, peak_since, reset_peak, write_record
from torch import nn

from attnconv import MultiHeadSelfAttention
from attnconv.positional import QuadraticEncoding, quadratic_features, relative_offsets

BATCH, SIDE, HIDDEN, HEADS = 8, 16, 400, 9
TABLE_SIDE = 50  # the published code's maximum grid side


def library_layer() -> MultiHeadSelfAttention:
    torch.manual_seed(0)
    encoding = QuadraticEncoding(HEADS, alpha=torch.rand(HEADS) + 0.5)
    return MultiHeadSelfAttention(HIDDEN, HEADS, head_dim=HIDDEN, positional=encoding, content=False,
                                  shared_values=True)


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
            v = self.layer.v_proj(x[i].reshape(h * w, -1))  # (N, D_h)
            heads = probs @ v  # (N_h, N, D_h)
            outs.append(self.layer.out_proj(heads.transpose(0, 1).reshape(h * w, -1)))
        return torch.stack(outs).reshape(b, h, w, -1)


class DenseTableLayer(nn.Module):
    """Same weights; a (50, 50, 50, 50, 5) relative-feature table, probabilities once per forward pass."""

    def __init__(self, layer: MultiHeadSelfAttention, side: int = TABLE_SIDE) -> None:
        super().__init__()
        self.layer = layer
        pos = torch.arange(side, dtype=torch.float32)
        d1 = pos[None, None, :, None] - pos[:, None, None, None]  # key row - query row
        d2 = pos[None, None, None, :] - pos[None, :, None, None]  # key col - query col
        d1, d2 = torch.broadcast_tensors(d1, d2)
        # r_δ = (δ1², δ2², δ1 δ2, δ1, δ2): the generalised encoding, kept for every pair of positions
        self.register_buffer("table", torch.stack([d1**2, d2**2, d1 * d2, d1, d2], dim=-1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, _ = x.shape
        enc = self.layer.positional
        alpha, c = enc.alpha, enc.centers  # (N_h,), (N_h, 2)
        query = torch.stack([-alpha, -alpha, torch.zeros_like(alpha), 2 * alpha * c[:, 0], 2 * alpha * c[:, 1]], -1)
        r = self.table[:h, :w, :h, :w].reshape(h * w, h * w, 5)  # (N, N, 5)
        probs = torch.softmax(torch.einsum("qkp,hp->hqk", r, query), dim=-1)  # (N_h, N, N), once per pass
        v = self.layer.v_proj(x.reshape(b, h * w, -1))[:, None]  # (B, 1, N, D_h)
        heads = probs @ v  # (B, N_h, N, D_h)
        return self.layer.out_proj(heads.transpose(1, 2).reshape(b, h * w, -1)).reshape(b, h, w, -1)


def build(impl: str, x: torch.Tensor) -> nn.Module:
    layer = library_layer()
    return {"attnconv": lambda: layer, "naive": lambda: NaiveLayer(layer),
            "dense-table": lambda: DenseTableLayer(layer)}[impl]()


def forward(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    out = module(x)
    return out[0] if isinstance(out, tuple) else out


def step_fn(module: nn.Module, x: torch.Tensor):
    return lambda: forward(module, x).sum().backward()


def child(impl: str) -> None:
    torch.manual_seed(1)
    x = torch.randn(BATCH, SIDE, SIDE, HIDDEN, requires_grad=True)
    baseline = reset_peak()
    module = build(impl, x)
    step_fn(module, x)()
    print(json.dumps({"peak_mib": peak_since(baseline)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default="results/benchmarks/quadratic_attention")
    parser.add_argument("--flush-denormal", action="store_true",
                        help="flush subnormal floats to zero in every implementation (torch.set_flush_denormal)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_flush_denormal(args.flush_denormal)
    if args.child:
        return child(args.child)

    torch.manual_seed(1)
    x = torch.randn(BATCH, SIDE, SIDE, HIDDEN, requires_grad=True)
    impls = ("attnconv", "naive", "dense-table")
    modules = {impl: build(impl, x) for impl in impls}
    with torch.no_grad():
        reference = forward(modules["attnconv"], x)
        max_diff = {impl: float((forward(m, x) - reference).abs().max()) for impl, m in modules.items()}
    rows = {}
    for impl in impls:
        ms = 1000 * median_time(step_fn(modules[impl], x), args.repeats)
        rows[impl] = {"ms": ms, "peak_mib": child_peak(__file__, ["--child", impl] + ["--flush-denormal"] * args.flush_denormal), "max_abs_diff": max_diff[impl]}
        print(f"{impl:12s} {ms:8.1f} ms  peak {rows[impl]['peak_mib']:7.1f} MiB  max |diff| {max_diff[impl]:.1e}",
              flush=True)
    ours = rows["attnconv"]
    ratios = {
        "speedup_vs_naive": rows["naive"]["ms"] / ours["ms"],
        "speedup_vs_dense_table": rows["dense-table"]["ms"] / ours["ms"],
        "memory_vs_dense_table": ours["peak_mib"] / rows["dense-table"]["peak_mib"],
    }
    meta = {"benchmark": "quadratic attention layer, forward + backward", "batch": BATCH, "grid": [SIDE, SIDE],
            "hidden": HIDDEN, "heads": HEADS, "head_dim": HIDDEN, "repeats": args.repeats, "statistic": "median",
            "flush_denormal": args.flush_denormal, **machine()}
    summary = (f"attnconv is {ratios['speedup_vs_naive']:.2f}x faster than naive, "
               f"{ratios['speedup_vs_dense_table']:.2f}x faster than the dense table, and uses "
               f"{ratios['memory_vs_dense_table']:.2f}x its peak memory.")
    write_record(args.out, {"meta": meta, "rows": rows, "ratios": ratios}, title=meta["benchmark"],
                 note=f"batch {BATCH}, {SIDE}x{SIDE} tokens, hidden {HIDDEN}, {HEADS} heads of dimension {HIDDEN} "
                      f"(shared values), float32, median of {args.repeats} runs. Subnormal floats "
                      + ("flushed to zero in every implementation (--flush-denormal)." if args.flush_denormal else
                         "left as they are: only attnconv's flushed softmax avoids them."),
                 columns=[("implementation", "{name}"), ("time (ms)", "{ms:.1f}"), ("peak memory (MiB)", "{peak_mib:.1f}"),
                          ("max abs diff vs attnconv", "{max_abs_diff:.1e}")],
                 rows=[{"name": k, **v} for k, v in rows.items()], summary=summary)
    print(summary)


if __name__ == "__main__":
    main()
