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


THREE = "globalWhiteRemoteAddresses: [10.1.1.*]\naccounts:\n- {accessKey: thirdAK1, secretKey: thirdSK1}\n"


async def test_the_acl_directory_files_are_merged_in_and_followed(tmp_path: Path) -> None:
    """RocketMQ 4.9.3: plain_acl.yml plus every *.yml/*.yaml in acl/ beside it."""
    path = tmp_path / "plain_acl.yml"
    path.write_text(ONE)
    directory = tmp_path / "acl"
    directory.mkdir()
    (directory / "b.yaml").write_text(TWO)
    (directory / "notes.txt").write_text("not an ACL file")
    async with watching(path) as table:
        assert set(table.config.accounts) == {"firstAK1", "secondAK"}
        assert table.owners["secondAK"] == directory / "b.yaml"
        (directory / "a.yml").write_text(THREE)
        await settle(table, 1)
        assert set(table.config.accounts) == {"firstAK1", "secondAK", "thirdAK1"}
        assert any(p.match("10.1.1.9") for p in table.config.global_white_addresses)
        (directory / "b.yaml").unlink()
        await settle(table, 2)
        assert set(table.config.accounts) == {"firstAK1", "thirdAK1"}


async def test_an_access_key_belongs_to_the_first_file_that_defines_it(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ONE)
    (tmp_path / "acl").mkdir()
    (tmp_path / "acl" / "dup.yml").write_text(ONE.replace("firstSK1", "otherSK1"))
    async with watching(path) as table:
        assert table.config.accounts["firstAK1"].secret_key == "firstSK1"
        assert table.owners["firstAK1"] == path


async def test_a_broken_directory_file_at_start_is_an_error_and_later_keeps_its_accounts(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ONE)
    directory = tmp_path / "acl"
    directory.mkdir()
    (directory / "x.yml").write_text("accounts: 3\n")
    with pytest.raises(AclFileError, match=r"x\.yml"):
        await AclTable(path, INTERVAL).start()
    (directory / "x.yml").write_text(TWO)
    async with watching(path) as table:
        (directory / "x.yml").write_text("accounts: 3\n")
        await asyncio.sleep(INTERVAL * 10)
        assert set(table.config.accounts) == {"firstAK1", "secondAK"} and table.reloads == 0


async def test_reload_now_applies_a_change_at_once(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ONE)
    table = AclTable(path, interval=3600)
    await table.start()
    try:
        path.write_text(TWO)
        await table.reload_now()
        assert set(table.config.accounts) == {"secondAK"}
    finally:
        await table.close()
