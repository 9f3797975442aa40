#!/usr/bin/env bash
# Installs the benchmark's peers into bench/.peers (git-ignored), pinned: stripe-node from npm and
# stripe-python from PyPI, each with its ordinary client. Re-runs only when a pin changes.
set -euo pipefail
cd "$(dirname "$0")/.."
NODE_STRIPE=23.1.0
PY_STRIPE=16.1.0
PEERS=.peers
mkdir -p "$PEERS"
stamp="$PEERS/.stamp-node-$NODE_STRIPE-py-$PY_STRIPE"
if [ -e "$stamp" ]; then
  exit 0
fi
command -v node >/dev/null || { echo "bench: node is needed for the stripe-node peer" >&2; exit 1; }
command -v npm >/dev/null || { echo "bench: npm is needed for the stripe-node peer" >&2; exit 1; }
PYTHON=${PYTHON:-python3}
echo "bench: installing stripe@$NODE_STRIPE (npm) and stripe==$PY_STRIPE (PyPI) into bench/$PEERS"
npm install --silent --no-audit --no-fund --prefix "$PEERS/node" "stripe@$NODE_STRIPE"
"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target "$PEERS/python" "stripe==$PY_STRIPE"
rm -f "$PEERS"/.stamp-*
touch "$stamp"
