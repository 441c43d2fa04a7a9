#!/bin/sh
# usage: install.sh CMAKE BUILD_DIR.  Installs BUILD_DIR into a temporary
# prefix, then runs the installed binary with the build tree moved out of
# its sight (a copy elsewhere, with nothing of the build dir on its path).
cmake=$1; build=$2
p=$(mktemp -d "${TMPDIR:-/tmp}/rdmaps-install-XXXXXX") || exit 1
trap 'rm -rf "$p"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$cmake" --install "$build" --prefix "$p/usr" >"$p/log" 2>&1 || { cat "$p/log"; fail "cmake --install exited non-zero"; }
[ -x "$p/usr/bin/rdmaps" ] || fail "no bin/rdmaps in the prefix"
for f in README.md architecture.md protocol.md transport.md placement.md; do
	[ -s "$p/usr/share/doc/rdmaps/$f" ] || fail "no share/doc/rdmaps/$f"
done
# the binary needs nothing from the build tree: a copy elsewhere runs too
mkdir "$p/elsewhere" && cp "$p/usr/bin/rdmaps" "$p/elsewhere/" || fail "copy"
for b in "$p/usr/bin/rdmaps" "$p/elsewhere/rdmaps"; do
	ldd "$b" 2>/dev/null | grep -F "$build" && fail "$b links a library from the build tree"
	v=$(cd / && "$b" --version) || fail "$b --version exited non-zero"
	echo "$v" | grep -q "^rdmaps 0\.[0-9]" || fail "$b --version printed: $v"
	# a whole (tiny) run of its own: a port list, which needs no data
	(cd / && "$b" ports 2) | grep -Eq '^[0-9]+ [0-9]+$' || fail "$b ports 2 printed no port"
done
echo "  $(cd / && "$p/usr/bin/rdmaps" --version | head -1)"
echo "PASSED: cmake --install into $p/usr"
