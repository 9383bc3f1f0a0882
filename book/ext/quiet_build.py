"""Sphinx extension: a build log without the two kinds of noise that said nothing about the book.

- **fontTools INFO lines** (81 a build): ``light_icons`` subsets the theme's Font Awesome fonts with fontTools,
  whose subsetter reports every pruned table at INFO, and the build's logging shows INFO. The ``fontTools``
  logger is set to WARNING, so its warnings and errors still show.
- **"Kernel is running over TCP without encryption"** (one per executed chapter): ipykernel 7.4 prints it when
  a kernel starts on TCP without CurveZMQ keys. jupyter_client 8.10 hands a kernel such keys when
  ``KernelManager.transport_encryption`` is ``"auto"`` and the kernelspec declares ``curve`` in
  ``metadata.supported_encryption`` (ipykernel's does), but its default is ``"disabled"``, and the build's
  executor (myst-nb, then jupyter-cache, then nbclient) reads no Jupyter configuration file. The extension sets
  that default for the build's process, so the chapters' kernels talk to the build over encrypted sockets. Where
  pyzmq has no CurveZMQ, nothing changes and the warning stays.
"""

from __future__ import annotations

import logging

from sphinx.application import Sphinx


def quiet_fonttools() -> None:
    """fontTools reports at WARNING and above only."""
    logging.getLogger("fontTools").setLevel(logging.WARNING)


def encrypt_kernels() -> bool:
    """Kernels started by this process get CurveZMQ keys where their kernelspec supports it; ``False`` when this
    pyzmq cannot encrypt (then nothing is changed)."""
    import zmq
    from jupyter_client.manager import KernelManager

    if not zmq.has("curve"):
        return False
    KernelManager.transport_encryption.default_value = "auto"  # the default of every manager made from now on
    return True


def setup(app: Sphinx) -> dict:
    quiet_fonttools()
    encrypt_kernels()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
