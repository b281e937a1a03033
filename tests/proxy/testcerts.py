"""Certificates for TLS tests: a private CA and a server certificate it signs, as cert-manager or
an operator's PKI would issue for a proxy's Service (names only, no 127.0.0.1 unless asked)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_FOR: Final = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Issued:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _general(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def issue(hosts: tuple[str, ...], common_name: str = "rocketq-proxy") -> Issued:
    """A fresh CA and a leaf for ``hosts`` (empty: a leaf with no subjectAltName at all)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("rocketq test CA")).issuer_name(_name("rocketq test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALID_FOR)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(ca.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALID_FOR)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))
    if hosts:
        builder = builder.add_extension(x509.SubjectAlternativeName([_general(h) for h in hosts]), critical=False)
    leaf = builder.sign(ca_key, hashes.SHA256())
    pem = serialization.Encoding.PEM
    return Issued(ca.public_bytes(pem), leaf.public_bytes(pem),
                  key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
