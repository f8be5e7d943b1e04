"""``python -m dmargin.cli``: the ``dmargin`` command."""

import sys

from . import main

sys.exit(main())
