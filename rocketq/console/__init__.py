"""``rocketq console``: the web console, an aiohttp application over ``rocketq.admin``.

What an operator would otherwise type as mqadmin commands, as pages: the cluster, topics,
consumer groups, messages. It holds no admin logic of its own: every page asks
``rocketq.admin`` (``AdminClient`` and the cluster-wide operations in ``rocketq.admin.cluster``)
and renders the answer server-side with jinja2. Every asset (CSS, the small chart script) is
package data served by the console itself, so it works without internet access.

Layers, each importing only the ones above it:

* ``config``: ``ConsoleConfig``, what ``rocketq console``'s options set; ``keys``: where the app keeps
  its parts.
* ``users``: the users file (``name:role:argon2-hash`` lines; a Kubernetes Secret mounted as a
  file works the same), password hashing and checking, the two roles (``admin``, ``read-only``).
* ``sessions``: server-side sessions behind an opaque cookie; each carries its CSRF token and the
  flash messages shown after a redirect.
* ``throttle``: failed logins per address, so passwords cannot be guessed at speed.
* ``audit``: who changed what, when, and how it ended: one JSON line per state-changing action.
* ``failures``: bad input and unreachable servers as pages, never a stack trace; ``forms``: typed
  form values or a 400 naming the field.
* ``bodies``, ``rates``, ``history``: message bodies as text/JSON/hex, TPS from broker counters,
  the samples the charts draw (taken by a background task).
* ``guards``: the middlewares: session, CSRF on every POST, login required, admin role for changes.
* ``rendering``: template setup and the context every page gets.
* ``pages/*``: one module per page group (``auth``, ``cluster``, ``topics``, ...), each a route table.
* ``app``: ``make_app`` puts them together.
"""
