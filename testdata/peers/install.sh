#!/bin/sh
# Installs the node dependencies of `make bench-peers` into
# testdata/peers/node_modules, pinned by package-lock.json, and does nothing
# when they are already installed from the current lock file.
#
# isolated-vm (the ATP server's sandbox) is a native addon with no prebuilt
# binary reachable here, so it is compiled (python3, make and g++; about 1.5
# minutes on 2 cores) against the headers of the Node.js 22 that the npm
# package "node" installs, the Node.js that runs the benchmark. The install
# scripts therefore run in two steps: first that Node.js, then the addons
# with it first on PATH and its headers as nodedir.
set -eu
cd "$(dirname "$0")"

stamp=node_modules/.installed
if [ -f "$stamp" ] && [ ! package.json -nt "$stamp" ] && [ ! package-lock.json -nt "$stamp" ]; then
	exit 0
fi

npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
npm rebuild node --no-audit --no-fund --loglevel=error

node="$PWD/node_modules/.bin/node"
nodedir=$("$node" -p 'require("path").dirname(require.resolve(`node-${process.platform}-${process.arch}/package.json`, {paths: [require("path").resolve("node_modules/node")]}))')
echo "building isolated-vm against $("$node" --version) headers in $nodedir (about 1.5 minutes)" >&2
PATH="$PWD/node_modules/.bin:$PATH" npm_config_nodedir="$nodedir" npm_config_build_from_source=true \
	npm rebuild isolated-vm protobufjs --no-audit --no-fund --loglevel=error

# Fail here, with the reason, rather than in the middle of a benchmark.
"$node" --no-node-snapshot -e 'const ivm = require("isolated-vm"); new ivm.Isolate().dispose()'
touch "$stamp"
