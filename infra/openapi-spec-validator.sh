#!/usr/bin/env bash
# openapi-spec-validator (PyPI), the independent OpenAPI validator of
# services/gateway/test/openapi.test.ts, installed into .tools/ on first use; prints its command.
exec bash "$(dirname "$0")/pypi-tool.sh" openapi-spec-validator 0.7.2 openapi-spec-validator
