"""memci's OpenTelemetry spans, printed from the SDK's in-memory exporter, offline.

Run: python examples/otel_spans.py   (needs pip install 'memci[otel]' opentelemetry-sdk)

The application sets the tracer provider (here: every span to an in-memory exporter;
in production: a BatchSpanProcessor and an OTLP exporter); memci only uses it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import memci

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

with tempfile.TemporaryDirectory() as tmp, \
        memci.Engine.open(Path(tmp) / "memci.db") as engine:
    session = engine.session("chat-1", model="gpt-4o-mini")
    session.set_system("You are terse.")
    for i in range(20):
        session.add({"role": "user", "content": f"question {i}: " + "tell me about rivers " * 30})
        session.add({"role": "assistant", "content": f"answer {i}: " + "rivers flow " * 30})
    session.build(budget=2000)
    session.search("rivers", k=3)
    session.call_tool("recall_page", {"index": 1})

for span in exporter.get_finished_spans():
    if span.name == "memci.add":
        continue  # 41 of them; one line each would drown the rest
    attributes = dict(span.attributes or {})
    shown = {k: v for k, v in attributes.items() if not k.startswith("memci.events")}
    print(span.name, span.kind.name, shown)
print("memci.add spans:", sum(1 for s in exporter.get_finished_spans() if s.name == "memci.add"))
