#!/usr/bin/env bash
# Build and run kernels_bench (mlp b100 / lstm b128, 1 and 2 threads) with the
# PyTorch reference when /usr/bin/python3 can import torch.
#   bench/kernels/run.sh [BUILD_DIR] [extra kernels_bench flags...]
# JSON goes to BUILD_DIR/kernels_bench.json.  Defaults: --rounds=3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-$repo/build-data}"
shift || true
py=/usr/bin/python3
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target kernels_bench -j"$(nproc)" >/dev/null
torch_args=()
if [ -x "$py" ] && "$py" -c "import torch" 2>/dev/null; then
	torch_args=(--torch="$here/torch_ref.py" --python="$py")
	echo "run.sh: PyTorch $("$py" -c 'import torch; print(torch.__version__)') via $py"
else
	echo "run.sh: $py cannot import torch (apt-get install -y python3-torch); ours only"
fi
echo "run.sh: $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/kernels/kernels_bench" --rounds=3 "${torch_args[@]}" --json="$build/kernels_bench.json" "$@"
echo "run.sh: load average after: $(cut -d' ' -f1-3 /proc/loadavg); JSON in $build/kernels_bench.json"
