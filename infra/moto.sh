#!/usr/bin/env bash
# moto (PyPI), AWS services mocked in one server, the second peer of the sqs and kinesis conformance
# suites, installed into .tools/ on first use; prints the path of its `moto_server` command.
exec bash "$(dirname "$0")/pypi-tool.sh" moto 5.2.5 moto_server 'moto[server]==5.2.5'
