"""plain_acl.yml parsing: RocketMQ's own sample file, and errors that name the field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from rocketq.acl import permissions, plainacl
from rocketq.acl.plainacl import AclFileError

SAMPLE = Path(__file__).parents[1] / "fixtures" / "rocketmq-conf" / "acl" / "plain_acl.yml"


def test_rocketmqs_sample_file() -> None:
    config = plainacl.load(SAMPLE)
    assert config.global_white_addresses == ()
    plain, admin = config.accounts["RocketMQ"], config.accounts["rocketmq2"]
    assert plain.secret_key == "12345678"  # a YAML number, read as text as Java does
    assert not plain.admin and admin.admin
    assert plain.default_topic_perm == permissions.DENY and plain.default_group_perm == permissions.SUB
    assert plain.resource_perms == {
        "topicA": permissions.DENY, "topicB": permissions.PUB | permissions.SUB, "topicC": permissions.SUB,
        "%RETRY%groupA": permissions.DENY, "%RETRY%groupB": permissions.PUB | permissions.SUB,
        "%RETRY%groupC": permissions.SUB,
    }
    assert not plain.white_remote_address.match("192.168.1.5")
    assert admin.white_remote_address.match("192.168.1.5")
    assert admin.default_topic_perm == permissions.DENY and admin.resource_perms == {}


def test_invalid_permissions_fail_closed() -> None:
    config = plainacl.parse("accounts:\n- {accessKey: abcdefg, secretKey: 1234567, defaultTopicPerm: WRITE,"
                            " topicPerms: [t=ALL]}\n")
    account = config.accounts["abcdefg"]
    assert account.default_topic_perm == permissions.DENY and account.resource_perms["t"] == permissions.DENY


@pytest.mark.parametrize(("text", "field"), [
    ("accounts:\n- {accessKey: short, secretKey: 12345678}", "accounts[0].accessKey"),
    ("accounts:\n- {accessKey: abcdefg, secretKey: 123}", "accounts[0].secretKey"),
    ("accounts:\n- {accessKey: abcdefg}", "accounts[0].secretKey"),
    ("accounts:\n- {accessKey: abcdefg, secretKey: 1234567}\n- {accessKey: abcdefg, secretKey: 1234567}",
     "accounts[1].accessKey"),
    ("accounts:\n- {accessKey: abcdefg, secretKey: 1234567, topicPerms: [topicA]}", "accounts[0].topicPerms[0]"),
    ("accounts:\n- {accessKey: abcdefg, secretKey: 1234567, groupPerms: {g: SUB}}", "accounts[0].groupPerms"),
    ("accounts:\n- {accessKey: abcdefg, secretKey: 1234567, admin: maybe}", "accounts[0].admin"),
    ("accounts:\n- {accessKey: abcdefg, secretKey: 1234567, whiteRemoteAddress: 1.2.3.999}",
     "accounts[0].whiteRemoteAddress"),
    ("globalWhiteRemoteAddresses: [10.*, nonsense]", "globalWhiteRemoteAddresses[1]"),
    ("accounts: 5", "accounts"),
    ("- a list", "top level"),
    ("accounts: [", "not YAML"),
])
def test_errors_name_the_field(text: str, field: str) -> None:
    with pytest.raises(AclFileError, match=re.escape(field)):
        plainacl.parse(text)


@pytest.mark.parametrize("text", [
    "accounts:\n- accessKey: rocketmq2\n  secretKey: \"s3cr3t-value\n",  # unterminated quote
    "accounts:\n- accessKey: rocketmq2\n  secretKey: *s3cr3t-value\n",  # an unquoted * is an alias
    "accounts:\n- accessKey: rocketmq2\n  secretKey: s3cr3t-value: more\n",
])
def test_a_yaml_error_never_shows_the_line_that_may_hold_a_secret(text: str) -> None:
    with pytest.raises(AclFileError, match="not YAML") as raised:
        plainacl.parse(text)
    assert "s3cr3t" not in str(raised.value)
    assert " at line " in str(raised.value)  # where, without what


def test_a_missing_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(AclFileError, match=r"plain_acl\.yml"):
        plainacl.load(tmp_path / "plain_acl.yml")


keys = st.text(st.characters(min_codepoint=48, max_codepoint=122), min_size=7, max_size=12)
perms = st.sampled_from(["PUB", "SUB", "PUB|SUB", "SUB|PUB", "DENY", "pub", "bogus"])
resources = st.lists(st.tuples(st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,10}", fullmatch=True), perms), max_size=4)


@given(st.lists(st.tuples(keys, keys, st.booleans(), perms, resources), max_size=4, unique_by=lambda a: a[0]))
def test_generated_files_round_trip(accounts: list[tuple[str, str, bool, str, list[tuple[str, str]]]]) -> None:
    raw = {"accounts": [
        {"accessKey": ak, "secretKey": sk, "admin": admin, "defaultTopicPerm": default,
         "topicPerms": [f"{name}={perm}" for name, perm in res]}
        for ak, sk, admin, default, res in accounts]}
    config = plainacl.parse(yaml.safe_dump(raw))
    assert set(config.accounts) == {a[0] for a in accounts}
    for ak, sk, admin, default, res in accounts:
        account = config.accounts[ak]
        assert (account.secret_key, account.admin) == (sk, admin)
        assert account.default_topic_perm == (permissions.parse(default) or permissions.DENY)
        assert account.resource_perms == {name: permissions.parse(perm) or permissions.DENY for name, perm in res}


@given(st.text(max_size=200))
def test_any_text_parses_or_raises_the_file_error(text: str) -> None:
    try:
        config = plainacl.parse(text)
    except AclFileError as exc:
        assert str(exc)
    else:
        assert isinstance(config, plainacl.AclConfig)
