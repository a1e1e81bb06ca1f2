"""Approvals through pydantic-ai deferred tools, resolved inline.

A tool marked ``requires_approval`` makes pydantic-ai pause the call; the
``HandleDeferredToolCalls`` capability hands the batch to this handler, which
asks the sink (the chat run: an ``approval_needed`` event, then waiting for
``POST /tools/result``) and continues the same run with the answers.
"""

from __future__ import annotations

from pydantic_ai import RunContext
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDenied

from famulus.agent.secret_args import public_args
from famulus.agent.sink import AgentDeps

DENIED = "The person declined this action. Do not retry it; ask what they want instead."


async def _handle(
    ctx: RunContext[AgentDeps], requests: DeferredToolRequests
) -> DeferredToolResults:
    results = DeferredToolResults()
    for call in requests.approvals:
        decision = await ctx.deps.sink.decide(
            call.tool_call_id,
            call.tool_name,
            public_args(call.args_as_dict()),
            ctx.deps.descriptions.get(call.tool_name, call.tool_name),
        )
        if decision.approved:
            results.approvals[call.tool_call_id] = True
        elif decision.refusal:
            results.approvals[call.tool_call_id] = ToolDenied(decision.refusal)
        else:
            reason = f"{DENIED} Their note: {decision.reason}" if decision.reason else DENIED
            results.approvals[call.tool_call_id] = ToolDenied(reason)
    return results


def approval_capability() -> HandleDeferredToolCalls[AgentDeps]:
    return HandleDeferredToolCalls(handler=_handle)
