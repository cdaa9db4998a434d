"""``python -m m3agent.cli``, as ``python -m m3agent`` and the ``m3agent`` script."""

import sys

from m3agent.cli import main

sys.exit(main())
