"""Small builders shared by the store tests."""

from __future__ import annotations

from typing import Any

from rocketq.store.messagestore import MessageStore, PutRequest, PutResult


def request(**overrides: Any) -> PutRequest:
    values: dict[str, Any] = dict(topic="T", queue_id=0, body=b"body", properties={})
    values.update(overrides)
    return PutRequest(**values)


async def put_many(store: MessageStore, count: int, *, keys: str | None = None, body: bytes = b"payload",
                   queue_id: int = 0) -> list[PutResult]:
    results = []
    for i in range(count):
        props = {"UNIQ_KEY": f"U{i}", "TAGS": "t"}
        if keys:
            props["KEYS"] = keys
        result = await store.put(request(body=body, properties=props, queue_id=queue_id))
        assert result.ok, result
        results.append(result)
    return results
