#!/usr/bin/env bash
# ElasticMQ, an SQS-protocol queue server from Maven Central: the peer the sqs sender is tested against.
#   infra/elasticmq/elasticmq.sh install   resolve the server jars into .tools/elasticmq/libs (cached, idempotent)
#   infra/elasticmq/elasticmq.sh libs      print that directory (after installing when needed)
# Tests start and stop the server themselves (shared/src/testing/peers/elasticmq.ts), on a free port.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
libs="$root/.tools/elasticmq/libs"
version=$(sed -n 's:.*<elasticmq.version>\(.*\)</elasticmq.version>.*:\1:p' "$here/pom.xml")

die() { echo "elasticmq.sh: $*" >&2; exit 1; }

install() {
  if [ -f "$libs/elasticmq-server_2.13-$version.jar" ] && [ -f "$libs/.complete-$version" ]; then return 0; fi
  command -v java >/dev/null || die "Java 17+ is required to run ElasticMQ (apt-get install openjdk-17-jre-headless)."
  command -v mvn >/dev/null || die "Maven is required to fetch ElasticMQ from Maven Central (apt-get install maven)."
  echo "elasticmq.sh: resolving ElasticMQ $version from Maven Central" >&2
  rm -rf "$libs"
  (cd "$here" && mvn -q -B -Dstyle.color=never dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$libs" >&2) \
    || die "Maven could not resolve org.elasticmq:elasticmq-server_2.13:$version"
  touch "$libs/.complete-$version"
}

case "${1:-}" in
  install) install ;;
  libs) install; echo "$libs" ;;
  *) die "usage: $0 install|libs" ;;
esac
