"""``python -m reframe_cache`` runs the console script (what torchrun launches)."""

from .cli import main

raise SystemExit(main())
