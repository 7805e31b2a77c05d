"""Schemathesis fuzzes every operation of the OpenAPI schema, in process: no answer may be a
5xx, and every answer must match the schema (status code, content type, body).

Bounded: a few examples per operation and mode (positive and negative data), well under a
minute in total. The findings are summarised in docs/server.md.
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app

# the default 1 MiB body limit is above every maxLength of the schema, so oversized fields
# are refused by validation (422) rather than by the limit (413, a separate test)
APP = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
TOKEN, _ = APP.state.remem.keys.create("fuzz")
SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", APP)
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, negative_data_rejection]


@SCHEMA.parametrize()
@settings(max_examples=10, deadline=None,
          suppress_health_check=list(HealthCheck))
def test_no_5xx_and_answers_match_the_schema(case: schemathesis.Case) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {TOKEN}"}, checks=CHECKS)
