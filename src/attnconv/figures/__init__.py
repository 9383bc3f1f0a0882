"""The figures of the book. Every static figure is a ``plot_*`` function that returns a ``matplotlib.figure.Figure``
and draws nothing random; every interactive one is a ``*_viewer`` that needs no kernel.

- :mod:`attnconv.figures.image`: convolution as shifts, attention maps over an image grid, the α sweep (ch. 01-04).
- :mod:`attnconv.figures.sequence`: relative positions as convolution kernels over a sequence (ch. 05).
- :mod:`attnconv.figures.vision_runs`: CIFAR-10 runs read back: curves, attention centres and maps (ch. 06).
- :mod:`attnconv.figures.learning_curves`: test accuracy and training loss of any set of run folders (ch. 06).
- :mod:`attnconv.figures.center_grid`: the paper's Fig. 4 at the first and last snapshot of a run (ch. 06).
- :mod:`attnconv.figures.reach`: how far each layer looks, against a ResNet's receptive field (ch. 06).
- :mod:`attnconv.figures.bert_runs`: BERT runs read back: learned kernels, pre-training curves, the learning
  curve against a baseline (ch. 07).
- :mod:`attnconv.figures.bert_seeds`: every variant's loss and accuracy, one marker per pretraining seed (ch. 07).
- :mod:`attnconv.figures.seed_runs`: GPSA gates over training, accuracy and attention distance over seeds (ch. 08).
- ``attnconv.figures.imitation``: the imitation experiment and the initialisation comparison (ch. 06).
- :mod:`attnconv.figures.phone`: one figure drawn wide and narrow (panels stacked), shown whole on a phone.
- :mod:`attnconv.figures.interactive`: the kernel-free viewers (:mod:`attnconv.viewer`) and their frames.

Figures only draw: the numbers they show come from :mod:`attnconv.analysis`, :mod:`attnconv.train.results` or
the maths modules.
"""

from importlib.util import find_spec as _find_spec

from .bert_runs import plot_fixed_kernels, plot_learning_curve, plot_pretraining_curves, plot_sentence_kernels
from .interactive import (attention_viewer, bias_viewer, plot_theorem1_heads, quadratic_query_maps,
                          quadratic_run_viewer, sentence_kernel_viewer, theorem1_kernel, theorem1_viewer)
from .image import (plot_attention, plot_error_vs_alpha, plot_gaussian_head, plot_padding, plot_shifted_copies,
                    plot_weight_matrices)
from .sequence import (plot_bias_widget_frame, plot_boundary_effect, plot_dynamic_kernels, plot_kernel_and_attention,
                       plot_kernel_terms, plot_relative_attention_benchmark)
from .reach import plot_reach
from .phone import PhoneFigure, phone_figure
from .vision_runs import (MASS_LEVELS, gaussian_contour, plot_accuracy, plot_attention_maps, plot_augmentations,
                          plot_center_trajectories, plot_centers, plot_head_shifts)

__all__ = [
    # image
    "plot_shifted_copies", "plot_weight_matrices", "plot_attention", "plot_error_vs_alpha", "plot_gaussian_head",
    "plot_padding",
    # sequence
    "plot_kernel_and_attention", "plot_bias_widget_frame", "plot_dynamic_kernels", "plot_boundary_effect",
    "plot_kernel_terms", "plot_relative_attention_benchmark",
    # vision runs
    "MASS_LEVELS", "gaussian_contour", "plot_accuracy", "plot_augmentations", "plot_centers",
    "plot_center_trajectories", "plot_attention_maps", "plot_head_shifts", "plot_reach",
    # BERT runs
    "plot_fixed_kernels", "plot_sentence_kernels", "plot_pretraining_curves", "plot_learning_curve",
    # a figure drawn wide and narrow, for a phone
    "PhoneFigure", "phone_figure",
    # kernel-free viewers
    "attention_viewer", "bias_viewer", "plot_theorem1_heads", "quadratic_query_maps", "quadratic_run_viewer",
    "sentence_kernel_viewer", "theorem1_kernel", "theorem1_viewer",
]

from . import legibility as _legibility

_legibility.install()  # in a notebook, every figure's PNG carries its smallest text size (for the book's checks)

if _find_spec(f"{__name__}.imitation") is not None:
    from . import imitation as _imitation
    from .imitation import *  # noqa: F401,F403

    __all__ += list(getattr(_imitation, "__all__", []))
