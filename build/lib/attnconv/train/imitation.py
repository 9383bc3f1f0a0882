"""Can gradient descent find Theorem 1's construction? One attention layer trained to imitate a fixed convolution.

Cordonnier et al. (2020) prove that a multi-head self-attention layer with N_h = K² quadratic heads *can* compute
any K x K convolution: head h sits on the shift Δ^(h) of one tap, with α -> ∞, and its value and output blocks
factor the tap's matrix, W_Δ = W_val^(h) W_out^(h) (rank W_Δ ≤ D_h). Here a layer starts from random centres
Δ^(h) ~ N(0, σ² I) and a wide spread α, and Adam fits its output to a teacher convolution's on crops of real
images. The loss and the relative error are measured on interior pixels only (a margin of K // 2), where the
teacher's zero padding plays no part, so both layers see the same inputs.

Recorded every ``log_every`` steps: the relative error ‖y - ŷ‖ / ‖y‖, every head's centre, α^(h), the mass each
head puts on its best key, and the *matched-tap distance*: the mean distance between the K² taps and the heads
assigned to them by a minimum-cost matching (:func:`min_cost_assignment`). It is 0 exactly when K² of the heads
sit on the kernel's taps. For encodings without a centre parameter the centre is the mean shift of the head's
attention at the crop's central pixel.

The language analogue (Chang et al. 2021): attention with a relative bias b^(h)_δ imitating a lightweight
convolution, whose kernel is softmax(w^(h)) over 2k+1 taps (:func:`imitate_lightconv`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._checks import int_at_least, positive_int
from ..attention import MultiHeadSelfAttention
from ..lightconv import LightweightConv1d
from ..positional import LearnedRelativeEncoding2d, QuadraticEncoding, RelativePositionBias

__all__ = ["ENCODINGS", "ImitationConfig", "imitate", "imitate_lightconv", "make_student", "matched_tap_distance",
           "min_cost_assignment", "rank_one_conv", "tap_shifts"]

ENCODINGS = ("quadratic", "learned", "quadratic_content")


@dataclass
class ImitationConfig:
    """One imitation run.

    Attributes:
        encoding: ``"quadratic"`` (Gaussian heads, positions only), ``"learned"`` (learned relative embeddings,
            positions only) or ``"quadratic_content"`` (Gaussian heads plus the content term).
        num_heads: N_h (default K², one head per tap).
        head_dim: D_h (default: the teacher's output channels C).
        init_alpha: the starting α^(h) (0.5 is the paper's spread s ≈ 1).
        init_center_std: σ, the spread of the random initial centres.
        lr, steps, batch_size: Adam's learning rate, the number of steps, crops per step.
        log_every: steps between records.
        seed: seeds the student's weights and the order of the crops.
    """

    encoding: str = "quadratic"
    num_heads: int | None = None
    head_dim: int | None = None
    init_alpha: float = 0.5
    init_center_std: float = 2.0
    lr: float = 1e-2
    steps: int = 3000
    batch_size: int = 32
    log_every: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        if self.encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, got {self.encoding!r}")
        for name in ("num_heads", "head_dim"):
            if getattr(self, name) is not None:
                positive_int(f"{name} (or None)", getattr(self, name))
        for name in ("steps", "batch_size", "log_every"):
            positive_int(name, getattr(self, name))
        int_at_least("seed", self.seed, 0)
        if not (self.init_alpha > 0 and self.lr > 0 and self.init_center_std >= 0):
            raise ValueError(f"need init_alpha > 0, lr > 0 and init_center_std >= 0, got {self.init_alpha!r}, "
                             f"{self.lr!r}, {self.init_center_std!r}")


def tap_shifts(kernel_size: int) -> Tensor:
    """The K² shifts (δ_1, δ_2) of a centred K x K kernel, row-major: ``(K², 2)``, entries in -(K//2)..K//2."""
    if positive_int("kernel_size", kernel_size) % 2 == 0:
        raise ValueError(f"kernel_size must be odd (a centred kernel), got {kernel_size}")
    r = torch.arange(kernel_size, dtype=torch.get_default_dtype()) - kernel_size // 2
    return torch.stack(torch.meshgrid(r, r, indexing="ij"), dim=-1).reshape(-1, 2)


def min_cost_assignment(cost: np.ndarray) -> np.ndarray:
    """Exact minimum-cost assignment of every row to a distinct column (Hungarian method, O(n² m)).

    Args:
        cost: ``(n, m)`` finite costs with n ≤ m.

    Returns:
        ``(n,)`` column index of each row.
    """
    cost = np.asarray(cost, dtype=float)
    if cost.ndim != 2 or cost.shape[0] > cost.shape[1] or not np.all(np.isfinite(cost)):
        raise ValueError(f"cost must be a finite (n, m) array with n <= m, got shape {cost.shape}")
    n, m = cost.shape
    u, v = np.zeros(n + 1), np.zeros(m + 1)  # potentials: cost[i, j] - u[i] - v[j] >= 0 on the reduced matrix
    owner, way = np.zeros(m + 1, dtype=int), np.zeros(m + 1, dtype=int)  # column 0 is a virtual start
    for row in range(1, n + 1):
        owner[0], col = row, 0
        slack, used = np.full(m + 1, np.inf), np.zeros(m + 1, dtype=bool)
        while owner[col]:  # grow a shortest augmenting path until it reaches a free column
            used[col] = True
            i = owner[col]
            reduced = cost[i - 1] - u[i] - v[1:]
            better = ~used[1:] & (reduced < slack[1:])
            slack[1:][better], way[1:][better] = reduced[better], col
            free = np.where(used[1:], np.inf, slack[1:])
            nxt = int(np.argmin(free)) + 1
            delta = free[nxt - 1]
            u[owner[used]] += delta
            v[used] -= delta
            slack[~used] -= delta
            col = nxt
        while col:  # flip the path
            prev = way[col]
            owner[col], col = owner[prev], prev
    out = np.empty(n, dtype=int)
    for col in range(1, m + 1):
        if owner[col]:
            out[owner[col] - 1] = col - 1
    return out


def matched_tap_distance(centers: Tensor, taps: Tensor) -> tuple[float, np.ndarray]:
    """Mean Euclidean distance between the taps ``(T, 2)`` and the heads ``(N_h, 2)`` matched to them (N_h ≥ T).

    Returns ``(distance, heads)``: ``heads[t]`` is the head assigned to tap t by :func:`min_cost_assignment`.
    """
    if centers.shape[0] < taps.shape[0]:
        raise ValueError(f"need at least as many heads as taps, got {centers.shape[0]} heads for {taps.shape[0]}")
    dist = torch.cdist(taps.double(), centers.detach().double()).numpy()  # (T, N_h)
    heads = min_cost_assignment(dist)
    return float(dist[np.arange(len(heads)), heads].mean()), heads


def rank_one_conv(in_channels: int, out_channels: int, kernel_size: int, seed: int = 0) -> nn.Conv2d:
    """A random "same" convolution whose every tap W_Δ = u_Δ v_Δ^T has rank 1: nine heads of D_h = 1 suffice."""
    g = torch.Generator().manual_seed(seed)
    conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
    u = torch.randn(out_channels, 1, kernel_size, kernel_size, generator=g)
    v = torch.randn(1, in_channels, kernel_size, kernel_size, generator=g) / (in_channels * kernel_size**2) ** 0.5
    with torch.no_grad():
        conv.weight.copy_(u * v)
        conv.bias.copy_(0.1 * torch.randn(out_channels, generator=g))
    return conv


def make_student(config: ImitationConfig, in_channels: int, out_channels: int, kernel_size: int,
                 grid: int) -> MultiHeadSelfAttention:
    """The attention layer that learns: ``config.num_heads`` heads (default K²) of ``config.head_dim`` (default C)."""
    heads = config.num_heads or kernel_size**2
    if config.encoding == "learned":
        positional = LearnedRelativeEncoding2d(heads, max_size=grid, dim=16)
    else:
        positional = QuadraticEncoding(heads, alpha=config.init_alpha, init_center_std=config.init_center_std)
    return MultiHeadSelfAttention(in_channels, heads, head_dim=config.head_dim or out_channels, out_dim=out_channels,
                                  positional=positional, content=config.encoding == "quadratic_content")


@torch.no_grad()
def _central_probs(student: MultiHeadSelfAttention, x: Tensor) -> Tensor:
    """Attention of the crop's central pixel over the keys, ``(N_h, H, W)`` (mean over ``x``'s crops)."""
    h, w = x.shape[1:3]
    x = x[:32] if student.content else x[:1]  # without content every crop gets the same attention
    _, probs = student(x, need_weights=True)  # (B, N_h, N, N)
    return probs[:, :, (h // 2) * w + w // 2].mean(0).reshape(-1, h, w)


@torch.no_grad()
def _snapshot(student: MultiHeadSelfAttention, x: Tensor, y: Tensor, margin: int, taps: Tensor) -> dict[str, Any]:
    out = student(x)[0][:, margin:-margin, margin:-margin]
    probs = _central_probs(student, x)  # (N_h, H, W)
    enc = student.positional
    h, w = x.shape[1:3]
    if isinstance(enc, QuadraticEncoding):
        centers, alpha = enc.centers.detach().clone(), enc.alpha.tolist()
    else:  # the mean shift of the central pixel's attention
        rows = torch.arange(h, dtype=probs.dtype) - h // 2
        cols = torch.arange(w, dtype=probs.dtype) - w // 2
        centers = torch.stack([(probs.sum(2) * rows).sum(1), (probs.sum(1) * cols).sum(1)], dim=1)
        alpha = None
    distance, _ = matched_tap_distance(centers, taps)
    return {"rel_error": float((out - y).norm() / y.norm()), "centers": centers.tolist(), "alpha": alpha,
            "mass": probs.flatten(1).max(1).values.tolist(), "matched": distance}


def imitate(teacher: nn.Conv2d, crops: Tensor, config: ImitationConfig, eval_crops: Tensor) -> dict[str, Any]:
    """Train an attention layer to reproduce ``teacher`` on interior pixels.

    Args:
        teacher: a stride-1 ``nn.Conv2d`` with odd kernel K and padding K // 2 (kept fixed).
        crops: training crops, channels last ``(N, H, W, C_in)``, normalised.
        config: the student and the optimiser.
        eval_crops: held-out crops ``(M, H, W, C_in)`` on which every record is measured.

    Returns:
        ``{"config", "kernel_size", "steps", "rel_error", "centers", "alpha", "mass", "matched"}``: lists over the
        records (``centers``: ``(records, N_h, 2)``; ``alpha``: ``(records, N_h)`` or ``None``).
    """
    k = teacher.kernel_size[0]
    if teacher.kernel_size != (k, k) or k % 2 == 0 or teacher.padding != (k // 2, k // 2) or teacher.stride != (1, 1):
        raise ValueError("teacher must be a stride-1 Conv2d with an odd square kernel K and padding K // 2")
    for name, t in (("crops", crops), ("eval_crops", eval_crops)):
        if t.dim() != 4 or t.shape[-1] != teacher.in_channels or min(t.shape[1:3]) <= 2 * (k // 2):
            raise ValueError(f"{name} must be (N, H, W, C_in={teacher.in_channels}) with H, W > {2 * (k // 2)}, "
                             f"got shape {tuple(t.shape)}")
    margin, taps = k // 2, tap_shifts(k)
    torch.manual_seed(config.seed)
    student = make_student(config, teacher.in_channels, teacher.out_channels, k, crops.shape[1])
    if student.num_heads < k * k:
        raise ValueError(f"num_heads must be at least K² = {k * k}, got {student.num_heads}")

    @torch.no_grad()
    def target(x: Tensor) -> Tensor:  # (B, H, W, C_in) -> interior of the teacher's output, channels last
        return teacher(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)[:, margin:-margin, margin:-margin]

    eval_y, scale = target(eval_crops), target(crops[:512]).pow(2).mean()
    opt = torch.optim.Adam(student.parameters(), lr=config.lr)
    g = torch.Generator().manual_seed(config.seed)
    record: dict[str, Any] = {"config": asdict(config), "kernel_size": k, "steps": []}
    for step in range(config.steps + 1):
        if step % config.log_every == 0 or step == config.steps:
            snap = _snapshot(student, eval_crops, eval_y, margin, taps)
            record["steps"].append(step)
            for key, value in snap.items():
                record.setdefault(key, []).append(value)
        if step == config.steps:
            break
        x = crops[torch.randint(len(crops), (config.batch_size,), generator=g)]
        loss = F.mse_loss(student(x)[0][:, margin:-margin, margin:-margin], target(x)) / scale
        opt.zero_grad()
        loss.backward()
        opt.step()
    return record


def imitate_lightconv(tokens: Tensor, eval_tokens: Tensor, num_heads: int = 4, kernel_size: int = 7,
                      max_distance: int = 8, lr: float = 1e-2, steps: int = 3000, batch_size: int = 32,
                      log_every: int = 100, seed: int = 0) -> dict[str, Any]:
    """The language analogue: relative-bias attention over a window k' ≥ k (``max_distance``) imitating a lightweight
    convolution with N_h kernels of 2k+1 taps (Chang et al. 2021), on interior tokens.

    Args:
        tokens, eval_tokens: ``(N, L, C)`` and ``(M, L, C)`` sequences, C divisible by ``num_heads``.

    Returns:
        ``{"steps", "rel_error", "kernel_tv", "kernels", "target"}``: ``kernel_tv`` is the total-variation
        distance between the target kernels and the matched heads' attention over δ = -k'..k' (mean over heads);
        ``kernels`` are those attention rows ``(records, N_h, 2k'+1)``; ``target`` the teacher's ``(N_h, 2k'+1)``.
    """
    c, length = tokens.shape[-1], tokens.shape[1]
    k = (positive_int("kernel_size", kernel_size) - 1) // 2
    if kernel_size % 2 == 0 or int_at_least("max_distance", max_distance, k) != max_distance:
        raise ValueError(f"kernel_size must be odd, got {kernel_size}")
    if length <= 2 * max_distance:
        raise ValueError(f"sequences must be longer than 2 * max_distance = {2 * max_distance}, got {length}")
    margin = max_distance
    torch.manual_seed(seed)
    teacher = LightweightConv1d(c, num_heads, kernel_size, boundary="renormalize")
    with torch.no_grad():
        teacher.weight.normal_(0.0, 1.0)
    target_k = F.pad(teacher.kernel.detach(), (max_distance - k, max_distance - k))  # (N_h, 2k'+1)
    bias = RelativePositionBias(num_heads, max_distance, window=True)  # attention over δ = -k'..k' only
    student = MultiHeadSelfAttention(c, num_heads, positional=bias, content=False)
    opt = torch.optim.Adam(student.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        eval_y, scale = teacher(eval_tokens)[:, margin:-margin], teacher(tokens[:512]).pow(2).mean()
    record: dict[str, Any] = {"steps": [], "rel_error": [], "kernel_tv": [], "kernels": [],
                              "target": target_k.tolist()}
    for step in range(steps + 1):
        if step % log_every == 0 or step == steps:
            with torch.no_grad():
                out = student(eval_tokens)[0][:, margin:-margin]
                rows = torch.softmax(student.positional.kernel_logits(), dim=-1)  # an interior query's attention
                tv = 0.5 * torch.cdist(target_k, rows, p=1).numpy()  # (targets, heads)
                heads = min_cost_assignment(tv)
            record["steps"].append(step)
            record["rel_error"].append(float((out - eval_y).norm() / eval_y.norm()))
            record["kernel_tv"].append(float(tv[np.arange(num_heads), heads].mean()))
            record["kernels"].append(rows[heads].tolist())
        if step == steps:
            break
        x = tokens[torch.randint(len(tokens), (batch_size,), generator=g)]
        with torch.no_grad():
            y = teacher(x)[:, margin:-margin]
        loss = F.mse_loss(student(x)[0][:, margin:-margin], y) / scale
        opt.zero_grad()
        loss.backward()
        opt.step()
    return record
