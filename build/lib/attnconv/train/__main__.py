"""``python -m attnconv.train``: see :mod:`attnconv.train.cli`."""

import sys

from .cli import main

sys.exit(main())
