"""Forward + backward time and peak memory: attnconv's MultiHeadSelfAttention vs torch.nn.MultiheadAttention.

Usage: python benchmarks/attention.py [--repeats 7] [--out results/benchmarks/attention]

Time is the median of ``--repeats`` runs after two warm-up runs, in this process. Peak memory is measured
in a fresh subprocess per configuration: the growth of the resident set's high-water mark (Linux
/proc/self/status VmHWM, reset through /proc/self/clear_refs) over one forward + backward pass, with glibc
told to return large buffers to the OS at once; the median of three subprocesses.
"""

from __future__ import annotations

import argparse

import torch
from _measure import child_peak, machine, median_time, print_step_peak, write_record

from attnconv import MultiHeadSelfAttention

SIZES = [(n, c) for n in (64, 256, 1024) for c in (64, 256, 512)]
HEADS = 8
BATCH = 8


def build(impl: str, n: int, c: int):
    torch.manual_seed(0)
    reference = torch.nn.MultiheadAttention(c, HEADS, batch_first=True)
    x = torch.randn(BATCH, n, c, requires_grad=True)
    if impl == "torch":
        return lambda: reference(x, x, x, need_weights=False)[0].sum().backward()
    ours = MultiHeadSelfAttention.from_torch(reference)
    return lambda: ours(x)[0].sum().backward()


def peak_memory_child(impl: str, n: int, c: int) -> None:
    print_step_peak(build(impl, n, c))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default="results/benchmarks/attention")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        impl, n, c = args.child
        return peak_memory_child(impl, int(n), int(c))

    rows = []
    for n, c in SIZES:
        row = {"N": n, "C": c}
        for impl in ("torch", "attnconv"):
            row[f"{impl}_ms"] = 1000 * median_time(build(impl, n, c), args.repeats)
            row[f"{impl}_peak_mib"] = child_peak(__file__, ["--child", impl, str(n), str(c)])
        row["time_ratio"] = row["attnconv_ms"] / row["torch_ms"]
        row["memory_ratio"] = row["attnconv_peak_mib"] / max(row["torch_peak_mib"], 1e-9)
        rows.append(row)
        print(f"N={n:5d} C={c:4d}  torch {row['torch_ms']:8.2f} ms  attnconv {row['attnconv_ms']:8.2f} ms  "
              f"ratio {row['time_ratio']:.2f}  peak {row['torch_peak_mib']:7.1f} / {row['attnconv_peak_mib']:7.1f} MiB",
              flush=True)

    meta = {
        "benchmark": "MultiHeadSelfAttention vs nn.MultiheadAttention, forward + backward",
        "batch": BATCH, "heads": HEADS, "repeats": args.repeats, "statistic": "median", **machine(),
    }
    write_record(args.out, {"meta": meta, "rows": rows}, title=meta["benchmark"],
                 note=f"batch {BATCH}, {HEADS} heads, float32, median of {args.repeats} runs;",
                 columns=[("N", "{N}"), ("C", "{C}"), ("torch (ms)", "{torch_ms:.2f}"),
                          ("attnconv (ms)", "{attnconv_ms:.2f}"), ("time ratio", "{time_ratio:.2f}"),
                          ("torch peak (MiB)", "{torch_peak_mib:.1f}"),
                          ("attnconv peak (MiB)", "{attnconv_peak_mib:.1f}"), ("memory ratio", "{memory_ratio:.2f}")],
                 rows=rows)
    print(f"max time ratio {max(r['time_ratio'] for r in rows):.2f}; wrote {args.out}.json and {args.out}.md")


if __name__ == "__main__":
    main()
