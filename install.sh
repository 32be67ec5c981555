#!/usr/bin/env bash
# Installs Herald where it is checked out: Node >= 22 (the npm package node@24 in node_modules when the
# system node is older), the locked dependencies, and a working bin/herald. Idempotent: re-running it
# re-checks everything and changes nothing that is already right.
#
#   ./install.sh            install
#   ./install.sh --start    install, initialise ./data on first run (embedded PostgreSQL), and start Herald
set -euo pipefail
cd "$(dirname "$0")"
root=$(pwd)

say() { printf '==> %s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

command -v npm >/dev/null 2>&1 || die "npm is required (install Node.js and npm first)"
command -v node >/dev/null 2>&1 || die "node is required (install Node.js and npm first)"

# 1. Dependencies, exactly as locked. The lock pins node@24, whose install script puts a real Node 24
#    binary in node_modules; npm scripts and bin/herald use it ahead of an older system node.
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f node_modules/.herald-lock ] && [ "$(cat node_modules/.herald-lock)" = "$lock_sum" ] && [ -x node_modules/node/bin/node ]; then
  say "dependencies already installed"
else
  say "installing dependencies (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > node_modules/.herald-lock
fi

# 2. Node >= 22 for Herald itself.
node_bin=""
for candidate in "$root/node_modules/node/bin/node" "$(command -v node)"; do
  [ -x "$candidate" ] || continue
  major=$("$candidate" -p 'process.versions.node.split(".")[0]')
  if [ "$major" -ge 22 ]; then node_bin=$candidate; break; fi
done
[ -n "$node_bin" ] || die "no Node.js >= 22 found, and the node@24 package did not install a binary"
say "Node $("$node_bin" --version) at $node_bin"

# 3. No build step: Node strips TypeScript types at load time. Check the CLI answers.
chmod +x bin/herald
version=$(bin/herald --version) || die "bin/herald does not run"
say "bin/herald $version is ready (add $root/bin to PATH, or symlink bin/herald into /usr/local/bin)"

if [ "${1:-}" = "--start" ]; then
  data_dir=${HERALD_HOME:-$root/data}
  if [ ! -f "$data_dir/herald.json" ]; then
    say "initialising $data_dir (single-tenant, embedded PostgreSQL)"
    # init ends with "Next: herald start ...": the next step this script takes itself, so that line goes.
    bin/herald init --yes --data-dir "$data_dir" --mode single \
      --tenant "${HERALD_TENANT:-Demo}" --owner-email "${HERALD_OWNER_EMAIL:-owner@example.com}" |
      sed '/^Next: herald start/d'
  fi
  say "starting Herald from $data_dir (Ctrl-C to stop)"
  exec bin/herald start --data-dir "$data_dir"
fi
