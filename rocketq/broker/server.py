"""A broker process: the store, the metadata managers, the handlers and every background task.

``BrokerServer`` is the one owner: ``start`` reserves the remoting port, opens the store
(recovering after a crash), installs the handlers, and only then listens, registers with the
name servers and starts the periodic work (registration, client liveness, offset flushing);
``close`` undoes all of it in reverse, step by step (a failed step is logged and the rest still
run, so the store is always flushed and closed), and may be called twice. Handlers get only
the parts they use; nothing reaches through this class.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import Awaitable, Callable, Collection

from prometheus_client import CollectorRegistry

from rocketq.acl import guard, innerclient
from rocketq.acl.plainacl import Account
from rocketq.acl.reload import AclTable
from rocketq.acl.settings import AclSettings
from rocketq.broker import clientadmin, locks, runtimeconfig, schedule, statsdata, transactionchecks, transactions
from rocketq.broker import clienttable as client_registry
from rocketq.broker.acladmin import AclAdminHandlers
from rocketq.broker.adminops import AdminHandlers, slave_guarded
from rocketq.broker.assignment import AssignmentHandlers
from rocketq.broker.clienthandlers import ClientHandlers
from rocketq.broker.clienttable import ClientManager
from rocketq.broker.filters import ConsumerFilters
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.metrics import BrokerCollector
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.popconsumption import PopConsumption
from rocketq.broker.pull import PullHandlers
from rocketq.broker.queries import QueryHandlers
from rocketq.broker.registration import BrokerRegistration, Registrar, parse_namesrv_addrs
from rocketq.broker.replies import ReplyHandlers
from rocketq.broker.schedule import ScheduleService
from rocketq.broker.send import PUT_STATUS_TO_RESPONSE, BrokerAddress, SendHandlers
from rocketq.broker.sendback import SendBackHandlers
from rocketq.broker.settings import BrokerBehaviour, BrokerIdentity, BrokerRole, default_host_ip
from rocketq.broker.topics import TopicConfigManager
from rocketq.broker.traffic import TrafficSampler
from rocketq.dledger import storelog
from rocketq.dledger.brokerservice import DLedgerService, slave_broker_id
from rocketq.dledger.node import RaftNode
from rocketq.dledger.settings import DLedgerSettings
from rocketq.ha import fencing, reads, role
from rocketq.ha.metasync import SlaveSynchronizer
from rocketq.ha.service import HAService
from rocketq.ha.settings import HASettings
from rocketq.metrics import http as metrics_http
from rocketq.metrics.http import MetricsServer
from rocketq.protocol import codes
from rocketq.protocol.sharedbodies import SubscriptionGroupConfig
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.connection import Connection, Handler
from rocketq.remoting.server import RemotingServer
from rocketq.settings import as_properties
from rocketq.store.messagestore import GetResult, MessageStore
from rocketq.store.settings import StoreSettings
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)

TRAFFIC_SAMPLE_INTERVAL_S = 10.0
"""Window of the TPS gauges: long enough to smooth bursts, short enough for alerts."""


class BrokerServer:
    ha: HAService | DLedgerService
    """The replication: master/slave HA, or the broker's side of its DLedger group."""

    def __init__(self, identity: BrokerIdentity, behaviour: BrokerBehaviour, store_settings: StoreSettings,
                 ha_settings: HASettings | None = None, acl_settings: AclSettings | None = None,
                 dledger_settings: DLedgerSettings | None = None) -> None:
        self.dledger_settings = dledger_settings
        """enableDLegerCommitLog: the DLedger group this broker is a member of (else None)."""
        self.dledger: DLedgerService | None = None
        saved_master = ""
        if dledger_settings is not None:  # Raft decides the role: a member starts as a slave
            identity = dataclasses.replace(identity, broker_role=BrokerRole.SLAVE,
                                           broker_id=slave_broker_id(dledger_settings.dleger_self_id))
        else:
            identity, saved_master = role.apply_saved(identity, store_settings.config_dir)  # config/role.json
        self.identity = identity
        self.acl_settings = acl_settings or AclSettings()
        self.acl: AclTable | None = None
        self.acl_internal: Account | None = None
        """An account of this process the ACL check accepts beside the file's: the LOCAL gRPC
        endpoint's (rocketq/proxy/credentials.py); set before ``start``."""
        self.ha_settings = ha_settings or HASettings()
        if saved_master:
            self.ha_settings = dataclasses.replace(self.ha_settings, ha_master_address=saved_master)
        self._role_lock = asyncio.Lock()
        self.fence = fencing.Fence()
        self._fencing: OwnedTask | None = None
        self.behaviour = behaviour
        self.store_settings = store_settings
        self._handlers: dict[int, Handler] = {}
        self._remoting = RemotingServer(
            self._handlers,
            host=identity.listen_host,
            port=identity.listen_port,
            max_frame_size=behaviour.server_max_frame_size,
            name="broker",
            on_connection_closed=self._connection_closed,
            limits=behaviour.connection_limits,
        )
        self._inner_client = self.acl_settings.inner_client()  # signs our own calls (acl/innerclient.py)
        self._client = RemotingClient(
            name="broker-out", rpc_hook=self._inner_client.signer() if self._inner_client is not None else None)
        self._tasks = [
            OwnedTask("broker-client-scan", self._scan_clients),
            OwnedTask("broker-offset-flush", self._flush_offsets),
            OwnedTask("broker-traffic-sampler", self._sample_traffic),
        ]
        self._metrics: MetricsServer | None = None
        self.metrics_registry: CollectorRegistry | None = None
        """What /metrics serves, once started (a LOCAL gRPC endpoint adds its own series)."""
        self._closed = False
        self._serving = False
        self.boot_timestamp = int(time.time() * 1000)
        self.host = identity.broker_ip1 or default_host_ip()

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind, recover the store, install every handler, then listen, register and serve.

        The port is reserved first (its number is part of every message id the store writes)
        but listens only once the store has recovered and every handler is installed: a client
        connecting earlier is refused, which the SDK retries, instead of meeting a half-started
        broker that answers REQUEST_CODE_NOT_SUPPORTED. Registration with the name servers comes
        after the port listens, so no route points at a port that refuses.
        """
        await self._remoting.bind()
        self.port = self._remoting.port
        config_dir = self.store_settings.config_dir
        self.store = MessageStore(self.store_settings, store_host=(self.host, self.port))
        await asyncio.to_thread(self.store.open)
        if self.dledger_settings is not None:
            await self._join_dledger(self.dledger_settings)
        await self.store.start()
        self.topics = TopicConfigManager(config_dir / "topics.json", on_change=self._topics_changed)
        self.groups = SubscriptionGroupManager(config_dir / "subscriptionGroup.json")
        self.offsets = ConsumerOffsetManager(config_dir / "consumerOffset.json")
        for manager in (self.topics, self.groups, self.offsets):
            manager.load()
        self.topics.ensure_system_topics(
            self.identity.broker_cluster_name,
            self.identity.broker_name,
            auto_create=self.behaviour.auto_create_topic_enable,
            trace_topic=self.behaviour.msg_trace_topic_name if self.behaviour.trace_topic_enable else None,
        )
        await self._start_ha()
        self.notifier = client_registry.IdsChangedNotifier(self._group_members)
        self.clients = ClientManager(self.notifier.changed)
        self.traffic = TrafficSampler(self.store.topic_queue_table, self.offsets.entries)
        self.stats_windows = statsdata.StatsWindows()  # VIEW_BROKER_STATS_DATA, fed by the sampler
        self.traffic.on_sample = self.stats_windows.record
        self.registrar = Registrar(
            self._client,
            parse_namesrv_addrs(self.identity.namesrv_addr),
            BrokerRegistration(
                self.identity.broker_cluster_name,
                self.identity.broker_name,
                self.identity.broker_id,
                self.address,
                self.ha.ha_server_addr,
            ),
            lambda names: self.topics.register_body(self.send.broker_permission, names),
            self.behaviour.register_name_server_period,
            master_epoch=self._master_epoch,
            on_newer_master=self._newer_master_reported,
        )
        self._install_handlers()
        await self._start_acl()
        await self._remoting.start()
        self._serving = True
        await self.registrar.register_all()
        self.registrar.start()
        for task in self._tasks:
            task.start()
        self._start_role_services()
        if self.dledger is not None:  # roles follow Raft from now on (change_role needs all of the above)
            await self.raft_member.start()
            await self.dledger.start()
        await self._start_metrics()
        log.info(
            "broker %s (%s, id %d) serving on %s, store %s, metrics %s",
            self.identity.broker_name,
            self.identity.broker_role.value,
            self.identity.broker_id,
            self.address,
            self.store_settings.store_path_root_dir,
            "off" if self.metrics_port is None else f"on port {self.metrics_port}",
        )

    async def _join_dledger(self, settings: DLedgerSettings) -> None:
        """DLedger: the Raft log over the opened store (made to agree with its CommitLog), the
        member and the broker's service; the member starts once the broker serves."""
        directory = self.store_settings.root_dir / storelog.DIRECTORY
        self.raft_log = await asyncio.to_thread(storelog.StoreLog, self.store, directory)
        self.store.append_hook = self.raft_log
        self.raft_member = RaftNode(settings, self.raft_log, directory)
        self.dledger = DLedgerService(
            self.store, self.raft_log, self.raft_member, group=settings.dleger_group,
            self_id=settings.dleger_self_id, wait_timeout_ms=settings.max_wait_ack_time_ms,
            change_role=self.change_role, leader_addr=self._dledger_leader_addr)

    def _dledger_leader_addr(self) -> str:
        """The DLedger leader's remoting address: ours, or the master the name servers name."""
        assert self.dledger is not None
        if self.dledger.state().leader_id == self.dledger.self_id:
            return self.address
        return self.registrar.master_addr or "" if hasattr(self, "registrar") else ""

    async def _start_ha(self) -> None:
        """Replication: a master's HA port, or a slave's HA client, and a slave's metadata sync
        (a DLedger member replicates through Raft; only its metadata sync changes with the role)."""
        if self.dledger is not None:
            self.ha = self.dledger
        else:
            ha_port = self.identity.ha_listen_port or (self.identity.listen_port + 1 if self.identity.listen_port
                                                       else 0)
            self.ha = HAService(
                self.store, self.ha_settings, is_master=self.is_master,
                sync_master=self.identity.broker_role is BrokerRole.SYNC_MASTER,
                listen_host=self.identity.listen_host, advertised_host=self.host, ha_port=ha_port,
                sync_timeout_ms=self.store_settings.sync_flush_timeout,
                master_ha_addr=lambda: self.registrar.ha_server_addr)
            await self.ha.start()
        self.metadata_sync = None if self.is_master else SlaveSynchronizer(
            self._client, lambda: self.registrar.master_addr, lambda: self.address,
            self.topics, self.groups, self.offsets, self._register_soon,
            delay_offset_path=self.store_settings.config_dir / schedule.DELAY_OFFSET_FILE)
        if self.metadata_sync is not None:
            self.store.add_arrival_listener(self.metadata_sync.message_arrived)

    def _start_role_services(self) -> None:
        if self.is_master:  # as RocketMQ: slaves only copy delayOffset.json; the master checks transactions
            self.schedule.start()
            self.transaction_checker.start()
            self.pop.start_revive()
        elif self.metadata_sync is not None:
            self.metadata_sync.start()

    async def change_role(self, change: role.RoleChange) -> None:
        """NOTIFY_BROKER_ROLE_CHANGED (ha/role.py): become the group's master, or a slave, in place.

        A demoted master refuses writes first (its handlers are a slave's before anything else
        stops); a promoted slave stops replicating, cuts a half-received record, and only then
        takes writes. The role is saved before the name servers hear of it, so a crash after
        the answer restarts the broker in the role it announced. A DLedger member's role follows
        its Raft group (``DLedgerService`` calls this): its replication stays as it is and
        nothing is saved, Raft decides again at the next start.
        """
        async with self._role_lock:
            if (change.role, change.broker_id) == (self.identity.broker_role, self.identity.broker_id) \
                    and not self.fence.engaged:  # electMaster on a fenced master re-promotes it
                return
            old_schedule, old_checker, old_pull = self.schedule, self.transaction_checker, self.pull
            fenced_at = self.fence.by.epoch if self.fence.by is not None else 0
            self.fence.lift()
            self._set_role(change)
            if not change.is_master:
                self._reinstall_handlers()  # refuse writes at once
            if self.metadata_sync is not None:
                self.store.remove_arrival_listener(self.metadata_sync.message_arrived)
                await self.metadata_sync.close()
            ha = self.ha
            if isinstance(ha, HAService):
                await ha.close()
            await old_schedule.close()
            await old_checker.close()
            await self.pop.stop_revive()
            if change.is_master and isinstance(ha, HAService):
                cut = await self.store.end_replication()
                if cut:
                    log.warning("promotion: dropped %d bytes of a record the old master never finished", cut)
            await self._start_ha()
            if change.is_master:
                if isinstance(self.ha, HAService):
                    self.ha.epochs.begin(self.store.max_phy_offset, above=max(fenced_at, change.epoch_above))
                self._reinstall_handlers()
            old_pull.close()
            if self.dledger is None:
                await asyncio.to_thread(role.save, self.store_settings.config_dir, change)
            self.registrar.reidentify(self.identity.broker_id, self.ha.ha_server_addr)
            await self.registrar.register_all()
            self._start_role_services()
            log.warning("broker %s is now %s (brokerId %d)", self.identity.broker_name,
                        change.role.value, change.broker_id)

    def _master_epoch(self) -> int | None:
        """What registrations carry as rocketqMasterEpoch: a master's current HA epoch (only
        master/slave HA has epochs: a DLedger group's leader is Raft's to decide)."""
        ha = self.ha
        return ha.epochs.current.number if self.is_master and isinstance(ha, HAService) else None

    def _newer_master_reported(self, told: fencing.NewerMaster) -> None:
        """A name server kept brokerId 0 with a newer-epoch master: fence (rocketq.ha.fencing),
        off the registration path, which a role change holding the role lock may be waiting on."""
        if self._fencing is not None and self._fencing.running:
            return
        if self._fence_warranted(told):
            self._fencing = OwnedTask("broker-fence", lambda: self._fence(told))
            self._fencing.start()

    async def _fence(self, told: fencing.NewerMaster) -> None:
        """Refuse writes as a demoted master does, and stop the master-only services; the role,
        the store and the HA port stay until an operator changes the role."""
        async with self._role_lock:  # a role change since the answer may have made it moot
            if not self._fence_warranted(told):
                return
            self.fence.engage(told)
            old_schedule, old_checker, old_pull = self.schedule, self.transaction_checker, self.pull
            self._reinstall_handlers()  # a slave's handlers: writes are refused from here on
            await old_schedule.close()
            await old_checker.close()
            old_pull.close()
            log.error("broker %s fenced: name server %s says %s is the master of this group at epoch %d "
                      "(this broker's is %d); writes are refused until changeToSlave, electMaster or a restart",
                      self.identity.broker_name, told.namesrv, told.master_addr, told.epoch, self._master_epoch())

    def _fence_warranted(self, told: fencing.NewerMaster) -> bool:
        epoch = self._master_epoch()
        return epoch is not None and self.fence.warranted(told, epoch, self.address)

    def _set_role(self, change: role.RoleChange) -> None:
        self.identity = dataclasses.replace(self.identity, broker_role=change.role, broker_id=change.broker_id)
        self.ha_settings = dataclasses.replace(self.ha_settings, ha_master_address=change.master_address)

    def _reinstall_handlers(self) -> None:
        self._install_handlers()
        if self.acl is not None:
            table = self.acl
            self._handlers.update(guard.guarded(self._handlers, lambda: table.config, self.acl_internal))

    async def _start_acl(self) -> None:
        """aclEnable: load plain_acl.yml, watch it, and wrap every handler with the check
        (rocketq/acl/guard.py). Off, nothing is wrapped and requests pay nothing."""
        if not self.acl_settings.acl_enable:
            return
        table = self.acl = AclTable(self.acl_settings.path())
        await table.start()
        credentials = self._inner_client
        reason = innerclient.unusable_reason(table.config, credentials, self.acl_settings.inner_client_credentials_file)
        if reason is not None and (credentials is not None or not self.is_master or self.dledger is not None):
            log.warning("%s", reason)  # a slave's metadata sync would be refused by its master
        self._handlers.update(self._acl_admin_handlers())
        self._handlers.update(guard.guarded(self._handlers, lambda: table.config, self.acl_internal))

    def _acl_admin_handlers(self) -> dict[int, Handler]:
        return AclAdminHandlers(self.acl, self.identity.broker_name, self.identity.broker_cluster_name,
                                lambda: self.address).handlers()

    async def _start_metrics(self) -> None:
        registry = CollectorRegistry()
        registry.register(BrokerCollector(self))
        registry.register(self._remoting.collector())
        self.metrics_registry = registry
        self._metrics = await metrics_http.start_beside(
            f"broker {self.identity.broker_name}", registry, lambda: self._serving,
            host=self.identity.listen_host, port=self.identity.metrics_port,
        )

    @property
    def metrics_port(self) -> int | None:
        return self._metrics.port if self._metrics else None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def close(self) -> None:
        """Unregister, stop serving, flush and close the store. Idempotent; never raises.

        Every step runs whatever failed before it, and a failing step is logged: a dead
        background loop or an unreachable name server must never leave the store unflushed.
        """
        if self._closed:
            return
        self._closed = True
        self._serving = False
        if self._fencing is not None:
            await _step("stopping the fence", self._fencing.stop())
        if hasattr(self, "registrar"):
            await _step("stopping registration", self.registrar.close())
            await _step("unregistering from the name servers", self.registrar.unregister_all())
        sync: SlaveSynchronizer | None = getattr(self, "metadata_sync", None)
        if sync is not None:
            await _step("stopping metadata sync", sync.close())
        if hasattr(self, "ha"):
            await _step("stopping replication", self.ha.close())
        if self.dledger is not None:
            await _step("leaving the DLedger group", self.raft_member.close())
        for task in self._tasks:
            await _step(f"stopping {task.name}", task.stop())
        if self.acl is not None:
            await _step("stopping the ACL file watch", self.acl.close())
        if hasattr(self, "transaction_checker"):
            await _step("stopping transaction checks", self.transaction_checker.close())
        if hasattr(self, "notifier"):
            await _step("stopping consumer notifications", self.notifier.close())
        if hasattr(self, "pull"):
            await _step("releasing held pulls", _call(self.pull.close))
        if hasattr(self, "pop"):
            await _step("stopping POP (held pops, revive, order info)", self.pop.close())
        await _step("closing the remoting port", self._remoting.close())
        await _step("closing outgoing connections", self._client.close())
        if self._metrics is not None:
            await _step("closing the metrics listener", self._metrics.close())
        if hasattr(self, "schedule"):
            await _step("stopping delayed delivery", self.schedule.close())
        if hasattr(self, "topics"):
            await _step("persisting topics", self.topics.close())
            await _step("persisting subscription groups", self.groups.close())
        if hasattr(self, "offsets"):
            await _step("persisting consumer offsets", _call(lambda: self.offsets.persist(force=True)))
        if hasattr(self, "store"):
            await _step("flushing and closing the store", self.store.close())
        if hasattr(self, "raft_log"):
            await _step("closing the DLedger entry index", _call(self.raft_log.close))
        log.info("broker %s stopped", self.identity.broker_name)

    # --- wiring ---------------------------------------------------------------------------

    @property
    def is_master(self) -> bool:
        return self.identity.broker_role != BrokerRole.SLAVE and self.identity.broker_id == codes.MASTER_ID

    @property
    def takes_writes(self) -> bool:
        """A master no newer master has fenced (rocketq.ha.fencing)."""
        return self.is_master and not self.fence.engaged

    def _install_handlers(self) -> None:
        is_master = self.is_master
        self.send = SendHandlers(
            self.store,
            self.topics,
            self.behaviour,
            BrokerAddress(
                self.identity.broker_cluster_name, self.identity.broker_name, self.host, self.port,
                self.takes_writes,
            ),
            on_topic_created=self._register_now,
            replication=self.ha if self.ha.sync_master else None,
            max_delay_level=len(self.store_settings.delay_levels_ms),
            write_gate=self.dledger.send_refusal if self.dledger is not None else None,
        )
        if not hasattr(self, "filters"):  # a role change keeps the consumers' registered filters
            self.filters = ConsumerFilters(enabled=self.behaviour.enable_property_filter)
        self.pull = PullHandlers(
            self.store, self.topics, self.groups, self.offsets, self.clients, self.behaviour, is_master=is_master,
            # without slave reads every answer suggests the master: no call per answer to say so
            suggest_broker=self._suggest_broker if self.ha_settings.slave_read_enable else None,
            filters=self.filters,
        )
        self._install_pop()
        client_handlers = ClientHandlers(
            self.store,
            self.topics,
            self.groups,
            self.offsets,
            self.clients,
            self.behaviour,
            on_topic_created=self._register_now,
            filters=self.filters,
        )
        admin = AdminHandlers(
            self.store,
            self.topics,
            self.groups,
            self.offsets,
            self.clients,
            self.identity.broker_name,
            self.identity.broker_cluster_name,
            self.config_view,
            self.update_config,
            self.runtime_info,
            self._register_now,
            mixed_allowed=lambda: self.behaviour.enable_mixed_message_type,
        )
        replies = ReplyHandlers(self.send, self.clients, self.behaviour, self.address)
        for part in (self.send, self.pull, client_handlers, QueryHandlers(self.store), admin, self.filters, replies):
            self._handlers.update(part.handlers())
        if not self.takes_writes:
            self._handlers.update(slave_guarded(admin.handlers()))
        self._install_retry_and_delay()
        self._install_transactions()
        self._handlers.update(  # orderly consumers
            locks.LockHandlers(locks.RebalanceLocks(self.behaviour.rebalance_lock_max_live_time)).handlers())
        self._handlers.update(clientadmin.ClientAdminHandlers(  # producer/consumer status
            self.clients, self.store.look_message_by_offset, self.identity.broker_name).handlers())
        self._handlers.update(self.stats_windows.handlers())
        if self.dledger is not None:
            self._handlers.update(role.handlers(_raft_decides))
            self._handlers.update(self.dledger.handlers())  # leadership transfer
        else:
            self._handlers.update(role.handlers(self.change_role))
        self._handlers.update(self._acl_admin_handlers())

    def _install_pop(self) -> None:
        """POP consumption (broker/popconsumption.py): created once, its handlers on a master only."""
        if not hasattr(self, "pop"):
            self.pop = PopConsumption(
                self.store, self.topics, self.groups, self.offsets, self.filters, self.behaviour,
                cluster=self.identity.broker_cluster_name, broker_name=self.identity.broker_name,
                store_host=(self.host, self.port), config_dir=self.store_settings.config_dir,
                broker_permission=lambda: self.send.broker_permission, on_topic_created=self._register_now)
            self._assignment = AssignmentHandlers.loaded(  # QUERY_ASSIGNMENT, popShareQueueNum
                self.store_settings.config_dir, self.clients, self.behaviour, self._client,
                parse_namesrv_addrs(self.identity.namesrv_addr))
        self._handlers.update(self._assignment.handlers())
        if self.is_master:
            self._handlers.update(self.pop.handlers())
        else:
            for code in self.pop.handlers():
                self._handlers.pop(code, None)

    def _install_retry_and_delay(self) -> None:
        """Delayed messages and consumer send-back (broker/schedule.py, broker/sendback.py)."""
        levels = self.store_settings.delay_levels_ms
        self.schedule = ScheduleService(self.store, levels, self.store_settings.config_dir / schedule.DELAY_OFFSET_FILE,
                                        self.store.put)
        self.schedule.load()
        self.send_back = SendBackHandlers(self.store, self.topics, self.groups, self.behaviour,
                                          lambda: self.send.broker_permission, len(levels), self._register_now)
        self.send.retry_router = self.send_back.route_retry_send
        for part in (self.schedule, self.send_back):
            self._handlers.update(part.handlers())

    def _suggest_broker(self, result: GetResult, group: SubscriptionGroupConfig | None) -> int:
        return reads.suggest_broker_id(
            result, self.store.max_phy_offset, group, slave_read_enable=self.ha_settings.slave_read_enable,
            max_ratio_percent=self.ha_settings.access_message_in_memory_max_ratio)

    def _install_transactions(self) -> None:
        halves = transactions.HalfLog(self.store, self.topics, (self.host, self.port))
        is_slave = self.identity.broker_role is BrokerRole.SLAVE or self.fence.engaged
        self._handlers.update(transactions.TransactionHandlers(
            halves, is_slave=is_slave, put_answers=PUT_STATUS_TO_RESPONSE,
            max_delay_level=len(self.store_settings.delay_levels_ms)).handlers())
        self.transaction_checker = transactionchecks.TransactionChecker(
            halves, self.offsets, self.clients, transactionchecks.CheckSettings.of(self.behaviour, self.store_settings))

    def _topics_changed(self, names: Collection[str] | None) -> None:
        if hasattr(self, "registrar"):  # else start() registers the whole table once it exists
            self.registrar.topics_changed(names)

    def _register_soon(self) -> None:
        if hasattr(self, "registrar"):
            self.registrar.request_now()

    async def _register_now(self) -> None:
        """A topic was created or changed for a client that is answered next: make the change
        durable, then known to every name server (only the changed topics are sent)."""
        await self.topics.flush()
        await self.registrar.register_changes()

    def _connection_closed(self, conn: Connection) -> None:
        if hasattr(self, "clients"):
            self.clients.connection_closed(conn)

    def _group_members(self, group: str) -> list[Connection]:
        info = self.clients.consumer_group(group)
        return [] if info is None else list(info.channels)

    # --- periodic work --------------------------------------------------------------------

    async def _scan_clients(self) -> None:
        interval = self.behaviour.client_scan_interval / 1000
        while True:
            await asyncio.sleep(interval)
            dropped = self.clients.expire(self.behaviour.client_channel_max_idle_time / 1000)
            if dropped:
                log.info("dropped silent clients: %s", ", ".join(dropped))

    async def _sample_traffic(self) -> None:
        while True:
            self.traffic.sample()
            await asyncio.sleep(TRAFFIC_SAMPLE_INTERVAL_S)

    async def _flush_offsets(self) -> None:
        interval = self.behaviour.flush_consumer_offset_interval / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await self.offsets.flush()
                await asyncio.to_thread(self.pop.persist)
            except OSError as exc:
                log.error("persisting consumer offsets failed: %s", exc)

    # --- admin views ----------------------------------------------------------------------

    def config_view(self) -> dict[str, str]:
        view = {**as_properties(self.identity), **as_properties(self.behaviour), **as_properties(self.store_settings)}
        view["brokerPermission"] = str(self.send.broker_permission)
        return view

    def update_config(self, updates: dict[str, str]) -> None:
        """UPDATE_BROKER_CONFIG: ConfigUpdateError for what may not change (broker.runtimeconfig)."""
        changed = runtimeconfig.apply(updates, self.behaviour, self.store_settings)
        if changed:
            log.info("runtime config update: %s", ", ".join(f"{k}={updates[k]}" for k in sorted(updates)))
        if "broker_permission" in changed:
            perm = self.behaviour.broker_permission
            self.send.broker_permission = perm
            self.pull.broker_permission = perm
            self.topics.bump_version()
            log.info("brokerPermission set to %d", perm)

    def runtime_info(self) -> dict[str, str]:
        return {
            **self.store.runtime_info(),
            "brokerVersionDesc": "rocketq",
            "brokerVersion": "399",
            "bootTimestamp": str(self.boot_timestamp),
            "runtime": f"{int(time.time() - self.boot_timestamp / 1000)}s",
            "msgPutTotalTodayNow": str(self.store.stats.put_message_times),
            "msgGetTotalTodayNow": str(self.store.stats.get_message_transferred),
            "brokerPermission": str(self.send.broker_permission),
            "brokerRole": self.identity.broker_role.value,
            **self.ha.runtime_info(),
            **({} if self.is_master else {"masterAddr": self.registrar.master_addr or ""}),
            **(self.metadata_sync.runtime_info() if self.metadata_sync is not None else {}),
            **({"fencedBy": f"{self.fence.by.master_addr}@{self.fence.by.epoch}"} if self.fence.by else {}),
            "heldPullRequests": str(self.pull.held_count),
            "heldPopRequests": str(self.pop.pop.held_count),
            "popRevivePending": str(self.pop.revive.pending_count),
            "pid": str(os.getpid()),
        }


async def _raft_decides(_change: role.RoleChange) -> None:
    raise role.RoleChangeError("this broker is a DLedger member: its group's Raft election decides its role "
                               "(move leadership with transferLeadership)")


async def _step(what: str, work: Awaitable[None]) -> None:
    """One shutdown step: a failure is logged, never raised, so the steps after it still run."""
    try:
        await work
    except Exception:
        log.exception("broker shutdown: %s failed; continuing", what)


async def _call(work: Callable[[], object]) -> None:
    work()
