"""DataVersion: the (timestamp, counter) stamp RocketMQ puts on topic and group tables.

The name server rebuilds a broker's routes only when the stamp it registers with changed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class DataVersion:
    timestamp: int
    counter: int = 0

    @classmethod
    def new(cls) -> DataVersion:
        return cls(int(time.time() * 1000), 0)

    def next(self) -> DataVersion:
        return DataVersion(int(time.time() * 1000), self.counter + 1)

    def to_json(self) -> dict[str, Any]:
        return {"timestamp": self.timestamp, "counter": self.counter}

    @classmethod
    def from_json(cls, raw: Any) -> DataVersion:
        if not isinstance(raw, dict):
            return cls.new()
        counter = raw.get("counter", 0)
        if isinstance(counter, dict):  # Java serializes AtomicLong as {"value": n} in some versions
            counter = counter.get("value", 0)
        return cls(int(raw.get("timestamp", 0)), int(counter))
