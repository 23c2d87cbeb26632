#!/usr/bin/env bash
# openapi-generator (org.openapitools:openapi-generator-cli from Maven Central, pinned), the client
# generator of test/clients: fetched into .tools/openapi-generator-<version> on first use,
# idempotently, and run with java -jar.
#   infra/openapi-generator.sh install   fetch the jar (cached)
#   infra/openapi-generator.sh jar       print its path (after fetching when needed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=7.17.0
dir="$root/.tools/openapi-generator-$version"
jar="$dir/openapi-generator-cli-$version.jar"

die() { echo "openapi-generator.sh: $*" >&2; exit 1; }

install() {
  if [ -f "$dir/.complete" ]; then return 0; fi
  command -v java >/dev/null || die "Java 11+ is required to run openapi-generator (apt-get install openjdk-17-jre-headless)."
  command -v mvn >/dev/null || die "Maven is required to fetch openapi-generator from Maven Central (apt-get install maven)."
  mkdir -p "$root/.tools"
  # One installer at a time; a fetch cut short (no .complete) is started over.
  exec 9>"$root/.tools/openapi-generator.lock"
  flock 9
  if [ -f "$dir/.complete" ]; then return 0; fi
  rm -rf "$dir"
  echo "openapi-generator.sh: fetching openapi-generator-cli $version from Maven Central" >&2
  mvn -q -B -Dstyle.color=never dependency:copy -Dartifact="org.openapitools:openapi-generator-cli:$version:jar" \
    -DoutputDirectory="$dir" -Dmdep.stripVersion=false >&2 || die "Maven could not fetch org.openapitools:openapi-generator-cli:$version"
  [ -f "$jar" ] || die "no $jar after the fetch"
  touch "$dir/.complete"
}

case "${1:-}" in
  install) install ;;
  jar) install; echo "$jar" ;;
  *) die "usage: $0 install|jar" ;;
esac
