"""GET_BROKER_CLUSTER_ACL_CONFIG's body (code 54): round trip, fastjson's leniency, refusals."""

from __future__ import annotations

import contextlib
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol.aclbodies import SECRET_MASK, ClusterAclConfig, PlainAccessConfig
from rocketq.protocol.sharedbodies import BodyError

words = st.text(max_size=20)
accounts = st.builds(
    PlainAccessConfig, access_key=st.text(min_size=1, max_size=20), secret_key=words,
    white_remote_address=words, admin=st.booleans(), default_topic_perm=words, default_group_perm=words,
    topic_perms=st.lists(words, max_size=4).map(tuple), group_perms=st.lists(words, max_size=4).map(tuple))
configs = st.builds(ClusterAclConfig, st.lists(words, max_size=4).map(tuple), st.lists(accounts, max_size=5).map(tuple))


@given(configs)
def test_round_trip(config: ClusterAclConfig) -> None:
    assert ClusterAclConfig.decode(config.encode()) == config


json_values = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.sampled_from(["globalWhiteAddrs", "plainAccessConfigs", "accessKey",
                                                              "admin", "topicPerms", "x"]), inner, max_size=4),
                           max_leaves=12)


@given(json_values | st.binary(max_size=40))
def test_any_body_decodes_or_raises_body_error(value: Any) -> None:
    """Never another exception: a hostile or broken broker's answer is a BodyError."""
    body = value if isinstance(value, bytes) else orjson.dumps(value)
    with contextlib.suppress(BodyError):
        ClusterAclConfig.decode(body)


def test_what_a_java_broker_sends_is_read() -> None:
    """Absent lists and fields are empty; fastjson's ``"admin": "true"`` is a boolean."""
    body = orjson.dumps({"globalWhiteAddrs": ["10.1.*"], "plainAccessConfigs": [
        {"accessKey": "RocketMQ1", "secretKey": "12345678", "admin": "true", "topicPerms": ["t=PUB"]},
        {"accessKey": "RocketMQ2"}]})
    config = ClusterAclConfig.decode(body)
    assert config.global_white_addrs == ("10.1.*",)
    first, second = config.accounts
    assert first.admin and first.topic_perms == ("t=PUB",) and first.group_perms == ()
    assert second == PlainAccessConfig(access_key="RocketMQ2")
    assert ClusterAclConfig.decode(b"{}") == ClusterAclConfig()


@pytest.mark.parametrize("body, phrase", [
    (b"[]", "must be a JSON object"),
    (b'{"plainAccessConfigs": {}}', "plainAccessConfigs must be a list"),
    (b'{"plainAccessConfigs": [{"secretKey": "x"}]}', "plainAccessConfigs[0].accessKey is missing"),
    (b'{"globalWhiteAddrs": [1]}', "globalWhiteAddrs must be a list of strings"),
    (b'{"plainAccessConfigs": [{"accessKey": "k", "admin": "maybe"}]}', "admin"),
])
def test_unreadable_bodies_name_the_place(body: bytes, phrase: str) -> None:
    with pytest.raises(BodyError, match=phrase.replace("[", r"\[").replace("]", r"\]")):
        ClusterAclConfig.decode(body)


def test_shown_masks_the_secret_key() -> None:
    shown = PlainAccessConfig(access_key="RocketMQ1", secret_key="topSecret99").shown()
    assert shown["secretKey"] == SECRET_MASK and "topSecret99" not in orjson.dumps(shown).decode()
