"""GET /skills, POST /skills/install, DELETE /skills/{name}."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from famulus.api.deps import container
from famulus.api.schemas import RequestBody
from famulus.skills.skill import Skill
from famulus.wiring import Container

router = APIRouter(tags=["skills"])


class SkillOut(BaseModel):
    name: str
    description: str
    location: str
    path: str
    has_script: bool
    parameters: Any = None


class SkillList(BaseModel):
    skills: list[SkillOut]


class InstallIn(RequestBody):
    source: str = Field(min_length=1, max_length=500, description="owner/repo/path/to/skill")


class Installed(BaseModel):
    name: str
    description: str
    status: str
    location: str


class Removed(BaseModel):
    status: str
    name: str


def _out(skill: Skill) -> SkillOut:
    return SkillOut(
        name=skill.name,
        description=skill.description,
        location=skill.location,
        path=str(skill.path),
        has_script=skill.has_script,
        parameters=skill.parameters,
    )


@router.get("/skills", response_model=SkillList)
async def list_skills(c: Container = Depends(container)) -> SkillList:
    return SkillList(skills=[_out(s) for s in c.skills.all()])


@router.post("/skills/install", response_model=Installed, status_code=201)
async def install_skill(body: InstallIn, c: Container = Depends(container)) -> Installed:
    skill = await c.skill_installer.install(body.source)
    return Installed(
        name=skill.name, description=skill.description, status="installed", location="global"
    )


@router.delete("/skills/{name}", response_model=Removed)
async def remove_skill(name: str, c: Container = Depends(container)) -> Removed:
    skill = c.skill_installer.uninstall(name)
    return Removed(status="removed", name=skill.name)
