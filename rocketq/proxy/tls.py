"""TLS on the gRPC endpoint: RocketMQ proxy's keys, a certificate pair checked at start.

RocketMQ's proxy decides per connection: ``tls.server.mode`` (a ``TlsSystemConfig`` system
property; ``disabled``, ``permissive``, ``enforcing``) says whether a connection may, must or must
not speak TLS, and permissive (its default) sniffs the first bytes of each connection. Its
certificate comes from ProxyConfig: ``tlsTestModeEnable`` (default true) makes a self-signed one
in memory at start, otherwise ``tlsCertPath`` / ``tlsKeyPath`` (PEM) are read.

grpc.aio cannot sniff: a port is either TLS or plaintext. So rocketq takes ``tls.server.mode`` as
a config key with ``disabled`` as its default (plaintext, what the clients' ``tls_enable=False``
expects), ``enforcing`` serves TLS only, and ``permissive`` is refused at start rather than
silently meaning one of the two. The certificate keys keep RocketMQ's names and defaults. A
file that is missing, not PEM, or a key that does not belong to the certificate stops the
process before anything binds, as any bad setting does (exit 2).
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from rocketq.proxy.settings import ENFORCING, MODE_KEY, ProxySettings
from rocketq.settings import SettingsError

DEFAULT_CERT_RELATIVE: Final = Path("conf/tls/rocketmq.crt")
DEFAULT_KEY_RELATIVE: Final = Path("conf/tls/rocketmq.key")
"""RocketMQ's defaults, under the proxy's home ($ROCKETMQ_HOME)."""
SELF_SIGNED_DAYS: Final = 365
SELF_SIGNED_NAME: Final = "localhost"
"""The subject RocketMQ's test-mode certificate (Netty's SelfSignedCertificate) carries."""


@dataclass(frozen=True, slots=True)
class KeyPair:
    cert_pem: bytes
    key_pem: bytes

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the certificate (DER), as ``openssl x509 -fingerprint -sha256`` prints it."""
        der = x509.load_pem_x509_certificate(self.cert_pem).public_bytes(serialization.Encoding.DER)
        return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials([(self.key_pem, self.cert_pem)])


def key_pair(settings: ProxySettings, hosts: tuple[str, ...]) -> KeyPair | None:
    """What the endpoint serves with: None (plaintext), a test-mode pair naming ``hosts``, or the files'."""
    if not settings.tls_enabled:
        return None
    if settings.tls_test_mode_enable:
        return self_signed(hosts)
    return read_pair(_path(settings.tls_cert_path, DEFAULT_CERT_RELATIVE, "tlsCertPath"),
                     _path(settings.tls_key_path, DEFAULT_KEY_RELATIVE, "tlsKeyPath"))


def _path(configured: str, relative: Path, key: str) -> Path:
    """The configured file, else RocketMQ's place for it under $ROCKETMQ_HOME."""
    if configured:
        return Path(configured)
    home = os.environ.get("ROCKETMQ_HOME")
    if not home:
        raise SettingsError(f"{MODE_KEY}={ENFORCING} with tlsTestModeEnable=false: set {key} or ROCKETMQ_HOME")
    return Path(home) / relative


def read_pair(cert_path: Path, key_path: Path) -> KeyPair:
    """The PEM pair from files, checked: both parse and the key is the certificate's."""
    return checked_pair(_read(cert_path, "tlsCertPath"), _read(key_path, "tlsKeyPath"),
                        f"tlsCertPath {cert_path}", f"tlsKeyPath {key_path}")


def checked_pair(cert_pem: bytes, key_pem: bytes, cert_where: str, key_where: str) -> KeyPair:
    """The PEM pair if both parse and the key is the certificate's, else a SettingsError naming
    ``cert_where`` / ``key_where`` (the operator checks a Secret's pair with it, too)."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError as exc:
        raise SettingsError(f"{cert_where}: not a PEM certificate ({exc})") from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError) as exc:  # TypeError: the key is encrypted
        raise SettingsError(f"{key_where}: not an unencrypted PEM private key ({exc})") from None
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if (key.public_key().public_bytes(serialization.Encoding.DER, spki)
            != cert.public_key().public_bytes(serialization.Encoding.DER, spki)):
        raise SettingsError(f"{key_where} is not the private key of {cert_where}")
    return KeyPair(cert_pem, key_pem)


def _read(path: Path, key: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SettingsError(f"{key} {path}: cannot read ({exc.strerror})") from None


def self_signed(hosts: tuple[str, ...]) -> KeyPair:
    """A fresh key and a certificate for it, signed by itself, naming ``hosts`` (names or IPs)."""
    key = ec.generate_private_key(ec.SECP256R1())  # P-256: instant to make, every gRPC client accepts it
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SELF_SIGNED_NAME)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))  # tolerate a client's clock a little behind
            .not_valid_after(now + datetime.timedelta(days=SELF_SIGNED_DAYS))
            .add_extension(x509.SubjectAlternativeName([_general_name(h) for h in dict.fromkeys(hosts)]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), key_pem)


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)
