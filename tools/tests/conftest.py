"""Make the tools importable by name, as they are when run as ``python tools/<tool>.py``."""

import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))
