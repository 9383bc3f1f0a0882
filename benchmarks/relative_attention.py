"""Forward + backward time and peak memory of composite relative attention: band vs repeated-index gather.

Usage: python benchmarks/relative_attention.py [--repeats 5] [--threads T] [--out results/benchmarks/relative_attention]

Both implementations compute the same layer: content + fixed bias + query-dependent (Shaw et al.) +
key-dependent terms, clipped at k = ``MAX_DISTANCE``, with the weights of one
:class:`attnconv.CompositeAttention`. The naive one follows the pattern of the official code of Chang et al.:
on every forward pass it repeats the ``(N, N)`` relative index over batch and heads into a ``(B, N_h, N, N)``
int64 tensor and gathers each term's logits with it. attnconv's layer expands every band with one shared
``(N, N)`` index view and processes the queries in chunks (its default size). Outputs and input gradients are
checked to agree (float64) before anything is timed.

Time: the median of ``--repeats`` runs after two warm-up runs, the two implementations taking turns so that a
busy machine slows both alike. ``--threads`` sets ``torch.set_num_threads`` (default: PyTorch's choice); on a
machine shared with other jobs, one thread measures the work rather than the scheduling. Peak memory: the growth
of the resident set's high-water mark over one forward + backward pass in a fresh process, median of three
(``benchmarks/_measure.py``).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
from _measure import child_peak, machine, print_step_peak, write_record

from attnconv import CompositeAttention

LENGTHS = (128, 256, 512, 1024)
BATCH, EMBED, HEADS, MAX_DISTANCE = 8, 256, 8, 16


def make_layer() -> CompositeAttention:
    torch.manual_seed(0)
    return CompositeAttention(EMBED, HEADS, MAX_DISTANCE, max_length=max(LENGTHS), fixed=True, query_dynamic=True,
                              key_dynamic=True)


def naive_forward(layer: CompositeAttention, x: torch.Tensor) -> torch.Tensor:
    """The same layer with a ``(B, N_h, N, N)`` int64 index built and gathered from on every pass."""
    b, n, _ = x.shape
    q, k, v = layer.project(x)  # (B, N_h, N, D_h)
    kd = layer.max_distance
    pos = torch.arange(n)
    index = ((pos[None, :] - pos[:, None]).clamp(-kd, kd) + kd).repeat(b, layer.num_heads, 1, 1)  # (B, N_h, N, N)
    fixed = layer.fixed_term.kernel_logits()[None, :, None, :].expand(b, -1, n, -1)  # (B, N_h, N, 2k+1)
    logits = q @ k.transpose(-1, -2) / math.sqrt(layer.head_dim)
    logits = logits + fixed.gather(-1, index)
    logits = logits + layer.query_term.band(n, q, k).gather(-1, index)
    logits = logits + layer.key_term.band(n, q, k).transpose(-1, -2).gather(-2, index)  # band[j, index[i, j]]
    return layer.merge_heads(torch.softmax(logits, dim=-1) @ v, (n,))


def build(impl: str, n: int):
    layer = make_layer()
    x = torch.randn(BATCH, n, EMBED, generator=torch.Generator().manual_seed(1), requires_grad=True)
    if impl == "naive":
        return lambda: naive_forward(layer, x).sum().backward()
    return lambda: layer(x)[0].sum().backward()


def check_equal(n: int) -> float:
    """Max |difference| of outputs and input gradients, float64, batch 2 (raises if they disagree)."""
    layer = make_layer().double()
    x = torch.randn(2, n, EMBED, dtype=torch.float64, requires_grad=True)
    ours = layer(x)[0]
    (g_ours,) = torch.autograd.grad(ours.square().sum(), x)
    naive = naive_forward(layer, x)
    (g_naive,) = torch.autograd.grad(naive.square().sum(), x)
    torch.testing.assert_close(ours, naive, rtol=0, atol=1e-10)
    torch.testing.assert_close(g_ours, g_naive, rtol=0, atol=1e-10)
    return max((ours - naive).abs().max().item(), (g_ours - g_naive).abs().max().item())


def time_interleaved(steps: dict, repeats: int) -> dict[str, float]:
    """Median seconds per step; the implementations take turns."""
    for step in steps.values():
        for _ in range(2):
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def peak_memory_child(impl: str, n: int) -> None:
    print_step_peak(build(impl, n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", default="results/benchmarks/relative_attention")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.child:
        impl, n = args.child
        return peak_memory_child(impl, int(n))

    rows = []
    for n in LENGTHS:
        row = {"N": n, "max_abs_difference": check_equal(n)}
        seconds = time_interleaved({impl: build(impl, n) for impl in ("naive", "attnconv")}, args.repeats)
        for impl in ("naive", "attnconv"):
            row[f"{impl}_ms"] = 1000 * seconds[impl]
            threads = ["--threads", str(torch.get_num_threads())]
            row[f"{impl}_peak_mib"] = child_peak(__file__, [*threads, "--child", impl, str(n)])
        row["time_ratio"] = row["attnconv_ms"] / row["naive_ms"]
        row["memory_ratio"] = row["attnconv_peak_mib"] / max(row["naive_peak_mib"], 1e-9)
        rows.append(row)
        print(f"N={n:5d}  naive {row['naive_ms']:8.1f} ms  attnconv {row['attnconv_ms']:8.1f} ms  "
              f"ratio {row['time_ratio']:.2f}  peak {row['naive_peak_mib']:7.1f} / {row['attnconv_peak_mib']:7.1f} MiB "
              f"({row['memory_ratio']:.2f})  max |diff| {row['max_abs_difference']:.1e}", flush=True)

    meta = {
        "benchmark": "composite relative attention (content + fixed + query- and key-dependent), forward + backward",
        "baseline": "gather with a (B, N_h, N, N) int64 index repeated on every pass",
        "batch": BATCH, "embed_dim": EMBED, "heads": HEADS, "max_distance": MAX_DISTANCE,
        "repeats": args.repeats, "statistic": "median", **machine(),
    }
    write_record(args.out, {"meta": meta, "rows": rows}, title=meta["benchmark"],
                 note=f"Baseline: {meta['baseline']}. Batch {BATCH}, C = {EMBED}, {HEADS} heads, k = {MAX_DISTANCE}, "
                      f"float32, median of {args.repeats} interleaved runs. Outputs and input gradients agree to the "
                      "max |difference| shown (float64). Ratios are attnconv / naive: lower is better.",
                 columns=[("N", "{N}"), ("naive (ms)", "{naive_ms:.1f}"), ("attnconv (ms)", "{attnconv_ms:.1f}"),
                          ("time ratio", "{time_ratio:.2f}"), ("naive peak (MiB)", "{naive_peak_mib:.1f}"),
                          ("attnconv peak (MiB)", "{attnconv_peak_mib:.1f}"), ("memory ratio", "{memory_ratio:.2f}"),
                          ("max abs difference", "{max_abs_difference:.1e}")],
                 rows=rows)
    print(f"max time ratio {max(r['time_ratio'] for r in rows):.2f}, max memory ratio "
          f"{max(r['memory_ratio'] for r in rows):.2f}; wrote {args.out}.json and {args.out}.md")


if __name__ == "__main__":
    main()
