"""The web area: ``web_search`` and ``fetch_page`` agent tools.

``provider(web)`` is the toolset provider asked on every run: mode ``none``
offers no web tools; otherwise ``fetch_page`` is offered, and ``web_search``
too when a search backend is usable (mode ``exa`` without an Exa key has none).

The toolset ids start with ``read-only:``, which lets the research sub-agent
use them as well (see ``famulus.agent.research``).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.toolsets import FunctionToolset

from famulus.agent.toolcache import per_owner
from famulus.hooks import ToolsetProvider
from famulus.integrations.web import WebService

SEARCH_TOOLSET_ID = "read-only:web-search"
FETCH_TOOLSET_ID = "read-only:web-fetch"


@per_owner
def search_toolset(web: WebService) -> FunctionToolset[Any]:
    tools: FunctionToolset[Any] = FunctionToolset(id=SEARCH_TOOLSET_ID)

    @tools.tool_plain
    async def web_search(query: str, num_results: int = 5) -> str:
        """Search the web; returns a numbered list of results (title, URL, snippet).

        Args:
            query: what to search for, as you would type it into a search engine.
            num_results: how many results to return (1 to 10).
        """
        return await web.search_text(query, num_results)

    return tools


@per_owner
def fetch_toolset(web: WebService) -> FunctionToolset[Any]:
    tools: FunctionToolset[Any] = FunctionToolset(id=FETCH_TOOLSET_ID)

    @tools.tool_plain
    async def fetch_page(url: str) -> str:
        """Read a web page (http or https URL) as plain text, e.g. a search result.

        Args:
            url: the page's full http(s) URL.
        """
        return await web.fetch_text(url)

    return tools


def provider(web: WebService) -> ToolsetProvider:
    """Asked on every run: no web tools in mode ``none``; ``fetch_page`` otherwise,
    and ``web_search`` too while a search backend is usable."""

    async def provide() -> list[Any]:
        if await web.mode() == "none":
            return []
        found: list[Any] = [fetch_toolset(web)]
        if await web.backend() is not None:
            found.insert(0, search_toolset(web))
        return found

    return provide
