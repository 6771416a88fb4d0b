#!/usr/bin/env bash
# npm run test:nr5 — the node tests and the end-to-end tests against the newest
# Node-RED 5.x on Node 22 (Node-RED 5 needs Node >= 22.9).
#
# Node 22 and Node-RED 5 are installed into .nr5/ (git-ignored), away from the
# project's node_modules, which keep Node-RED 4.1 for the default run. The npm
# package node@22 brings a Node 22 binary. scripts/nr5/resolve.js makes the
# project's require('node-red') and the test helper resolve to the 5.x copies.
#
# Extra arguments go to mocha. NR5_OFFLINE=1 reuses .nr5/ without asking the
# registry for a newer 5.x (outside CI, a failed refresh also falls back to it).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
nr5="$root/.nr5"

installed_ok() {
  [ -x "$nr5/node_modules/node/bin/node" ] && [ -f "$nr5/node_modules/node-red/package.json" ] &&
    [ -f "$nr5/node_modules/node-red-node-test-helper/package.json" ]
}

if [ "${NR5_OFFLINE:-}" = 1 ] && installed_ok; then
  echo "test:nr5: NR5_OFFLINE=1, using .nr5/ as it is"
else
  echo "test:nr5: installing the newest node@22, node-red@5 and node-red-node-test-helper@0.3.6 into .nr5/"
  # node@22's preinstall script fetches the Node binary; npm 11 wants install
  # scripts allowed by name in the package.json of the install folder.
  mkdir -p "$nr5"
  node -e '
    const fs = require("fs"); const file = process.argv[1];
    let pkg = {};
    try { pkg = JSON.parse(fs.readFileSync(file, "utf8")); } catch (e) { /* first install */ }
    pkg.private = true;
    pkg.description = "Node 22 + Node-RED 5 for npm run test:nr5 (scripts/test-nr5.sh); not part of the package";
    pkg.allowScripts = Object.assign({}, pkg.allowScripts, { node: true });
    fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");
  ' "$nr5/package.json"
  if ! npm install --prefix "$nr5" --no-audit --no-fund --loglevel=error \
      node@22 node-red@5 node-red-node-test-helper@0.3.6; then
    if [ "${CI:-}" != true ] && installed_ok; then
      echo "test:nr5: WARNING: install failed (offline?); using the copy already in .nr5/" >&2
    else
      echo "test:nr5: install into .nr5/ failed" >&2
      exit 1
    fi
  fi
fi

node22="$nr5/node_modules/node/bin/node"
if ! node_version=$("$node22" -v 2>/dev/null) || [[ "$node_version" != v22.* ]]; then
  echo "test:nr5: .nr5 has no working Node 22 binary (got '${node_version:-nothing}');" \
    "npm may have skipped node@22's install script" >&2
  exit 1
fi
nr_version=$("$node22" -p "require('$nr5/node_modules/node-red/package.json').version")
if [[ "$nr_version" != 5.* ]]; then
  echo "test:nr5: .nr5 holds Node-RED $nr_version, not 5.x" >&2
  exit 1
fi
echo "test:nr5: Node $node_version, Node-RED $nr_version"

npm run --silent build

# Child processes (a Node-RED started by an e2e test, npm) get Node 22 and the
# resolver too. Only the node binary's folder goes on PATH, not .nr5's .bin.
export PATH="$nr5/node_modules/node/bin:$PATH"
export DAM_NR5_DIR="$nr5"
export NODE_OPTIONS="--require \"$root/scripts/nr5/resolve.js\"${NODE_OPTIONS:+ $NODE_OPTIONS}"
exec "$node22" "$root/node_modules/mocha/bin/mocha.js" --config "$root/scripts/nr5/mocharc.js" "$@"
