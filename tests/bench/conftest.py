"""tests/bench: the comparison with NATS and Redis (bench/compare.py, package bench/peers).

bench/ is a folder of scripts, not an installed package: its modules are imported with bench/
on sys.path, as ``python bench/compare.py`` itself has it.
"""

import sys
from pathlib import Path

_BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(_BENCH) not in sys.path:
    sys.path.insert(0, str(_BENCH))
