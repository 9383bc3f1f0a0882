"""The arithmetic a training step runs in: float32, or bfloat16 autocast, chosen by measurement where asked.

A config's ``precision`` is ``"fp32"``, ``"bf16"`` or ``"auto"``:

- ``"fp32"``: every operation in float32 (TF32 matmuls on CUDA, as before).
- ``"bf16"``: the forward and backward passes under ``torch.autocast(device, torch.bfloat16)``, on the CPU or CUDA.
  Matmuls and convolutions run in bfloat16; the weights, their gradients, the optimiser state, the loss, the
  attention network's residual stream and every attention softmax (its normaliser,
  :func:`attnconv.taps.softmax_fp32`) stay float32, and so do checkpoints.
- ``"auto"``: on CUDA, bfloat16 when the config's ``amp`` is True, else float32 (``amp`` keeps its old meaning
  and is consulted nowhere else). On a CPU, a short probe at start-up (:func:`probe_speed`) times a few
  interleaved forward + backward passes of the run's own model, on a batch of the run's own shape, in both
  precisions, and the run trains in bfloat16 when that is at least :data:`MIN_SPEEDUP` times as fast, else in
  float32. Chapter 06's runs are the evidence: at equal training time (the same CPU seconds, bfloat16 taking the
  extra epochs its speed buys) the cpu-quick quadratic model ended about 8 points higher in bfloat16 for every
  seed (``benchmarks/precision_parity.py``), though at equal epochs about half a point lower. The
  learned-encoding model's ``cpu-long`` runs diverged in bfloat16 in their third epoch (three of three), because
  the attention network then carried its residual stream in bfloat16; replayed from the same state with the
  stream in float32, as the network now keeps it, that epoch trains as float32 does
  (``benchmarks/bf16_divergence.py``). (A CPU with AVX-512 BF16 or AMX runs bfloat16 matmuls natively; one
  without them emulates bfloat16 and is slower, which is what the probe is for: a speed-up belongs to the machine
  that measured it.)

The choice and the probe's figures go into ``provenance.json`` (``precision``). A checkpoint records the precision
its run used; a resumed run continues in it (``"auto"`` does not probe again) and a resume that asks for the other
one is refused (:func:`resume_precision`), because the rest of the run would no longer be the run it continues.
A checkpoint written before this field existed counts as float32 (bfloat16 on CUDA when its config had ``amp``).
"""

from __future__ import annotations

import contextlib
import copy
import statistics
import time
from typing import Any, Callable, Mapping

import torch
from torch import nn

from .runs import check_resumable

__all__ = ["MIN_SPEEDUP", "PRECISIONS", "check_precision", "precision_autocast", "probe_speed", "resolve_precision",
           "resume_precision"]

#: The values of a config's ``precision``.
PRECISIONS = ("fp32", "bf16", "auto")
#: A probe speed-up below this is within the noise of a shared machine, and the record says bf16 was no faster.
MIN_SPEEDUP = 1.1
#: Untimed passes before the probe's timed ones (first-call allocation and kernel selection).
PROBE_WARMUP = 1
#: Timed passes per precision (interleaved).
PROBE_REPEATS = 3


def check_precision(value: object) -> str:
    """``value`` if it is one of :data:`PRECISIONS`, else ``ValueError``."""
    if value not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {value!r}")
    return value


