"""`python -m reach_otel` is the `reach-otel` command."""

import sys

from reach_otel.cli import main

sys.exit(main())
