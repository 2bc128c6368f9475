"""``python -m finola`` (and ``torchrun -m finola train ...``): the console script."""

import sys

from .cli import main

sys.exit(main())
