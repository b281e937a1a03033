"""innerClientAuthenticationCredentials / innerClientCredentialsFile: the account a broker signs its
own calls with (the JSON and YAML forms are shared with the proxy, tests/proxy/test_credentials.py)."""

from __future__ import annotations

import pathlib

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from rocketq.acl import innerclient, plainacl, signing, validator
from rocketq.acl.settings import AclSettings
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.settings import SettingsError, build

GOOD = '{"accessKey": "brokerInner", "secretKey": "innerSecret1"}'
ACL = plainacl.parse("""
accounts:
- accessKey: brokerInner
  secretKey: innerSecret1
  admin: true
- accessKey: plainUser
  secretKey: plainSecret1
""")


def test_the_setting_names_both_keys_or_nothing() -> None:
    assert innerclient.parse("") is None
    assert innerclient.parse(GOOD) == innerclient.Credentials("brokerInner", "innerSecret1")
    for bad in ("not json", "[1]", '{"accessKey": "a"}', '{"accessKey": " ", "secretKey": "x1234567"}',
                '{"accessKey": "a", "secretKey": true}', '{"accessKey": "a", "secretKey": ["x1234567"]}'):
        with pytest.raises(innerclient.CredentialsError) as caught:
            innerclient.parse(bad)
        assert "x1234567" not in str(caught.value)


def test_a_broker_with_a_bad_value_does_not_start_and_the_secret_stays_out_of_logs() -> None:
    with pytest.raises(SettingsError, match="secretKey"):
        build(AclSettings, {innerclient.KEY: '{"accessKey": "a"}'}, environ={})
    settings = build(AclSettings, {}, environ={innerclient.ENV: GOOD})
    assert settings.inner_client_credentials == GOOD
    assert "innerSecret1" not in repr(settings)


def test_the_signer_signs_what_the_master_checks() -> None:
    credentials = innerclient.parse(GOOD)
    assert credentials is not None
    hook = credentials.signer()
    request = RemotingCommand(code=RequestCode.GET_ALL_TOPIC_CONFIG, ext_fields={"topicSeq": "0"})
    hook(request)
    assert request.ext_fields[signing.ACCESS_KEY] == "brokerInner"
    assert validator.check(ACL, request, "10.0.0.9") is None
    assert validator.check(ACL, RemotingCommand(code=RequestCode.GET_ALL_TOPIC_CONFIG), "10.0.0.9") is not None


def test_start_up_says_why_a_master_would_refuse() -> None:
    def reason(access_key: str, secret_key: str) -> str:
        return innerclient.unusable_reason(ACL, innerclient.Credentials(access_key, secret_key)) or ""
    assert innerclient.unusable_reason(ACL, innerclient.parse(GOOD)) is None
    assert "not set" in (innerclient.unusable_reason(ACL, None) or "")
    assert "does not hold" in reason("x", "y")
    assert "differs" in reason("brokerInner", "z")
    assert "not admin" in reason("plainUser", "plainSecret1")
    assert "wrongSecret9" not in reason("brokerInner", "wrongSecret9")


def test_a_bare_number_is_its_text_as_rocketmq_reads_it() -> None:
    assert innerclient.parse('{"accessKey": "a", "secretKey": 12345678}') == innerclient.Credentials("a", "12345678")


def test_the_file_signs_when_the_json_key_and_env_are_empty(tmp_path: pathlib.Path) -> None:
    tools = tmp_path / "tools.yml"
    tools.write_text("accessKey: brokerInner\nsecretKey: innerSecret1\n")
    settings = build(AclSettings, {innerclient.FILE_KEY: str(tools)}, environ={})
    assert settings.inner_client() == innerclient.Credentials("brokerInner", "innerSecret1")
    from_env = build(AclSettings, {innerclient.FILE_KEY: str(tools)},
                     environ={innerclient.ENV: '{"accessKey": "fromEnv", "secretKey": "envSecret1"}'})
    assert from_env.inner_client() == innerclient.Credentials("fromEnv", "envSecret1"), "the JSON wins"
    assert build(AclSettings, {}, environ={}).inner_client() is None


def test_a_named_file_that_does_not_exist_means_unsigned_with_a_warning(tmp_path: pathlib.Path) -> None:
    missing = str(tmp_path / "tools.yml")  # an ACL Secret without tools.yml, as the operator mounts it
    assert build(AclSettings, {innerclient.FILE_KEY: missing}, environ={}).inner_client() is None
    assert missing in (innerclient.unusable_reason(ACL, None, missing) or "")


def test_a_broken_file_stops_the_broker_without_showing_the_secret(tmp_path: pathlib.Path) -> None:
    tools = tmp_path / "tools.yml"
    for text in ("accessKey: brokerInner\nsecretKey: x1234567: [\n", "accessKey: brokerInner\n",
                 "secretKey: x1234567\naccessKey: [a, b]\n", "- x1234567\n",
                 "accessKey: brokerInner\nsecretKey: *x1234567\n"):
        tools.write_text(text)
        with pytest.raises(SettingsError) as caught:
            build(AclSettings, {innerclient.FILE_KEY: str(tools)}, environ={}).inner_client()
        assert "x1234567" not in str(caught.value) and str(tools) in str(caught.value)


@given(st.dictionaries(st.sampled_from(["accessKey", "secretKey", "securityToken", "other"]),
                       st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
                       | st.lists(st.integers(), max_size=2)))
def test_any_yaml_mapping_is_an_account_or_a_credentials_error(data: dict[str, object]) -> None:
    text = yaml.safe_dump(data)
    try:
        got = innerclient.from_mapping(yaml.safe_load(text), "tools.yml")
    except innerclient.CredentialsError:
        return
    assert got.access_key and got.secret_key and got.access_key == got.access_key.strip()
