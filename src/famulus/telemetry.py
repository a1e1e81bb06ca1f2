"""Optional OpenTelemetry traces of agent runs, model requests and tool calls.

Off unless ``FAMULUS_OTEL_ENDPOINT`` names an OTLP/HTTP collector. Then every
pydantic-ai agent in the process is instrumented (``Agent.instrument_all``),
which is where the run, model-request and tool spans come from; famulus adds
none of its own. The spans carry names, timings, token counts and model names,
but never message content: prompts, answers, tool arguments and tool results
are the person's mail, calendar and memories, and a collector is often run by
someone else. ``include_content=False`` keeps them out.

The OpenTelemetry SDK and exporter are the ``famulus[otel]`` extra and are
imported only when tracing is on, so a server without the setting loads none of it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from famulus.settings import Settings

EXPORT_TIMEOUT_S = 5.0  # a gone collector must not hold up the server's stop for long
MISSING_EXTRA = (
    "FAMULUS_OTEL_ENDPOINT is set but the otel extra is not installed: pip install 'famulus[otel]'"
)

Stop = Callable[[], None]  # idempotent: the server calls it at stop, and again on the way out


class TelemetryUnavailable(Exception):
    """Tracing was asked for but cannot be had; the start is refused with this line."""


def _nothing() -> None:
    return None


def start(settings: Settings) -> Stop:
    """Turn tracing on when configured; returns what flushes and ends it at stop."""
    if settings.otel_endpoint is None:
        return _nothing
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise TelemetryUnavailable(MISSING_EXTRA) from None
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings

    provider = TracerProvider(
        resource=Resource.create({"service.name": settings.otel_service_name})
    )
    exporter = OTLPSpanExporter(
        endpoint=f"{settings.otel_endpoint}/v1/traces", timeout=EXPORT_TIMEOUT_S
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider, include_content=False))

    stopped = threading.Event()

    def stop() -> None:
        """Send the spans still queued, then let go of the exporter (once)."""
        if stopped.is_set():
            return
        stopped.set()
        Agent.instrument_all(False)
        provider.shutdown()

    return stop
