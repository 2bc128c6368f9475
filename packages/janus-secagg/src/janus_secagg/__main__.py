"""``python -m janus_secagg`` runs the console script."""

import sys

from .cli import main

sys.exit(main())