def precision_autocast(precision: str, device: torch.device):
    """The context a forward pass runs in: bfloat16 autocast on ``device`` for ``"bf16"``, nothing for ``"fp32"``."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    if precision == "fp32":
        return contextlib.nullcontext()
    raise ValueError(f"precision must be 'fp32' or 'bf16' once resolved, got {precision!r}")


def probe_speed(model: nn.Module, loss_fn: Callable[[nn.Module], torch.Tensor], device: torch.device,
                repeats: int = PROBE_REPEATS, warmup: int = PROBE_WARMUP) -> dict[str, Any]:
    """Seconds per forward + backward pass of ``model`` in float32 and in bfloat16 autocast, interleaved.

    The passes run on a copy of ``model`` (its batch-norm statistics and gradients are left alone) with the
    random-number state restored afterwards, so a run that probes trains exactly as one that does not.

    Args:
        model: the run's network, on ``device``.
        loss_fn: ``loss_fn(net)`` runs the forward pass of ``net`` on a real-shaped batch and returns a scalar loss.
        repeats: timed passes per precision; the order alternates (fp32 first, then bf16 first, ...).

    Returns:
        ``{"fp32_s": [...], "bf16_s": [...], "fp32_median_s", "bf16_median_s", "speedup"}`` where ``speedup``
        is ``fp32_median_s / bf16_median_s``.
    """
    net = copy.deepcopy(model)
    times: dict[str, list[float]] = {"fp32": [], "bf16": []}

    def one(precision: str) -> float:
        t0 = time.perf_counter()
        with precision_autocast(precision, device):
            loss = loss_fn(net)
        loss.float().backward()
        net.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - t0

    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        for _ in range(warmup):
            one("fp32"), one("bf16")
        for r in range(repeats):
            for precision in (("fp32", "bf16") if r % 2 == 0 else ("bf16", "fp32")):
                times[precision].append(one(precision))
    fp32, bf16 = statistics.median(times["fp32"]), statistics.median(times["bf16"])
    return {"fp32_s": times["fp32"], "bf16_s": times["bf16"], "fp32_median_s": fp32, "bf16_median_s": bf16,
            "speedup": fp32 / bf16}


def resolve_precision(requested: str, amp: bool, device: torch.device,
                      probe: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The precision a new run uses, and why: ``{"requested", "used", "reason"}`` plus ``"probe"`` where one ran.

    ``probe()`` (a closure over :func:`probe_speed`) is called only for ``"auto"`` on a CPU.
    """
    check_precision(requested)
    if requested != "auto":
        return {"requested": requested, "used": requested, "reason": "requested"}
    if device.type == "cuda":
        return {"requested": "auto", "used": "bf16" if amp else "fp32", "reason": f"CUDA with amp={amp}"}
    figures = probe()
    faster = figures["speedup"] >= MIN_SPEEDUP
    return {"requested": "auto", "used": "bf16" if faster else "fp32", "probe": figures,
            "reason": f"CPU: the probe measured bf16 at {figures['speedup']:.2f}x float32's speed "
                      f"({'at least' if faster else 'below'} {MIN_SPEEDUP}x), and bf16 reached a higher accuracy "
                      f"in the same time in the quadratic model's parity runs; its divergence in the "
                      f"learned-encoding model came from a bf16 residual stream, which the model keeps in float32"}


def resume_precision(state: Mapping[str, Any], config: Mapping[str, Any], device: torch.device) -> dict[str, Any]:
    """Check that a checkpoint ``state`` may be resumed under ``config`` (as a dict), and say in which precision.

    Every config field but ``precision`` must match (:func:`attnconv.train.runs.check_resumable`). The run
    continues in the precision its checkpoint used; ``"auto"`` accepts it, another explicit choice is refused.

    Raises:
        ValueError: the configs differ, or ``config["precision"]`` asks for the other precision.
    """
    check_resumable(state["config"], {k: v for k, v in config.items() if k != "precision"})
    used = state.get("precision")
    if used is None:  # written before checkpoints recorded it: autocast was CUDA-only, governed by amp
        used = "bf16" if device.type == "cuda" and state["config"].get("amp", False) else "fp32"
    requested = check_precision(config["precision"])
    if requested not in ("auto", used):
        raise ValueError(f"cannot resume: the checkpoint was trained in {used} and this run asks for precision="
                         f"{requested!r}; resume with precision={used!r} (or 'auto'), or start a new run in another "
                         "folder")
    return {"requested": requested, "used": used, "reason": "resumed: the precision of the checkpoint"}
