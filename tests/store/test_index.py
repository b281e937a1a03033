"""IndexFile and IndexService: RocketMQ's layout, hash chains, time ranges, rolling, cleanup."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import javahash
from rocketq.store import index
from rocketq.store.index import ENTRY, HEADER, IndexFile, IndexService

T0 = 1_700_000_000_000


def service(tmp_path: Path, slots: int = 8, entries: int = 20) -> IndexService:
    svc = IndexService(tmp_path, slots, entries, lambda: T0)
    svc.load()
    return svc


def test_key_hash_is_java_hash_of_topic_key() -> None:
    assert index.key_hash("T", "k") == abs(javahash.java_string_hash("T#k"))
    assert index.key_hash("T", "") == abs(javahash.java_string_hash("T#"))
    assert index.file_name(T0).startswith("2023111")
    assert len(index.file_name(T0)) == 17


def test_layout_on_disk(tmp_path: Path) -> None:
    f = IndexFile(tmp_path / index.file_name(T0), 4, 10, create=True)
    assert f.size == 40 + 4 * 4 + 10 * 20
    assert f.put(6, 1000, T0) and f.put(2, 2000, T0 + 5500)  # same slot (6 % 4 == 2 % 4)
    f.write_header()
    raw = f.path.read_bytes()
    assert HEADER.unpack_from(raw, 0) == (T0, T0 + 5500, 1000, 2000, 1, 3)
    slot = int.from_bytes(raw[40 + 2 * 4:40 + 3 * 4], "big")
    assert slot == 2
    assert ENTRY.unpack_from(raw, 40 + 16 + 2 * 20) == (2, 2000, 5, 1)  # chained to entry 1
    assert ENTRY.unpack_from(raw, 40 + 16 + 1 * 20) == (6, 1000, 0, 0)
    f.close()


def test_lookup_by_key_uniq_key_and_time(tmp_path: Path) -> None:
    svc = service(tmp_path)
    svc.add("T", "U1", "a b", 100, T0)
    svc.add("T", "U2", "a", 200, T0 + 10_000)
    svc.add("Other", None, "a", 300, T0 + 20_000)
    svc.commit()
    everything = (0, T0 + 60_000)
    assert svc.query("T", "a", 10, *everything)[0] == [200, 100]
    assert svc.query("T", "U1", 10, *everything)[0] == [100]
    assert svc.query("T", "b", 10, *everything)[0] == [100]
    assert svc.query("T", "a", 1, *everything)[0] == [200]
    assert svc.query("T", "a", 10, T0 + 5_000, T0 + 15_000)[0] == [200]
    assert svc.query("T", "missing", 10, *everything)[0] == []
    offsets, last_ts, last_phy = svc.query("Other", "a", 10, *everything)
    assert (offsets, last_ts, last_phy) == ([300], T0 + 20_000, 300)
    svc.close()
    again = service(tmp_path)
    assert again.query("T", "a", 10, *everything)[0] == [200, 100]
    assert again.end_phy_offset == 300
    again.close()


def test_full_file_rolls(tmp_path: Path) -> None:
    svc = service(tmp_path, slots=4, entries=5)  # four usable entries per file
    for i in range(10):
        svc.add("T", None, "k", i, T0 + i)
    svc.commit()
    assert len(svc.files) == 3
    assert len(svc.query("T", "k", 100, 0, T0 + 100)[0]) == 10
    assert svc.delete_below(8) == 2
    assert len(svc.files) == 1
    svc.close()


def test_corrupt_chain_does_not_loop(tmp_path: Path) -> None:
    f = IndexFile(tmp_path / index.file_name(T0), 4, 10, create=True)
    f.put(1, 10, T0)
    f.put(5, 20, T0)
    ENTRY.pack_into(f.buf, 40 + 16 + 1 * 20, 1, 10, 0, 2)  # entry 1 points "forward" to 2
    found: list[int] = []
    f.lookup(1, 0, T0 + 1, 100, found)
    assert found == [10]
    f.close()


def test_drop_unreliable(tmp_path: Path) -> None:
    svc = service(tmp_path, slots=4, entries=3)
    for i in range(6):
        svc.add("T", None, "k", i * 10, T0 + i * 1000)
    svc.commit()
    assert len(svc.files) == 3
    # Two entries per file: [0, 10] [20, 30] [40, 50]; the last two end after the checkpoint.
    assert svc.drop_unreliable(checkpoint_ts=T0 + 2500, phys_end=10 ** 6) == 20
    assert len(svc.files) == 1 and svc.end_phy_offset == 10
    assert svc.drop_unreliable(checkpoint_ts=T0 + 10_000, phys_end=10 ** 6) is None
    assert svc.drop_unreliable(checkpoint_ts=T0 + 10_000, phys_end=5) == 0  # covers lost bytes
    assert svc.files == [] and svc.end_phy_offset == -1
    svc.close()


@given(st.text(min_size=1, max_size=30), st.text(max_size=40))
def test_key_hash_extends_the_topic_hash_as_java_hashes_topic_hash_key(topic: str, key: str) -> None:
    value = abs(javahash.java_string_hash(f"{topic}#{key}"))
    assert index.key_hash(topic, key) == (0 if value > 0x7FFFFFFF else value)
