"""``python -m evaluation``: see ``evaluation.cli``."""

import sys

from ._process import tune_for_one_shot
from .cli import main

tune_for_one_shot()  # this process scores and exits: keep freed memory (see evaluation/_process.py)
sys.exit(main())
