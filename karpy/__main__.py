from __future__ import annotations

import sys

from karpy.cli import main

sys.exit(main())
