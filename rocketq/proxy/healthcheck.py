"""Asking a proxy's gRPC port whether it serves: ``rocketq proxy health`` (an exec probe).

The proxy answers ``grpc.health.v1.Health/Check`` on its gRPC port (``server.py``). Kubernetes'
own ``grpc`` probe asks that question in plaintext only, so a port with
``tls.server.mode=enforcing`` needs a client that speaks TLS: this one, run inside the pod
(``exec``) against ``127.0.0.1``.

It does not authenticate the server, on purpose: it dials its own pod, so the question is "does
this port complete a TLS handshake and answer SERVING", not "is this the right server". It first
reads the certificate the port presents (not verified), then makes the gRPC call trusting exactly
that certificate, under a name the certificate carries (gRPC checks the name, and a pod's
certificate names its Service, not ``127.0.0.1``). A certificate signed by a CA works as well as a
self-signed one: gRPC accepts a certificate given as a root as a trust anchor by itself. Reading
the certificate from the port rather than from the mounted Secret keeps the probe true while a
rotated Secret has reached the files but not yet the process (which reads them at start).

What it does not do: ask anything beyond the health service (a proxy without brokers is
SERVING: it answers calls with in-band errors), or retry (the kubelet probes again).
"""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass
from typing import Final

import grpc
from cryptography import x509
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health_pb2, health_pb2_grpc

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_TIMEOUT_S: Final = 5.0
"""Within the operator's probe timeout (10 s), with room for the interpreter to start."""
WILDCARD_STAND_IN: Final = "probe"
"""The label put in place of a wildcard's ``*``: gRPC needs a concrete name the pattern covers."""
FALLBACK_NAME: Final = "localhost"


@dataclass(frozen=True)
class Answer:
    serving: bool
    detail: str
    """The health status name (``SERVING``, ``NOT_SERVING``, ...) or why there was none."""


def presented_certificate(host: str, port: int, timeout: float) -> bytes:
    """The certificate (PEM) the TLS port presents, read without verifying it; ALPN h2 as gRPC offers."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    with socket.create_connection((host, port), timeout=timeout) as raw, \
            context.wrap_socket(raw, server_hostname=host) as wrapped:
        der = wrapped.getpeercert(binary_form=True)
    if der is None:
        raise ssl.SSLError("the port presented no certificate")
    return ssl.DER_cert_to_PEM_cert(der).encode()


def name_in(cert_pem: bytes) -> str:
    """A host name the certificate is valid for: its first DNS name (a wildcard made concrete),
    else its first IP address, else its common name."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        names = x509.SubjectAlternativeName([])
    dns = names.get_values_for_type(x509.DNSName)
    if dns:
        first = dns[0]
        return f"{WILDCARD_STAND_IN}.{first[2:]}" if first.startswith("*.") else first
    addresses = names.get_values_for_type(x509.IPAddress)
    if addresses:
        return str(addresses[0])
    common = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(common[0].value) if common else FALLBACK_NAME


def check(port: int, *, host: str = DEFAULT_HOST, tls: bool = False, service: str = "",
          timeout: float = DEFAULT_TIMEOUT_S) -> Answer:
    """One ``Health/Check`` for ``service`` ("" = the whole server) on ``host:port``."""
    target = f"{host}:{port}"
    try:
        if tls:
            cert = presented_certificate(host, port, timeout)
            channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(cert),
                                          options=[("grpc.ssl_target_name_override", name_in(cert))])
        else:
            channel = grpc.insecure_channel(target)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError; ValueError: an unreadable certificate
        return Answer(False, f"no TLS handshake with {target}: {exc}")
    with channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError as exc:
            return Answer(False, f"{target}: {exc.code().name} {exc.details()}")
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    return Answer(reply.status == health_pb2.HealthCheckResponse.SERVING, status)
