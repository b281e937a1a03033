"""Interleaved before/after runs of single-message sends: CPU per message of broker and client.

    .venv/bin/python bench/run_ab.py --tree before=/tmp/base --tree after=. [--rounds 3]
        [--sync 8000] [--pipelined 30000]
    .venv/bin/python bench/run_ab.py --tree uvloop=. --tree asyncio=.:ROCKETQ_UVLOOP=0

On a shared machine throughput moves by 2-3x between minutes; CPU time per message moves far
less, and interleaving (before, after, before, after, ...) spreads what drift remains over both
sides. Each ``--tree`` is a source tree of rocketq (with its compiled ``rocketq/_native*.so``)
put first on ``PYTHONPATH`` for every process of its runs, with the environment variables
given after it (``path:NAME=VALUE:...``); per round and tree it starts a fresh
``rocketq local up`` (ASYNC_FLUSH, one broker) and runs:

* ``sync``: ``rocketq bench producer -m sync -w 1`` (one send at a time);
* ``pipelined``: ``rocketq bench producer -m async -w 1000`` (up to 1 000 sends in flight).

It prints msg/s, and the broker's and the bench process's CPU (user + system) per message,
the latter net of a one-message run's start-up cost. It measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from run_matrix import SUMMARY, Cluster, _run, calibrate


def _measure(tree: str, sync: int, pipelined: int) -> dict[str, tuple[float, float, float]]:
    path, *settings = tree.split(":")
    saved = dict(os.environ)
    os.environ["PYTHONPATH"] = str(Path(path).resolve())
    os.environ.update(setting.split("=", 1) for setting in settings)
    try:
        return _measure_here(sync, pipelined)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _measure_here(sync: int, pipelined: int) -> dict[str, tuple[float, float, float]]:
    stamp = int(time.time() * 1000)
    out: dict[str, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="rocketq-ab-") as tmp, Cluster(Path(tmp), "ASYNC_FLUSH") as cluster:
        _o, _w, _b, startup = _run(cluster, ["producer", "-t", f"AbWarm{stamp}", "-m", "sync", "-c", "1"])
        plans = {
            "sync": ["producer", "-t", f"AbSync{stamp}", "-m", "sync", "-w", "1", "-c", str(sync)],
            "pipelined": ["producer", "-t", f"AbPipe{stamp}", "-m", "async", "-w", "1000", "-c", str(pipelined)],
        }
        for name, args in plans.items():
            text, _wall, broker, client = _run(cluster, args)
            found = SUMMARY.findall(text)
            sent, rate = (int(found[-1][1]), float(found[-1][3])) if found else (0, 0.0)
            per = 1e6 / sent if sent else 0.0
            out[name] = (rate, broker * per, max(0.0, client - startup) * per)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True,
                        help="label=path[:NAME=VALUE...] of a rocketq source tree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sync", type=int, default=8000, help="messages of the sync run")
    parser.add_argument("--pipelined", type=int, default=30000, help="messages of the pipelined run")
    args = parser.parse_args()
    trees = [(label, tree) for label, tree in (t.split("=", 1) for t in args.tree)]
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    print(f"calibration before: {calibrate():.1f} ns per Python call", flush=True)
    for round_no in range(args.rounds):
        for label, tree in trees:
            for name, figures in _measure(tree, args.sync, args.pipelined).items():
                results.setdefault((name, label), []).append(figures)
                print(f"round {round_no + 1} {label:>10} {name:>9}: {figures[0]:8.0f} msg/s  broker "
                      f"{figures[1]:6.1f} us/msg  client {figures[2]:6.1f} us/msg", flush=True)
    print(f"calibration after: {calibrate():.1f} ns per Python call")
    print("\n| workload | tree | msg/s | broker CPU us/msg | client CPU us/msg | median broker / client |")
    print("|---|---|---|---|---|---|")
    for (name, label), rows in results.items():
        cols = [" / ".join(f"{r[i]:.0f}" for r in rows) for i in range(3)]
        medians = f"{statistics.median(r[1] for r in rows):.1f} / {statistics.median(r[2] for r in rows):.1f}"
        print(f"| {name} | {label} | {cols[0]} | {cols[1]} | {cols[2]} | {medians} |")


if __name__ == "__main__":
    main()
