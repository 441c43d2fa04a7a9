#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: install what is needed, fetch
# the data, build, and run the main job: a local cluster of 1 ps + 2 workers,
# synchronous (SyncReplicasOptimizer semantics), the mnist_replica MLP.
# Extra arguments are passed on to `rdmaps launch` (e.g. --transport=tcp).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== installing Debian packages (scripts/install-deps.sh)"
bash scripts/install-deps.sh

# the data first, as scripts/test.sh does: the network is the step most
# likely to fail, and it should fail before a build has been waited for
echo "== fetching data (scripts/fetch-data.sh data)"
bash scripts/fetch-data.sh data

echo "== building (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"

echo "== main job: rdmaps launch --ps=1 --workers=2 --sync_replicas=True"
exec ./build/src/cli/rdmaps launch --ps=1 --workers=2 --sync_replicas=True \
	--train_steps=200 --data_dir=data/mnist "$@"
