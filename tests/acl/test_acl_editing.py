"""ACL file edits (codes 50, 51, 53): what changes, what stays, and never a file the broker
could not load."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from rocketq.acl import editing, permissions, plainacl
from rocketq.acl.editing import AccountChange, AclEditError

BASE = """\
globalWhiteRemoteAddresses: [10.10.103.*]
accounts:
- accessKey: existing1
  secretKey: secret001
  whiteRemoteAddress: 192.168.0.*
  admin: false
  defaultTopicPerm: DENY
  defaultGroupPerm: SUB
  topicPerms: [topicA=PUB|SUB]
dataVersion:
- {counter: 4, timestamp: 1000}
"""


@pytest.fixture
def acl_file(tmp_path: Path) -> Path:
    path = tmp_path / "plain_acl.yml"
    path.write_text(BASE)
    path.chmod(0o640)
    return path


def test_a_new_account_is_appended_and_the_version_bumped(acl_file: Path) -> None:
    editing.upsert_account(acl_file, AccountChange("newAccount", "newSecret1", topic_perms=["t1=PUB"]))
    config = plainacl.load(acl_file)
    assert set(config.accounts) == {"existing1", "newAccount"}
    assert config.accounts["newAccount"].resource_perms == {"t1": permissions.PUB}
    assert config.data_version.counter == 5
    assert config.data_version.timestamp > 1000


def test_an_update_changes_only_the_fields_given(acl_file: Path) -> None:
    editing.upsert_account(acl_file, AccountChange("existing1", default_topic_perm="PUB", group_perms=["g=DENY"]))
    account = plainacl.load(acl_file).accounts["existing1"]
    assert account.secret_key == "secret001"
    assert account.default_topic_perm == permissions.PUB
    assert account.default_group_perm == permissions.SUB
    assert account.resource_perms == {"topicA": permissions.PUB | permissions.SUB, "%RETRY%g": permissions.DENY}
    assert account.white_remote_address.match("192.168.0.7")


def test_an_empty_list_clears_the_entries(acl_file: Path) -> None:
    editing.upsert_account(acl_file, AccountChange("existing1", topic_perms=[]))
    assert plainacl.load(acl_file).accounts["existing1"].resource_perms == {}


@pytest.mark.parametrize("change, why", [
    (AccountChange("short"), "accessKey"),
    (AccountChange("existing1", secret_key="short"), "secretKey"),
    (AccountChange("brandNewOne"), "needs a secretKey"),
    (AccountChange("existing1", white_remote_address="300.1.1.1"), "whiteRemoteAddress"),
    (AccountChange("existing1", topic_perms=["no-equals-sign"]), "topicPerms"),
])
def test_a_change_that_would_break_the_file_is_refused_and_the_file_kept(acl_file: Path, change: AccountChange,
                                                                         why: str) -> None:
    with pytest.raises(AclEditError, match=why):
        editing.upsert_account(acl_file, change)
    assert acl_file.read_text() == BASE


def test_the_secret_is_not_echoed_in_the_refusal(acl_file: Path) -> None:
    with pytest.raises(AclEditError) as refused:
        editing.upsert_account(acl_file, AccountChange("existing1", secret_key="abc"))
    assert "abc" not in str(refused.value)


def test_delete_removes_only_that_account(acl_file: Path) -> None:
    editing.upsert_account(acl_file, AccountChange("another1", "anotherSecret"))
    assert editing.delete_account(acl_file, "existing1")
    assert set(plainacl.load(acl_file).accounts) == {"another1"}
    assert not editing.delete_account(acl_file, "existing1")


def test_global_white_addresses_are_replaced_as_a_whole(acl_file: Path) -> None:
    editing.set_global_white_addresses(acl_file, ["127.0.0.1", "10.0.0.*"])
    config = plainacl.load(acl_file)
    assert [p.match("127.0.0.1") for p in config.global_white_addresses] == [True, False]
    assert not any(p.match("10.10.103.1") for p in config.global_white_addresses)
    with pytest.raises(AclEditError):
        editing.set_global_white_addresses(acl_file, ["300.0.0.1"])


def test_a_missing_or_empty_file_starts_a_new_document(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text("")
    editing.upsert_account(path, AccountChange("firstOne", "firstSecret"))
    assert set(plainacl.load(path).accounts) == {"firstOne"}
    assert yaml.safe_load(path.read_text())["dataVersion"][0]["counter"] == 1


def test_the_file_is_replaced_atomically_keeping_its_mode(acl_file: Path) -> None:
    inode = os.stat(acl_file).st_ino
    editing.upsert_account(acl_file, AccountChange("existing1", admin=True))
    assert os.stat(acl_file).st_ino != inode  # a new file renamed over the old one
    assert stat.S_IMODE(os.stat(acl_file).st_mode) == 0o640
    assert [p.name for p in acl_file.parent.iterdir()] == ["plain_acl.yml"]  # no temporary left


def test_a_file_that_cannot_be_written_is_an_edit_error(tmp_path: Path) -> None:
    with pytest.raises(AclEditError, match="cannot write"):
        editing.upsert_account(tmp_path / "gone" / "plain_acl.yml", AccountChange("firstOne", "firstSecret"))


def test_an_unparsable_file_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text("accounts: [unclosed")
    with pytest.raises(AclEditError, match="YAML"):
        editing.upsert_account(path, AccountChange("firstOne", "firstSecret"))
    assert path.read_text() == "accounts: [unclosed"
