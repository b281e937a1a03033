"""The proxy's own ACL account (rocketq/proxy/credentials.py) and the broker's acceptance of a LOCAL
endpoint's in-process account (``validator.check``'s ``internal``)."""

from __future__ import annotations

import json
import pathlib

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from rocketq import settings
from rocketq.acl import innerclient, signing, validator
from rocketq.acl.plainacl import Account, AclConfig
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.proxy import credentials
from rocketq.proxy import settings as proxy_settings
from rocketq.proxy.credentials import Credentials, InnerClientSettings
from rocketq.settings import SettingsError

ENABLED = {"enableAclRpcHookForClusterMode": "true"}


def resolve(values: dict[str, str]) -> Credentials | None:
    return credentials.resolve(settings.build(InnerClientSettings, values))


def test_signing_is_off_unless_enabled_even_with_credentials_given() -> None:
    assert resolve({"innerClientAuthenticationCredentials": '{"accessKey": "rocketmq2", "secretKey": "x"}'}) is None


def test_the_json_key_gives_the_account() -> None:
    got = resolve({**ENABLED, "innerClientAuthenticationCredentials":
                   '{"accessKey": "rocketmq2", "secretKey": "12345678", "securityToken": "t"}'})
    assert got == Credentials("rocketmq2", "12345678", "t")
    assert "12345678" not in repr(got)


def test_a_json_object_in_rmq_proxy_json_works_too(tmp_path: pathlib.Path) -> None:
    conf = tmp_path / "rmq-proxy.json"
    account = {"accessKey": "ak12345", "secretKey": 12345678}  # an object, not JSON text; a bare number
    conf.write_text(json.dumps({"namesrvAddr": "127.0.0.1:9876", "enableAclRpcHookForClusterMode": True,
                                "innerClientAuthenticationCredentials": account}))
    values = proxy_settings.read_json(conf)
    assert proxy_settings.load(values)[2] == [], "the account's keys are not reported as unused"
    assert credentials.resolve(proxy_settings.load_inner_client(values)) == Credentials("ak12345", "12345678")


def test_tools_yml_under_rocketmq_home_when_the_json_key_is_blank(tmp_path: pathlib.Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "tools.yml").write_text("accessKey: rocketmq2\nsecretKey: 12345678\n")
    monkeypatch.setenv("ROCKETMQ_HOME", str(tmp_path))
    assert resolve(ENABLED) == Credentials("rocketmq2", "12345678")


def test_the_file_key_names_another_file(tmp_path: pathlib.Path) -> None:
    tools = tmp_path / "elsewhere.yml"
    tools.write_text(yaml.safe_dump({"accessKey": "proxyAccount", "secretKey": "proxySecret"}))
    assert resolve({**ENABLED, "innerClientCredentialsFile": str(tools)}) == Credentials("proxyAccount", "proxySecret")


@pytest.mark.parametrize(("text", "message"), [
    ("not json", "not JSON"),
    ('["rocketmq2"]', "expected accessKey"),
    ('{"accessKey": "rocketmq2"}', "must both be given"),
    ('{"accessKey": " ", "secretKey": "12345678"}', "must both be given"),
])
def test_unusable_json_stops_the_proxy(text: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        resolve({**ENABLED, "innerClientAuthenticationCredentials": text})


def test_a_missing_or_broken_file_stops_the_proxy(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    with pytest.raises(SettingsError, match="ROCKETMQ_HOME"):
        resolve(ENABLED)
    with pytest.raises(SettingsError, match="cannot read"):
        resolve({**ENABLED, "innerClientCredentialsFile": str(tmp_path / "missing.yml")})
    broken = tmp_path / "broken.yml"
    broken.write_text("accessKey: [unclosed\n")
    with pytest.raises(SettingsError, match="not YAML"):
        resolve({**ENABLED, "innerClientCredentialsFile": str(broken)})
    huge = tmp_path / "huge.yml"
    huge.write_bytes(b"#" * (innerclient.MAX_FILE_SIZE + 1))
    with pytest.raises(SettingsError, match="larger than"):
        resolve({**ENABLED, "innerClientCredentialsFile": str(huge)})


@given(st.text(max_size=200))
def test_any_json_key_text_is_an_account_or_a_settings_error(text: str) -> None:
    try:
        got = resolve({**ENABLED, "innerClientAuthenticationCredentials": text})
    except SettingsError:
        return
    assert got is not None and got.access_key and got.secret_key


def _signed(creds: Credentials, topic: str = "AnyTopic") -> RemotingCommand:
    cmd = RemotingCommand(code=RequestCode.PULL_MESSAGE, ext_fields={"consumerGroup": "g1", "topic": topic})
    signing.Signer(creds.access_key, creds.secret_key)(cmd)
    return cmd


def test_a_broker_accepts_its_local_endpoints_account_beside_the_file() -> None:
    creds, account = credentials.internal()
    assert account.admin and account.access_key == creds.access_key
    table = AclConfig(accounts={"other12": Account("other12", "otherSecret")})
    assert validator.check(table, _signed(creds), "10.0.0.1", account) is None
    assert validator.check(table, _signed(creds), "10.0.0.1") == f"No acl config for {creds.access_key}"
    forged = Credentials(creds.access_key, "a guessed secret")
    assert validator.check(table, _signed(forged), "10.0.0.1", account) == \
        f"Check signature failed for accessKey={creds.access_key}"
    again, _ = credentials.internal()
    assert again.access_key != creds.access_key and again.secret_key != creds.secret_key


def test_a_broken_file_is_reported_without_the_line_that_holds_the_secret(tmp_path: pathlib.Path) -> None:
    """YAML's own message quotes the offending line; the proxy's error gives only where it is."""
    broken = tmp_path / "tools.yml"
    broken.write_text("accessKey: proxyAccount\nsecretKey: topSecret1: [unclosed\n")
    with pytest.raises(SettingsError, match="not YAML") as caught:
        resolve({**ENABLED, "innerClientCredentialsFile": str(broken)})
    assert "topSecret1" not in str(caught.value) and "line 2" in str(caught.value)
