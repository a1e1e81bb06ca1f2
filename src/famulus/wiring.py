"""Builds every long-lived service, once per app, in dependency order.

This is the one place that knows how the areas fit together. Each area's
services get what they use as typed constructor arguments (or, where one area
must not import another, a small ``Protocol`` port it declares, as
``chat/ports.py`` does), and register their start/stop/drain hooks, agent
toolsets and session checks on ``core.hooks`` (``famulus/hooks.py``). The
routers in ``api/`` read the finished ``Container`` through
``api.deps.container``; nothing else does.

To add an area: build its services in a ``_name`` function below, in the order
of what it needs, register its hooks there, add its attributes to
``Container``, and put its router in ``api/routes.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from famulus.agent.clock import zone_name
from famulus.auth import FailureThrottle, KeyVerifier
from famulus.automations.calendar_watch import CalendarWatcher
from famulus.automations.service import AutomationService
from famulus.automations.tools import schedule_toolset
from famulus.channels.openai_compat.service import OpenAICompat
from famulus.channels.telegram.channel import TelegramChannel
from famulus.chat.context import ContextService
from famulus.chat.manager import RunManager
from famulus.chat.queue import QueueService
from famulus.core import Core, build_core
from famulus.directives import DirectivesService
from famulus.events import EventHub
from famulus.feed import Feed
from famulus.hooks import ToolsetProvider
from famulus.integrations import calendar_tools, mail_tools, web_tools
from famulus.integrations.web import WebService
from famulus.llm.config import ConfigService
from famulus.llm.providers import ProviderAdmin
from famulus.llm.redact import install_log_redaction
from famulus.llm.service import LLMService
from famulus.mcp.connection import Timeouts
from famulus.mcp.registry import McpRegistry
from famulus.memory import reindex
from famulus.memory.conversations import ConversationIndex
from famulus.memory.facade import MemoryFacade
from famulus.memory.jobs import MemoryJobs
from famulus.memory.learning import Learning
from famulus.memory.service import MemoryService
from famulus.notify.delivery import DeliveryQueue, policy_from
from famulus.notify.service import NotifierService
from famulus.secrets import SecretsStore
from famulus.sessions.service import SessionService
from famulus.settings import Settings
from famulus.skills.installer import SkillInstaller
from famulus.skills.registry import SkillRegistry
from famulus.skills.sandbox import Sandbox
from famulus.skills.tools import SkillServices, SkillTools, skill_toolset
from famulus.store.automations import AutomationStore
from famulus.store.calendar_fired import CalendarFiredStore
from famulus.store.deliveries import DeliveryStore
from famulus.store.llm import CustomModelStore
from famulus.store.mcp_servers import McpServerStore
from famulus.store.notifiers import NotifierStore
from famulus.store.openai_sessions import OpenAISessionStore
from famulus.store.telegram import TelegramStore
from famulus.store.usage import UsageStore
from famulus.usage.service import UsageService, budget_notice


@dataclass(frozen=True)
class Container:
    core: Core
    verifier: KeyVerifier
    throttle: FailureThrottle
    secrets: SecretsStore
    llm: LLMService
    llm_admin: ProviderAdmin
    memory: MemoryFacade
    llm_config: ConfigService
    skills: SkillRegistry
    skill_installer: SkillInstaller
    skill_sandbox: Sandbox
    notifiers: NotifierService
    deliveries: DeliveryQueue
    web: WebService
    chat: RunManager
    context: ContextService
    queue: QueueService
    automations: AutomationService
    calendar_watcher: CalendarWatcher
    mcp_servers: McpRegistry
    openai: OpenAICompat
    telegram: TelegramChannel
    usage: UsageService
    memory_events: Feed  # issue 12: re-index progress, GET /memory/events

    @property
    def settings(self) -> Settings:
        return self.core.settings

    @property
    def sessions(self) -> SessionService:
        return self.core.sessions

    @property
    def directives(self) -> DirectivesService:
        return self.core.directives

    @property
    def events(self) -> EventHub:
        return self.core.events

    async def start(self) -> None:
        await self.core.hooks.start()

    async def drain(self) -> None:
        await self.core.hooks.drain()

    async def stop(self) -> None:
        await self.core.hooks.stop()
        self.core.db.close()


def build_container(settings: Settings) -> Container:
    core = build_core(settings)
    hooks = core.hooks
    env_key = settings.api_key.get_secret_value() if settings.api_key else None
    secrets, llm = _llm(core)
    usage = _usage(core, llm)
    memory = _memory(core, llm)
    memory_events = _memory_events(core, memory)
    registry = SkillRegistry(settings)
    installer = SkillInstaller(settings, registry)
    sandbox = Sandbox(settings.bwrap_path, settings.home, settings.unsandboxed_scripts)
    llm_admin = ProviderAdmin(llm)
    services = SkillServices(registry, installer, llm_admin, sandbox, core.kv)
    skill_tools = skill_toolset(SkillTools(services))
    hooks.toolsets(_always([skill_tools]))
    notifiers, deliveries = _notify(core, llm, secrets)
    usage.on_notice = budget_notice(core.events, notifiers)
    web = WebService(core, llm)
    hooks.toolsets(web_tools.provider(web))
    hooks.toolsets(calendar_tools.provider(core))
    hooks.toolsets(mail_tools.provider(core))
    mcp_servers = _mcp_servers(core, secrets)
    chat, context = _chat(core, llm, memory, registry)
    chat.turns.context_scale = usage.context_scale  # GET /context counts like the provider
    automations = _automations(core, chat, notifiers, deliveries, memory)
    watcher = CalendarWatcher(core, automations, CalendarFiredStore(core.db))
    hooks.on_start(watcher.start)  # after the automations it fires, stopped before them
    hooks.on_stop(watcher.stop)
    telegram = _telegram(core, chat, llm)
    # After every area's drain hook, so their last events still reach clients.
    hooks.on_drain(core.events.close_all)
    return Container(
        core=core,
        verifier=KeyVerifier(settings.key_file, env_key),
        throttle=FailureThrottle(settings.auth_max_failures, settings.auth_failure_window_s),
        secrets=secrets,
        llm=llm,
        llm_admin=llm_admin,
        memory=memory,
        llm_config=ConfigService(core, llm, memory, notifiers),
        skills=registry,
        skill_installer=installer,
        skill_sandbox=sandbox,
        notifiers=notifiers,
        deliveries=deliveries,
        web=web,
        chat=chat,
        context=context,
        queue=QueueService(core.sessions, chat.pending, core.events, chat.active),
        automations=automations,
        calendar_watcher=watcher,
        mcp_servers=mcp_servers,
        openai=OpenAICompat(core, chat, OpenAISessionStore(core.db)),
        telegram=telegram,
        usage=usage,
        memory_events=memory_events,
    )


def _llm(core: Core) -> tuple[SecretsStore, LLMService]:
    install_log_redaction()
    secrets = SecretsStore(core.settings.secrets_file)
    secrets.check()  # a corrupt secrets file is set aside and reported at start-up
    llm = LLMService(core.settings, core.kv, secrets, CustomModelStore(core.db))
    core.hooks.on_start(llm.default_chat_model_from_env)
    core.hooks.on_stop(llm.oauth.stop)
    return secrets, llm


def _usage(core: Core, llm: LLMService) -> UsageService:
    """The usage ledger meters every model the llm area resolves."""
    usage = UsageService(UsageStore(core.db), core.kv, core.settings)
    llm.meter = usage
    return usage


def _memory(core: Core, llm: LLMService) -> MemoryFacade:
    settings = core.settings
    service = MemoryService(
        core.db,
        core.kv,
        lambda: llm,
        budget_chars=settings.memory_budget_chars,
        zone=zone_name(settings.timezone),  # issue 12: the days facts and questions name
    )
    jobs = MemoryJobs(
        service,
        core.sessions,
        quiet_s=settings.memory_quiet_s,
        after_messages=settings.memory_extract_after_messages,
    )
    learning = Learning(service, core.directives)
    # Issue 12: a date-only since/until is a day in FAMULUS_TIMEZONE (unset: UTC).
    conversations = ConversationIndex(service, bound_zone=settings.timezone)
    service.jobs, service.learning = jobs, learning
    service.conversations = conversations
    facade = MemoryFacade(service, jobs, learning)

    async def stop() -> None:
        await conversations.stop()
        await jobs.stop()
        await reindex.stop_reindex(service)
        await service.stop()

    core.hooks.on_start(service.start)
    core.hooks.on_start(jobs.resume)
    core.hooks.on_start(conversations.start)
    core.hooks.after_branch.append(jobs.branched)
    core.hooks.on_stop(stop)
    core.hooks.toolsets(facade.toolsets)
    return facade


def _memory_events(core: Core, memory: MemoryFacade) -> Feed:
    """The feed memory reports re-index and backfill progress to; ended at drain
    like the other event streams."""
    feed = Feed()
    memory.service.events = feed
    core.hooks.on_drain(feed.close)
    return feed


def _notify(
    core: Core, llm: LLMService, secrets: SecretsStore
) -> tuple[NotifierService, DeliveryQueue]:
    settings = core.settings
    service = NotifierService(settings, NotifierStore(core.db), llm, secrets, core.kv)
    policy = policy_from(settings.notify_retry_delays_s, settings.notify_retry_after_max_s)
    queue = DeliveryQueue(DeliveryStore(core.db), service.send, policy)
    core.hooks.on_start(queue.start)
    core.hooks.on_stop(queue.stop)
    return service, queue


def _chat(
    core: Core, llm: LLMService, memory: MemoryFacade, skills: SkillRegistry
) -> tuple[RunManager, ContextService]:
    manager = RunManager(core, llm, memory, skills)
    context = ContextService(core, manager.turns, manager.busy)
    manager.turns.compactor = context
    core.hooks.before_remove.append(manager.session_removed)
    core.hooks.before_clear.append(manager.session_removed)
    core.hooks.on_start(manager.recover)
    core.hooks.on_drain(manager.stop)
    core.hooks.on_stop(manager.stop)
    return manager, context


def _automations(
    core: Core,
    chat: RunManager,
    notifiers: NotifierService,
    deliveries: DeliveryQueue,
    memory: MemoryFacade,
) -> AutomationService:
    service = AutomationService(core, AutomationStore(core.db), chat, notifiers, deliveries, memory)
    notifiers.in_use_checks.append(service.store.using_notifier)
    deliveries.listeners.append(service.delivery_changed)
    core.hooks.toolsets(_always([schedule_toolset(service, notifiers)]))
    core.hooks.on_start(service.start)
    core.hooks.on_stop(service.stop)
    core.hooks.on_drain(service.close_listeners)
    return service


def _mcp_servers(core: Core, secrets: SecretsStore) -> McpRegistry:
    """MCP servers the person registered: their tools join every run; their
    sessions (stdio processes) end when the server stops."""
    settings = core.settings
    timeouts = Timeouts(call_s=settings.mcp_timeout_s, connect_s=settings.mcp_connect_timeout_s)
    registry = McpRegistry(McpServerStore(core.db), secrets, timeouts, settings.home / "mcp")
    core.hooks.toolsets(registry.toolsets)
    core.hooks.on_stop(registry.stop)
    return registry


def _telegram(core: Core, chat: RunManager, llm: LLMService) -> TelegramChannel:
    """Two-way Telegram: polls while a bot token is connected, restarts when it changes."""
    channel = TelegramChannel(core, chat, llm.services, TelegramStore(core.db))
    llm.services.refused["telegram"] = channel.refused
    llm.services.on_change.append(channel.service_changed)
    core.hooks.on_start(channel.start)
    core.hooks.on_stop(channel.stop)
    return channel


def _always(toolsets: list[Any]) -> ToolsetProvider:
    async def provide() -> list[Any]:
        return list(toolsets)

    return provide
