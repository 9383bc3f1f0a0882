"""attnconv: self-attention and convolution as one family of operations.

The library behind the executable book (Cordonnier, Loukas & Jaggi, ICLR 2020; Chang, Xu, Xu & Tu, ACL 2021).
Its modules, from the operations up:

The operations
    - :mod:`attnconv.conv`: convolution as a sum of shifted linear maps, Σ_Δ shift(X, Δ) W_Δ + b.
    - :mod:`attnconv.tokens`: images as grids of tokens (space-to-depth).
    - :mod:`attnconv.attention`: multi-head self-attention with a relative-position term.
    - :mod:`attnconv.positional`: the relative positional encodings that plug into it (quadratic, learned,
      relative biases, the band of relative logits).
    - :mod:`attnconv.taps`: kernels as bands of taps (which taps exist, a softmax over them, applying a band).
    - :mod:`attnconv.lightconv`: lightweight, dynamic and depthwise-separable 1-D convolutions.
    - :mod:`attnconv.composite`: composite attention, content plus convolution kernels (Chang et al. 2021).
    - :mod:`attnconv.gpsa`: ConViT's gated positional self-attention (d'Ascoli et al. 2021).

The theorems
    - :mod:`attnconv.construct`: Theorem 1 as a function, ``conv_to_mhsa``; the sequence converters.
    - :mod:`attnconv.bounds`: the error of finite-α attention against the convolution it approximates.
    - :mod:`attnconv.proofs`: the SymPy proofs of every claim; ``attnconv.claims``: the ledger that ties each
      claim to its proof, its check in a chapter and its tests.
    - :mod:`attnconv.analysis`: the converse, how convolutional an attention head is (image shifts, the
      kernels a trained BERT applies); :mod:`attnconv.reach`: how far a layer looks (mean attention distance of
      Gaussian heads, a ResNet's receptive field).

The experiments
    - :mod:`attnconv.data`: data sets (CIFAR-10, NLTK corpora, sentence tasks), tokenizers, example inputs.
    - :mod:`attnconv.models`: the networks (attention-only image model, ResNet18, a small CNN, a small BERT).
    - :mod:`attnconv.train`: configs, resumable training loops, the run-folder contract and the command line.

The book
    - :mod:`attnconv.figures`: every figure of the chapters, ``plot_*``.
    - :mod:`attnconv.viewer`, :mod:`attnconv.display`: kernel-free interactive figures, and outputs (tables,
      typeset maths) that a static page shows as meant.
    - :mod:`attnconv.course`: the exercises with their checks, the student edition and the autograder.

Under PyTorch's tools
    Every layer and model checks its inputs and results (finite values, masks that keep a key, ids in range)
    where it can read values, and skips those checks where it cannot, so that the same module works:

    - on the meta device, including a model built under ``with torch.device("meta")``: shapes and dtypes only;
    - under ``torch.func.vmap``: the mapped call equals the batched one;
    - under ``torch.jit.trace``: the traced module gives the eager result on new inputs of the traced shapes;
    - under ``torch.compile(fullgraph=True)``: each layer is captured as one graph, without a graph break, and the
      paper's image model (what the ``gpu-10min`` run compiles, in training mode, its checks deferred to the
      loss by ``attnconv.finite.deferred_finite_checks``) as one forward and one backward graph;
    - in float16, bfloat16 and float64: ``module.to(dtype)`` returns outputs of that dtype.

    ``tests/test_torch_tools.py`` runs these checks on every layer, with ``torch.compile``'s graph capture only
    (the "eager" and "aot_eager" backends). The default backend, inductor, also compiles each layer on a CPU, but
    its C++ code generation is slow: on a two-core machine shared with other jobs (load about 16), a first compile
    took 129 s for ``MultiHeadSelfAttention``, 213 s with the quadratic encoding, 193 s for ``CompositeAttention``
    with a padding mask and 319 s for a small ``SelfAttentionNet`` (inference, one call each). Compile on a GPU, or
    on a CPU only for long runs.

    A NaN or inf parameter never gives a finite output: the layer raises an error that names it, or, with the
    checks deferred, the output holds NaN.
"""

import importlib

# Where each name of the package's root lives. They are imported on first use (PEP 562), so that ``import attnconv``
# costs no PyTorch: the course's grader starts several processes that import the package, and a chapter whose
# exercises need no tensor (or the grader's own check that a sandboxed kernel starts) then starts in a fraction
# of the time. ``from attnconv import MultiHeadSelfAttention`` and ``attnconv.conv`` work as before.
_HOME = {
    "MultiHeadSelfAttention": "attention",
    "CompositeAttention": "composite",
    "conv1d_as_shifts": "conv", "conv2d_as_shifts": "conv", "conv_as_shifts": "conv", "kernel_shifts": "conv",
    "shift": "conv",
    "GatedPositionalSelfAttention": "gpsa",
    "DepthwiseSeparableConv1d": "lightconv", "DynamicConv1d": "lightconv", "LightweightConv1d": "lightconv",
    "space_to_depth": "tokens",
}

__version__ = "0.1.0"

__all__ = [
    "CompositeAttention",
    "DepthwiseSeparableConv1d",
    "DynamicConv1d",
    "GatedPositionalSelfAttention",
    "LightweightConv1d",
    "MultiHeadSelfAttention",
    "conv1d_as_shifts",
    "conv2d_as_shifts",
    "conv_as_shifts",
    "kernel_shifts",
    "shift",
    "space_to_depth",
]


def __getattr__(name: str):
    """A root name (imported from its module on first use), or a submodule not imported yet (``attnconv.conv``)."""
    if name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
