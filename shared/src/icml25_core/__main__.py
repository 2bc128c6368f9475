"""``python -m icml25_core [DIR]``: print the summary table of the reproduce reports in DIR."""

import sys

from icml25_core.report import main

sys.exit(main())
