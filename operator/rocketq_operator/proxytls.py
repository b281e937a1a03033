"""The proxy's TLS Secret (``spec.proxy.tls.secretName``), as the proxy step reads it.

With ``spec.proxy.tls`` enforcing, the proxy pods mount a kubernetes.io/tls Secret the user owns
(cert-manager's, or ``kubectl create secret tls``) and serve its ``tls.crt`` / ``tls.key``. The
operator reads that Secret on every pass (a GET; it never lists, watches or writes Secrets) for
two reasons:

- **Refuse before a pod would fail.** A missing Secret leaves new pods in ContainerCreating, and a
  pair ``rocketq proxy`` cannot load makes it exit 2 and crash-loop. So a Secret that is absent,
  lacks a key, or holds a pair that is not PEM or does not match (checked with the proxy's own
  ``rocketq.proxy.tls.checked_pair``) is a ``ProxyReady=False`` reason here, and the step applies
  nothing: running pods keep serving what they loaded.
- **Roll on rotation.** The proxy reads its certificate once, at start. The digest of the pair
  is a pod-template annotation, so a renewed certificate changes the template and the Deployment
  replaces the pods (a new one ready before an old one goes). The operator sees the renewal on its
  next pass (the reconcile timer), not at once: it does not watch Secrets.

Pure except ``inspect``, which makes the one API call.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from rocketq.proxy import tls
from rocketq.settings import SettingsError
from rocketq_operator import kubeapi
from rocketq_operator.rendering import common
from rocketq_operator.rendering.proxy import CERT_KEY, KEY_KEY

NOT_FOUND: Final = "TLSSecretNotFound"
INVALID: Final = "TLSSecretInvalid"
FORBIDDEN: Final = "TLSSecretForbidden"


@dataclass(frozen=True)
class Unusable:
    """Why the Secret cannot be used: the ``ProxyReady`` reason and message."""

    reason: str
    message: str


async def inspect(api: kubeapi.KubeApi, namespace: str, name: str) -> str | Unusable:
    """The digest of the Secret's pair, or why it cannot be used."""
    try:
        secret = await api.get("Secret", namespace, name)
    except kubeapi.Forbidden as exc:
        return Unusable(FORBIDDEN, (
            f"spec.proxy.tls names Secret {name}, which the operator may not read ({exc}); grant get on "
            "secrets as the chart's operator role does"))
    return check(secret, name)


def check(secret: Mapping[str, Any] | None, name: str) -> str | Unusable:
    """What the proxy would make of ``secret`` (None: not there): the pair's digest, or the problem."""
    if secret is None:
        return Unusable(NOT_FOUND, (
            f"spec.proxy.tls.secretName: Secret {name} does not exist; create it (kubernetes.io/tls, keys "
            f"{CERT_KEY} and {KEY_KEY}) and the proxy is rendered on the next pass"))
    data = secret.get("data") or {}
    missing = [key for key in (CERT_KEY, KEY_KEY) if not data.get(key)]
    if missing:
        return Unusable(INVALID, f"Secret {name} lacks {' and '.join(missing)} (a kubernetes.io/tls Secret holds "
                                 f"{CERT_KEY} and {KEY_KEY})")
    try:
        cert_pem, key_pem = (base64.b64decode(data[key], validate=True) for key in (CERT_KEY, KEY_KEY))
        tls.checked_pair(cert_pem, key_pem, f"Secret {name} {CERT_KEY}", f"Secret {name} {KEY_KEY}")
    except (binascii.Error, SettingsError) as exc:
        return Unusable(INVALID, f"{exc}; rocketq proxy would refuse to start with it")
    return common.digest({CERT_KEY: data[CERT_KEY], KEY_KEY: data[KEY_KEY]})
