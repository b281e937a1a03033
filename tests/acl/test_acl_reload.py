"""The live ACL table: a changed file replaces it, a broken or missing one leaves it."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.acl.plainacl import AclFileError
from rocketq.acl.reload import AclTable

ONE = "accounts:\n- {accessKey: firstAK1, secretKey: firstSK1}\n"
TWO = "accounts:\n- {accessKey: secondAK, secretKey: secondSK}\n"
INTERVAL = 0.02


@contextlib.asynccontextmanager
async def watching(path: Path) -> AsyncIterator[AclTable]:
    table = AclTable(path, INTERVAL)
    await table.start()
    try:
        yield table
    finally:
        await table.close()
        await table.close()  # idempotent


async def settle(table: AclTable, reloads: int) -> None:
    for _ in range(200):
        if table.reloads >= reloads:
            return
        await asyncio.sleep(INTERVAL)


async def test_changes_replace_the_table_and_bad_files_keep_it(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ONE)
    async with watching(path) as table:
        assert set(table.config.accounts) == {"firstAK1"}
        path.write_text(TWO)
        await settle(table, 1)
        assert set(table.config.accounts) == {"secondAK"}
        path.write_text("accounts:\n- {accessKey: bad}\n")
        await asyncio.sleep(INTERVAL * 10)
        path.unlink()
        await asyncio.sleep(INTERVAL * 10)
        assert set(table.config.accounts) == {"secondAK"} and table.reloads == 1
        path.write_text(ONE)
        await settle(table, 2)
        assert set(table.config.accounts) == {"firstAK1"}


async def test_an_unusable_file_at_start_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text("accounts: 3\n")
    with pytest.raises(AclFileError, match="accounts: expected a list"):
        await AclTable(path, INTERVAL).start()


async def test_a_same_size_edit_with_an_unchanged_stamp_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ONE)
    async with watching(path) as table:
        stat = path.stat()
        path.write_text(ONE.replace("firstAK1", "firstAK2"))  # same size, same inode
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as a coarse clock would leave it
        await settle(table, 1)
        assert set(table.config.accounts) == {"firstAK2"}
