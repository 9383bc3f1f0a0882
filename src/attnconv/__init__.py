"""attnconv: self-attention and convolution as one family of operations.

The library behind the executable book. Modules:

- :mod:`attnconv.conv`: convolution as a sum of shifted linear maps.
- :mod:`attnconv.attention`: multi-head self-attention with a relative-position term.
- :mod:`attnconv.positional`: the relative positional encodings that plug into it.
- :mod:`attnconv.lightconv`: lightweight, dynamic and depthwise-separable 1-D convolutions.
- :mod:`attnconv.composite`: composite attention, content plus convolution kernels (Chang et al. 2021).
- :mod:`attnconv.construct`: Theorem 1 as a function, ``conv_to_mhsa``; sequence converters.
- :mod:`attnconv.bounds`: the error of finite-α attention against the convolution it approximates.
- :mod:`attnconv.analysis`: how convolutional is an attention head.
- :mod:`attnconv.proofs`: the SymPy proofs of every claim.
- :mod:`attnconv.tokens`: images as grids of tokens.
- :mod:`attnconv.plotting`: the figures of the chapters.
- :mod:`attnconv.data`: locating data sets and example images.
- :mod:`attnconv.models`: the CIFAR-10 classifiers (attention-only network, ResNet18) and their costs.
- :mod:`attnconv.train`: configs, the resumable (multi-process) training loop and its command line.
- :mod:`attnconv.viz`: figures of trained attention models.
"""

from .attention import MultiHeadSelfAttention
from .composite import CompositeAttention
from .conv import conv1d_as_shifts, conv2d_as_shifts, conv_as_shifts, kernel_shifts, shift
from .lightconv import DepthwiseSeparableConv1d, DynamicConv1d, LightweightConv1d
from .tokens import space_to_depth

__version__ = "0.1.0"

__all__ = [
    "CompositeAttention",
    "DepthwiseSeparableConv1d",
    "DynamicConv1d",
    "LightweightConv1d",
    "MultiHeadSelfAttention",
    "conv1d_as_shifts",
    "conv2d_as_shifts",
    "conv_as_shifts",
    "kernel_shifts",
    "shift",
    "space_to_depth",
]
