"""The kopf handlers: thin wrappers that run a reconcile pass and write its status.

``register(registry, config, admin_factory)`` adds every handler to a kopf registry (the
default one in ``main``, a fresh one per test), so nothing is registered on import:

- startup/cleanup: build and close the ``Runtime`` (API client, BrokerAdmin, metrics endpoint,
  cluster ticker).
- RocketMQCluster: create, update and resume run one pass at once; the ``Ticker`` (see
  ``ticking``) runs one every ``reconcile_interval`` seconds to stay level-based (readiness,
  rolls, failover, drains), fed by an event handler. No finalizer, and no kopf timer (which
  would add one): Kubernetes' garbage collector removes the children through owner
  references, so a cluster can be deleted while the operator is stopped.
- RocketMQTopic / RocketMQConsumerGroup: create, update, resume and a slower timer push the
  entity to every master; a delete handler (and with it kopf's finalizer) removes it from the
  brokers before the object goes. At most ``runtime.ENTITY_PASSES`` of these passes run at
  once: thousands of objects seen at startup would otherwise queue thousands of API calls
  ahead of the cluster passes they wait for (the API client's calls share a few threads).

Passes over one object never overlap: the ticker, the timers and the change handlers share
one ``asyncio.Lock`` per object (``Runtime.lock``). Kubernetes or broker errors become
``kopf.TemporaryError`` so kopf retries after ``retry_delay``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import zlib
from collections.abc import Awaitable, Callable
from typing import Any, Final, cast

import kopf

from rocketq_operator import brokeradmin, cachedadmin, conditions, entities, entitysync, kubeapi, reconciler, ticking
from rocketq_operator.metrics import Metrics, MetricsServer, Result
from rocketq_operator.runtime import Context, OperatorConfig, Runtime

GROUP: Final = "rocketq.io"
VERSION: Final = "v1alpha1"
CLUSTERS: Final = "rocketmqclusters"
PLURALS: Final = {entities.TOPIC_KIND: "rocketmqtopics", entities.GROUP_KIND: "rocketmqconsumergroups"}
FINALIZER: Final = "rocketq.io/finalizer"
FINALIZER_POLLING: Final = 1.0
CLUSTER_KIND: Final = "RocketMQCluster"
IGNORED_ANNOTATIONS: Final = ("metadata", "annotations", entitysync.APPLIED_NAME)
"""Left out of what kopf compares between versions of an object (its "essence")."""

AdminFactory = Callable[[OperatorConfig], brokeradmin.BrokerAdmin]
ApiFactory = Callable[[], kubeapi.KubeApi]
Pass = Callable[[Context, kopf.Body], Awaitable[dict[str, Any]]]
"""One reconcile pass over the given body; returns the status it wants."""


def _runtime(memo: Any) -> Runtime:
    runtime = memo.get("runtime")
    if not isinstance(runtime, Runtime):
        raise kopf.PermanentError("the operator's runtime is missing: the startup handler did not run")
    return runtime


def _context(runtime: Runtime, body: kopf.Body, logger: Any) -> Context:
    def emit(kind: str, reason: str, message: str) -> None:
        kopf.event(body, type=kind, reason=reason, message=message)  # queued; kopf posts it
    return Context(runtime=runtime, emit=emit, logger=logger, now=runtime.clock())


def _deleting(body: kopf.Body) -> bool:
    return bool(body.get("metadata", {}).get("deletionTimestamp"))


def _key(body: kopf.Body) -> tuple[str, str]:
    meta = body.get("metadata", {})
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


async def _measured(runtime: Runtime, kind: str, key: tuple[str, str], load: Callable[[], Awaitable[kopf.Body | None]],
                    logger: Any, work: Pass, stopped: Callable[[], bool]) -> tuple[kopf.Body, dict[str, Any]] | None:
    """Run one pass under the object's lock and count it: the body it ran on and the status it
    wants, or None when it did not run.

    ``load`` gives the body once the lock is held, so a pass never starts from a spec older than
    the one the pass before it applied. ``stopped`` is checked then too: a timer that waited for
    a delete handler must not bring back what that handler just removed."""
    started = time.monotonic()
    result = Result.OK
    try:
        async with runtime.lock(kind, *key):
            body = await load()
            if body is None or stopped() or _deleting(body):
                return None
            status = await work(_context(runtime, body, logger), body)
        result = _result_of(status)
        return body, status
    except Exception as exc:
        result = Result.ERROR
        runtime.metrics.errors.labels(kind=kind, error=type(exc).__name__).inc()
        raise
    finally:
        runtime.metrics.duration.labels(kind=kind).observe(time.monotonic() - started)
        runtime.metrics.reconciles.labels(kind=kind, result=result.value).inc()


async def _run(kind: str, body: kopf.Body, patch: kopf.Patch, memo: Any, logger: Any, work: Pass,
               stopped: Callable[[], bool] = lambda: False, message_interval: float | None = None,
               slots: asyncio.Semaphore | None = None) -> None:
    """A pass from a kopf handler: its status goes into kopf's patch, only if it changed.

    With ``message_interval``, a change of nothing but condition messages (a Pending topic's
    list of brokers it still waits for) is written at most once per that many seconds per
    object: thousands of objects waiting for one cluster must not rewrite their status on every
    pass. A change of phase, reason, brokers or generation is written at once. With ``slots``,
    the pass first waits for one of them."""
    runtime = _runtime(memo)

    async def given() -> kopf.Body:  # kopf hands its handlers the body of the newest event
        return body

    try:
        async with slots if slots is not None else contextlib.nullcontext():
            done = await _measured(runtime, kind, _key(body), given, logger, work, stopped)
    except (kubeapi.ApiError, brokeradmin.BrokerAdminError, entitysync.Retry) as exc:
        raise kopf.TemporaryError(str(exc), delay=runtime.config.retry_delay) from exc
    if done is None:
        return
    changes = conditions.status_patch(body.get("status"), done[1])
    if not changes:
        return
    written = (kind, *_key(body))
    last = runtime.status_written.get(written)
    if (message_interval is not None and last is not None and time.monotonic() - last < message_interval
            and conditions.only_messages_differ(body.get("status"), done[1])):
        return
    runtime.status_written[written] = time.monotonic()
    for key, value in changes.items():
        patch.status[key] = value


async def _tick_cluster(runtime: Runtime, namespace: str, name: str) -> None:
    """A periodic pass over one cluster: read it, reconcile, write the status if it changed."""
    async def read() -> kopf.Body | None:
        raw = await runtime.api.get(CLUSTER_KIND, namespace, name)
        return kopf.Body(cast(kopf.RawBody, raw)) if raw is not None else None

    logger = logging.LoggerAdapter(logging.getLogger("rocketq_operator.clusters"),
                                   {"object": f"{namespace}/{name}"})
    try:
        done = await _measured(runtime, CLUSTER_KIND, (namespace, name), read, logger,
                               reconciler.reconcile, lambda: False)
    except (kubeapi.ApiError, brokeradmin.BrokerAdminError) as exc:
        logger.warning(f"Periodic pass failed, the next one retries: {exc}")
        return
    changes = conditions.status_patch(done[0].get("status"), done[1]) if done is not None else {}
    if changes:
        await runtime.api.patch(CLUSTER_KIND, namespace, name, {"status": changes}, subresource="status")


def _result_of(status: dict[str, Any]) -> Result:
    if status.get("phase") == conditions.Phase.FAILED.value:
        return Result.INVALID
    paused = any(c.get("type") == conditions.Type.PAUSED.value and c.get("status") == "True"
                 for c in status.get("conditions") or [])
    return Result.PAUSED if paused else Result.OK


def _register_runtime(registry: kopf.OperatorRegistry, config: OperatorConfig, admin_factory: AdminFactory,
                      api_factory: ApiFactory) -> None:
    @kopf.on.startup(id="rocketq-runtime-start", registry=registry)
    async def start_runtime(settings: kopf.OperatorSettings, memo: Any, logger: Any, **_: Any) -> None:
        settings.peering.standalone = config.standalone
        settings.persistence.finalizer = FINALIZER
        # kopf keeps each object's last handled spec and annotations to tell what changed; our own
        # bookkeeping annotation is no change worth handling, and without this kopf rewrites its
        # record once more for every new topic and group (one PATCH each: 7 000 at scale).
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
            ignored_fields=[IGNORED_ANNOTATIONS])
        # Handler log lines stay in the log; Events are posted explicitly for what users must see.
        settings.posting.level = logging.WARNING
        # A timer still running when its object is deleted delays the finalizer's release by
        # this much (kopf's default is 60 s); ours finish within a pass.
        settings.background.cancellation_polling = FINALIZER_POLLING
        metrics = Metrics()
        server = MetricsServer(metrics, "0.0.0.0", config.metrics_port) if config.metrics_port else None
        admin = cachedadmin.CachingBrokerAdmin(admin_factory(config), config.read_cache_ttl)
        runtime = Runtime(api=api_factory(), admin=admin, config=config,
                          metrics=metrics, server=server)
        runtime.ticker = ticking.Ticker(config.reconcile_interval,
                                        lambda namespace, name: _tick_cluster(runtime, namespace, name))
        memo["runtime"] = runtime
        if server is not None:
            await server.start()
            logger.info(f"Serving /metrics and /healthz on port {server.port}.")

    @kopf.on.cleanup(id="rocketq-runtime-stop", registry=registry)
    async def stop_runtime(memo: Any, **_: Any) -> None:
        runtime = memo.get("runtime")
        if isinstance(runtime, Runtime):
            await runtime.close()


def _register_clusters(registry: kopf.OperatorRegistry, config: OperatorConfig) -> None:
    async def cluster_pass(body: kopf.Body, patch: kopf.Patch, memo: Any, logger: Any, **_: Any) -> None:
        await _run(CLUSTER_KIND, body, patch, memo, logger, reconciler.reconcile)

    async def cluster_seen(body: kopf.Body, type: str | None, memo: Any, **_: Any) -> None:
        runtime = _runtime(memo)
        gone = type == "DELETED" or _deleting(body)
        if runtime.ticker is not None:
            runtime.ticker.track(*_key(body), present=not gone)
            # Started here, not at startup: a task inherits the context it is created in, and
            # kopf.event() works only in the context kopf gives its resource handlers.
            runtime.ticker.start()
        if gone:
            runtime.forget(CLUSTER_KIND, *_key(body))

    for decorator, handler_id in ((kopf.on.create, "cluster-create"), (kopf.on.update, "cluster-update"),
                                  (kopf.on.resume, "cluster-resume")):
        decorator(GROUP, VERSION, CLUSTERS, id=handler_id, registry=registry)(cluster_pass)
    kopf.on.event(GROUP, VERSION, CLUSTERS, id="cluster-seen", registry=registry)(cluster_seen)


def spread(body: kopf.Body, interval: float) -> float:
    """A timer's first delay, in [0, interval), fixed per object (its uid).

    kopf starts a timer when its object appears and, without a delay, runs it at once: right
    after the create or resume pass, and for thousands of objects seen at startup, all in the
    same moment of every interval afterwards. Spread by uid, their passes are spread too."""
    uid = str(body.get("metadata", {}).get("uid", ""))
    return interval * (zlib.crc32(uid.encode()) / 2**32)


def _register_entity(registry: kopf.OperatorRegistry, config: OperatorConfig, kind: str) -> None:
    plural = PLURALS[kind]
    prefix = plural.removeprefix("rocketmq").rstrip("s")

    async def entity_pass(body: kopf.Body, patch: kopf.Patch, memo: Any, logger: Any, **_: Any) -> None:
        await _run(kind, body, patch, memo, logger, lambda ctx, current: entitysync.sync(ctx, kind, current),
                   message_interval=config.entity_interval, slots=_runtime(memo).entity_slots)

    async def entity_timer(body: kopf.Body, patch: kopf.Patch, memo: Any, logger: Any, **kwargs: Any) -> None:
        await _run(kind, body, patch, memo, logger, lambda ctx, current: entitysync.sync(ctx, kind, current),
                   stopped=lambda: bool(kwargs.get("stopped")), message_interval=config.entity_interval,
                   slots=_runtime(memo).entity_slots)

    async def entity_delete(body: kopf.Body, patch: kopf.Patch, memo: Any, logger: Any, **_: Any) -> None:
        runtime = _runtime(memo)
        ctx = _context(runtime, body, logger)
        try:
            async with runtime.lock(kind, *_key(body)):
                logger.info(await entitysync.remove(ctx, kind, body))
        except (kubeapi.ApiError, brokeradmin.BrokerAdminError, entitysync.Retry) as exc:
            runtime.metrics.errors.labels(kind=kind, error=type(exc).__name__).inc()
            # kopf writes the patch even though the handler fails: the reason reaches the status.
            changes = conditions.status_patch(body.get("status"), entitysync.deletion_blocked(ctx, body, str(exc)))
            for key, value in changes.items():
                patch.status[key] = value
            if "conditions" in changes:  # a new reason: tell it once, not on every retry
                ctx.emit("Warning", entitysync.DELETION_BLOCKED, str(exc))
            raise kopf.TemporaryError(str(exc), delay=runtime.config.retry_delay) from exc
        runtime.forget(kind, *_key(body))

    kopf.on.create(GROUP, VERSION, plural, id=f"{prefix}-create", registry=registry)(entity_pass)
    kopf.on.resume(GROUP, VERSION, plural, id=f"{prefix}-resume", registry=registry)(entity_pass)
    # Only a spec change needs a pass: the operator's own annotation (rocketq.io/applied-name)
    # would otherwise start a second pass, and a second status write, for every new object.
    kopf.on.update(GROUP, VERSION, plural, id=f"{prefix}-update", field="spec", registry=registry)(entity_pass)
    kopf.timer(GROUP, VERSION, plural, id=f"{prefix}-timer", interval=config.entity_interval,
               initial_delay=lambda body, **_: spread(body, config.entity_interval),
               registry=registry)(entity_timer)
    kopf.on.delete(GROUP, VERSION, plural, id=f"{prefix}-delete", registry=registry)(entity_delete)


def register(registry: kopf.OperatorRegistry, config: OperatorConfig, admin_factory: AdminFactory,
             api_factory: ApiFactory = kubeapi.ClientApi.from_environment) -> None:
    """Add every rocketq handler to ``registry``."""
    _register_runtime(registry, config, admin_factory, api_factory)
    _register_clusters(registry, config)
    for kind in PLURALS:
        _register_entity(registry, config, kind)
