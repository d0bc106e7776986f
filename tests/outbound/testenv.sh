# testenv.sh: sourced by the outbound shell tests, with $here (their
# directory) and $name (what they are called) set.  Sets $data (the
# expected files), makes $tmp (removed at exit) and runs git with a $HOME
# of its own, no system configuration, in UTC and C.UTF-8, so that the
# host changes nothing.
data=$(cd "$here/../data/outbound" && pwd)
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/$name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C.UTF-8 TZ=UTC
mkdir -p "$HOME"
