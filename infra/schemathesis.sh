#!/usr/bin/env bash
# schemathesis (PyPI), the OpenAPI fuzzer of test/fuzz/openapi.test.ts, installed into .tools/ on
# first use; prints the path of its `st` command.
exec bash "$(dirname "$0")/pypi-tool.sh" schemathesis 4.32.5 st
