"""A quick run of bench/compare.py end to end: every system, every row, no timing asserted.

It starts rocketq, nats-server and redis-server (installing the last two with apt-get when
they are missing) and runs every workload on tiny counts. A peer may be missing from the
table only when its server could not be installed (the run then says why); NATS has no
durable row when its server has no sync file store (nats-server before 2.10). Speed is never
checked: the figures of a run this small mean nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from peers import plans, report

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 240
"""Generous for a loaded machine; the run itself takes 15-40 s."""


@pytest.mark.slow
def test_quick_run_measures_every_row_on_every_system(tmp_path: Path) -> None:
    out = tmp_path / "compare.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "compare.py"), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads(out.read_text())
    unavailable: dict[str, str] = data["unavailable"]
    workloads = plans.plan(quick=True)
    rows = {row["key"]: row for row in data["rows"]}
    assert list(rows) == [w.key for w in workloads] + [report.MEMORY_KEY]
    for title in [w.title for w in workloads] + [report.MEMORY_TITLE]:
        assert f"| {title} | " in done.stdout  # the printed ratio table has the row

    durable = {w.key for w in workloads if w.durable}
    for system in ("rocketq", "nats", "redis"):
        if system in unavailable:
            assert system != "rocketq"
            assert "install" in unavailable[system], unavailable[system]
            warnings.warn(f"{system} left out: {unavailable[system]}", stacklevel=1)
            continue
        for key, row in rows.items():
            cell = row["cells"][system]
            if key in durable and f"{system}/durable" in unavailable:
                # only an old nats-server may lack the durable variant, and the run says so
                assert system == "nats" and "no sync file store" in unavailable[f"{system}/durable"], unavailable
                assert cell["text"] == "not measured"
                continue
            assert cell["value"] is not None, (key, system, cell)
            assert cell["value"]["median"] > 0, (key, system, cell)
    for key, row in rows.items():  # a row with any peer figure has a ratio
        if any(row["cells"][peer]["value"] for peer in ("nats", "redis")):
            assert row["ratio"] is not None and row["ratio"] > 0, key
    # every message was delivered and counted once
    for record in data["records"]:
        assert record["error"] == "", record
        m = record["measurement"]
        params = next(w.params for w in workloads if w.key == record["workload"])
        assert m["messages"] == params["count"], record
        assert m["failures"] == 0, record
