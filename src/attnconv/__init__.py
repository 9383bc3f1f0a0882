"""attnconv: self-attention and convolution as one family of operations.

The library behind the executable book. Modules:

- :mod:`attnconv.conv`: convolution as a sum of shifted linear maps.
- :mod:`attnconv.attention`: multi-head self-attention with a relative-position term.
- :mod:`attnconv.positional`: the relative positional encodings that plug into it.
- :mod:`attnconv.construct`: Theorem 1 as a function, ``conv_to_mhsa``.
- :mod:`attnconv.bounds`: the error of finite-α attention against the convolution it approximates.
- :mod:`attnconv.analysis`: how convolutional is an attention head.
- :mod:`attnconv.proofs`: the SymPy proofs of every claim.
- :mod:`attnconv.tokens`: images as grids of tokens.
- :mod:`attnconv.plotting`: the figures of the chapters.
- :mod:`attnconv.data`: locating data sets and example images.
"""

from .attention import MultiHeadSelfAttention
from .conv import conv1d_as_shifts, conv2d_as_shifts, conv_as_shifts, kernel_shifts, shift
from .tokens import space_to_depth

__version__ = "0.1.0"

__all__ = [
    "MultiHeadSelfAttention",
    "conv1d_as_shifts",
    "conv2d_as_shifts",
    "conv_as_shifts",
    "kernel_shifts",
    "shift",
    "space_to_depth",
]
