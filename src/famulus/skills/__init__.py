"""Skills: user-facing commands (``/name``) described by a ``SKILL.md``."""

from __future__ import annotations

from fastapi import Depends, FastAPI

from famulus.container import Container


def install(app: FastAPI, container: Container) -> None:
    from famulus.api import skills as skills_api
    from famulus.api.deps import require_key
    from famulus.skills.installer import SkillInstaller
    from famulus.skills.registry import SkillRegistry
    from famulus.skills.sandbox import Sandbox
    from famulus.skills.tools import register as register_tools

    registry = SkillRegistry(container.settings)
    container.extras["skills"] = registry
    container.extras["skill_installer"] = SkillInstaller(container.settings, registry)
    settings = container.settings
    container.extras["skill_sandbox"] = Sandbox(
        settings.bwrap_path, settings.home, settings.unsandboxed_scripts
    )
    register_tools(container)
    app.include_router(skills_api.router, dependencies=[Depends(require_key)])
