"""``python -m veriforge`` is the same as the ``veriforge`` command."""

import sys

from veriforge.cli.main import main

sys.exit(main())
