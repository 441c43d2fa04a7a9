#!/bin/sh
# make-subset.sh SRC DST [NTRAIN [NTEST]]: the first NTRAIN training (default
# all 60000; more than 5000: the validation split) and NTEST test (default
# 10000) MNIST images as valid gzipped IDX files.  Without SRC it makes
# nothing (the tests skip).
src=$1; dst=$2; ntr=${3:-60000}; nte=${4:-10000}
mkdir -p "$dst"
[ -e "$src/train-images-idx3-ubyte" ] || { echo "make-subset: no $src, tests will skip"; : >"$dst/.none"; touch "$dst/train-images-idx3-ubyte.gz.absent"; exit 0; }
cut() { # file magic n rowbytes out
	{ printf "$2"; printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $(( $3 >> 24 & 255 )) $(( $3 >> 16 & 255 )) $(( $3 >> 8 & 255 )) $(( $3 & 255 )))";
	  if [ "$4" -gt 1 ]; then printf '\000\000\000\034\000\000\000\034'; tail -c +17 "$1" | head -c $(( $3 * $4 ));
	  else tail -c +9 "$1" | head -c "$3"; fi; } | gzip -1 >"$5"
}
cut "$src/train-images-idx3-ubyte" '\000\000\010\003' "$ntr" 784 "$dst/train-images-idx3-ubyte.gz"
cut "$src/train-labels-idx1-ubyte" '\000\000\010\001' "$ntr" 1 "$dst/train-labels-idx1-ubyte.gz"
cut "$src/t10k-images-idx3-ubyte" '\000\000\010\003' "$nte" 784 "$dst/t10k-images-idx3-ubyte.gz"
cut "$src/t10k-labels-idx1-ubyte" '\000\000\010\001' "$nte" 1 "$dst/t10k-labels-idx1-ubyte.gz"
