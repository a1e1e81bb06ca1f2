"""Installs the llm area: providers, custom models, config, services, OAuth.

Puts ``LLMService`` at ``container.extras["llm"]`` — the interface the chat
and memory areas use to get a ready model for a role.
"""

from __future__ import annotations

from fastapi import Depends, FastAPI

from famulus.api import config, providers, services
from famulus.api.deps import require_key
from famulus.container import Container
from famulus.llm.config import ConfigService
from famulus.llm.providers import ProviderAdmin
from famulus.llm.redact import install_log_redaction
from famulus.llm.service import LLMService
from famulus.secrets import SecretsStore
from famulus.store.llm import CustomModelStore


def install(app: FastAPI, container: Container) -> None:
    install_log_redaction()
    secrets = SecretsStore(container.settings.secrets_file)
    secrets.check()  # a corrupt secrets file is set aside and reported at start-up
    llm = LLMService(container.settings, container.kv, secrets, CustomModelStore(container.db))
    container.extras["secrets"] = secrets
    container.extras["llm"] = llm
    container.extras["llm_admin"] = ProviderAdmin(llm)
    container.extras["llm_config"] = ConfigService(container, llm)
    container.on_start(llm.default_chat_model_from_env)
    container.on_stop(llm.oauth.stop)
    for router in (providers.router, config.router, services.router):
        app.include_router(router, dependencies=[Depends(require_key)])
