"""Access control as Apache RocketMQ 4.9's plain ACL does it: accounts in ``plain_acl.yml``,
requests signed by the client with the account's secret, checked by the broker before dispatch.

The parts, each one concept:

* ``plainacl``   — the file's schema: accounts, permissions, global white addresses (parsing only);
* ``addresses``  — the ``whiteRemoteAddress`` patterns (``*``, ``192.168.0.*``, ``1.2.3.{4,5}``, ranges);
* ``signing``    — the canonical content of a request and its HmacSHA1 signature, for both sides;
* ``validator``  — which resources a request code needs and the allow/refuse decision;
* ``reload``     — the broker's current table, re-read when the file changes;
* ``guard``      — the broker-side hook that wraps request handlers with the check;
* ``settings``   — the broker.conf keys (``aclEnable``, the file's path).

As in RocketMQ 4.9, only the broker checks requests; name servers accept every request.
"""
