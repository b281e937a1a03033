"""Does splitting the broker's work across threads pay on this machine? Interleaved runs.

    .venv/bin/python bench/run_split.py [--rounds 3] [--scale 1.0]
        [--design single --design store-thread --design io-threads:1 --design io-threads:2
         --design io-threads:2+store-thread]

Each ``--design`` is the current single-loop broker (``single``) or one of the prototypes of
``bench/splitproto/designs.py`` (a store thread fed by a queue; socket I/O in N threads of
their own; both at once with ``+``). A prototype is applied to the broker process only, by ``bench/splitproto`` on
``PYTHONPATH`` and ``ROCKETQ_SPLIT`` in its environment; rocketq itself is unchanged. Per
round and design it starts a fresh ``rocketq local up`` (ASYNC_FLUSH, one broker) and runs
issue #11's workloads with ``rocketq bench``, then a SYNC_FLUSH cluster for the last one:

========= ================================================================================
sync      ``producer -m sync -w 1``: one send at a time
pipelined ``producer -m async -w 1000``: single messages, up to 1 000 in flight
batched   ``producer -m batch -b 32 -w 8``
consume   ``consumer --from-first`` over what ``batched`` stored
sf-batch  SYNC_FLUSH broker, ``producer -m batch -b 32 -w 8`` (acknowledged = fsynced)
========= ================================================================================

It prints msg/s, send latency p50/p99 where the client reports it, and the CPU per message
of the broker process (all its threads, ``/proc``) and of the client (net of a one-message
run's start-up): on this shared machine the CPU figures are the evidence, throughput moves
with the other work. The designs are interleaved round by round, every other round in
reverse order (``--only`` picks workloads). It asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from run_matrix import PERCENTILES, SUMMARY, Cluster, _run, calibrate

HERE = Path(__file__).resolve().parent
PROTOTYPES = HERE / "splitproto"
TREE = HERE.parent
WORKLOADS = ("sync", "pipelined", "batched", "consume", "sf-batch")
Figures = tuple[float, float, float, float, float]
"""msg/s, broker CPU µs/msg, client CPU µs/msg, p50 ms, p99 ms."""


def _figures(text: str, broker: float, client: float) -> Figures:
    found = SUMMARY.findall(text)
    sent, rate = (int(found[-1][1]), float(found[-1][3])) if found else (0, 0.0)
    line = next((m.group(0) for m in SUMMARY.finditer(text)), "")
    pct = PERCENTILES.search(line)
    per = 1e6 / sent if sent else 0.0
    return (rate, broker * per, client * per, float(pct.group(1)) if pct else 0.0,
            float(pct.group(2)) if pct else 0.0)


def _workloads(stamp: int, scale: float) -> dict[str, list[str]]:
    def n(count: int) -> str:
        return str(max(1, int(count * scale)))

    return {
        "sync": ["producer", "-t", f"SpSync{stamp}", "-m", "sync", "-w", "1", "-c", n(5000)],
        "pipelined": ["producer", "-t", f"SpPipe{stamp}", "-m", "async", "-w", "1000", "-c", n(30000)],
        "batched": ["producer", "-t", f"SpBatch{stamp}", "-m", "batch", "-b", "32", "-w", "8", "-c", n(100000)],
        "consume": ["consumer", "-t", f"SpBatch{stamp}", "-g", f"spg{stamp}", "-c", n(100000), "--from-first",
                    "-d", "300"],
    }


def _measure(design: str, scale: float, only: set[str]) -> dict[str, Figures]:
    saved = dict(os.environ)
    os.environ["PYTHONPATH"] = f"{PROTOTYPES}:{TREE}"
    os.environ.pop("ROCKETQ_SPLIT", None)
    if design != "single":
        os.environ["ROCKETQ_SPLIT"] = design
    try:
        return _measure_here(scale, only)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _measure_here(scale: float, only: set[str]) -> dict[str, Figures]:
    stamp = int(time.time() * 1000)
    out: dict[str, Figures] = {}
    plans = {name: args for name, args in _workloads(stamp, scale).items() if name in only}
    if "consume" in plans and "batched" not in plans:
        plans = {"batched": _workloads(stamp, scale)["batched"], **plans}  # consume reads what batched stored
    with tempfile.TemporaryDirectory(prefix="rocketq-split-") as tmp:
        if plans:
            with Cluster(Path(tmp) / "async", "ASYNC_FLUSH") as cluster:
                _o, _w, _b, startup = _run(cluster, ["producer", "-t", f"SpWarm{stamp}", "-m", "sync", "-c", "1"])
                for name, args in plans.items():
                    text, _wall, broker, client = _run(cluster, args)
                    out[name] = _figures(text, broker, max(0.0, client - startup))
        if "sf-batch" not in only:
            return out
        with Cluster(Path(tmp) / "sync", "SYNC_FLUSH") as cluster:
            _o, _w, _b, startup = _run(cluster, ["producer", "-t", f"SpWarm{stamp}", "-m", "sync", "-c", "1"])
            args = ["producer", "-t", f"SpSf{stamp}", "-m", "batch", "-b", "32", "-w", "8",
                    "-c", str(max(1, int(30000 * scale)))]
            text, _wall, broker, client = _run(cluster, args)
            out["sf-batch"] = _figures(text, broker, max(0.0, client - startup))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--design", action="append", help="single, store-thread, io-threads:N or a+b (repeatable)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every message count")
    parser.add_argument("--only", default=",".join(WORKLOADS), help=f"comma-separated (of {','.join(WORKLOADS)})")
    args = parser.parse_args()
    only = set(args.only.split(","))
    designs = args.design or ["single", "store-thread", "io-threads:1", "io-threads:2"]
    results: dict[tuple[str, str], list[Figures]] = {}
    print(f"calibration before: {calibrate():.1f} ns per Python call; load average {os.getloadavg()}", flush=True)
    for round_no in range(args.rounds):
        # every other round in reverse (ABBA): a slot that is faster for the machine's reasons
        # (the first after a pause, say) is shared by every design
        for design in designs if round_no % 2 == 0 else designs[::-1]:
            for name, figures in _measure(design, args.scale, only).items():
                results.setdefault((name, design), []).append(figures)
                rate, broker, client, p50, p99 = figures
                print(f"round {round_no + 1} {design:>13} {name:>9}: {rate:8.0f} msg/s  broker {broker:6.1f} us/msg"
                      f"  client {client:6.1f} us/msg  p50 {p50:.2f} p99 {p99:.2f} ms", flush=True)
    print(f"calibration after: {calibrate():.1f} ns per Python call; load average {os.getloadavg()}")
    print("\n| workload | design | msg/s | broker CPU µs/msg | client CPU µs/msg | p50 / p99 ms "
          "| median msg/s | median broker + client µs/msg |")
    print("|---|---|---|---|---|---|---|---|")
    for (name, design), rows in sorted(results.items(), key=lambda item: item[0][0]):
        cols = [" / ".join(f"{r[i]:.0f}" for r in rows) for i in range(3)]
        lat = " / ".join(f"{r[3]:.1f}-{r[4]:.1f}" for r in rows) if name != "consume" else "—"
        total = statistics.median(r[1] + r[2] for r in rows)
        print(f"| {name} | {design} | {cols[0]} | {cols[1]} | {cols[2]} | {lat} | "
              f"{statistics.median(r[0] for r in rows):.0f} | {total:.1f} |")


if __name__ == "__main__":
    main()
