#!/bin/sh
# The end-to-end demo, from a fresh clone, as root on Debian 12: installs
# the Debian packages, builds patchbridge, then tells one merge request's
# story through a GitLab simulator, a private Postfix list server,
# patchbridge-milter and the patchbridge daemon (scripts/demo.py).  It
# stops everything it started.  Build tree: build-demo/.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

"$top/scripts/install-deps.sh"
echo "== building patchbridge (build-demo/)"
cmake -S "$top" -B "$top/build-demo" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	>"$top/build-demo.cmake.log" 2>&1 ||
	{ cat "$top/build-demo.cmake.log"; exit 1; }
cmake --build "$top/build-demo" -j "$(nproc)" >"$top/build-demo.build.log" 2>&1 ||
	{ tail -50 "$top/build-demo.build.log"; exit 1; }
exec "$top/tests/forgesim/run-with-sim.sh" /usr/bin/python3 \
	"$top/scripts/demo.py" --bin "$top/build-demo" "$@"
