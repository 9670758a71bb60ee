"""``python -m evaluation``: see ``evaluation.cli``."""

import sys

from .cli import main

sys.exit(main())
