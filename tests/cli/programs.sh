#!/bin/bash
# programs.sh PATCHBRIDGE FORMAT DAEMON LIBEXECDIR
#
# The `patchbridge` front and the programs it runs (bridge/cmd/main.c,
# "Programs"): the offline commands must not load what they do not use.
#   1. the front (parse, check-config, dump-config, help, version) loads
#      no libcurl, TLS library, libgit2, SQLite, libmicrohttpd or json-c,
#      directly or through another library (libyaml it does: check-config
#      reads owners.yaml);
#   2. patchbridge-format loads libgit2 but no libcurl, SQLite or
#      libmicrohttpd;
#   3. the front runs the other commands through them: `format` and
#      `status` reach their program (an error of theirs comes back with
#      its exit status), `check-config --forge` asks the forge through
#      patchbridge-daemon once the file is checked, and "COMMAND --help"
#      is the front's own;
#   4. a front without its programs says so and exits 72 (EX_OSFILE)
#      (unless they are installed in LIBEXECDIR, where it looks last).
set -u
export LC_ALL=C
unset PATCHBRIDGE_CONFIG
[ $# -eq 4 ] || {
	echo "usage: $0 PATCHBRIDGE FORMAT DAEMON LIBEXECDIR" >&2
	exit 2
}
pb=$1
format=$2
daemon=$3
libexecdir=$4 # where an installed front would look last
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/cli_programs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

fail() {
	echo "FAIL: $*" >&2
	failed=1
}

# loads BINARY: the shared objects the dynamic loader maps for it.
loads() {
	ldd "$1" | awk '{ print $1 }' | sed 's#.*/##'
}

tls='libssl|libcrypto|libgnutls|libmbedtls|libmbedx509|libmbedcrypto|libnettle|libhogweed'
bad=$(loads "$pb" | grep -E "^(libcurl|libgit2|libsqlite3|libmicrohttpd|libjson-c|libssh2|$tls)[.-]")
[ -z "$bad" ] || fail "patchbridge loads $(echo $bad)"
loads "$pb" | grep -q '^libgmime-3' || fail "patchbridge does not load GMime: is this the front?"
bad=$(loads "$format" | grep -E '^(libcurl|libsqlite3|libmicrohttpd)[.-]')
[ -z "$bad" ] || fail "patchbridge-format loads $(echo $bad)"
loads "$format" | grep -q '^libgit2' || fail "patchbridge-format does not load libgit2"
loads "$daemon" | grep -q '^libcurl' || fail "patchbridge-daemon does not load libcurl"

# 3. through the front
"$pb" format --repo "$tmp/none" --base a --head b >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 72 ] && [ $rc -ne 64 ] ||
	fail "format on no repository: exit $rc ($(cat "$tmp/err"))"
"$pb" -c "$tmp/missing.conf" status >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 66 ] || fail "status with a missing configuration: exit $rc, expected 66 ($(cat "$tmp/err"))"
grep -q "missing.conf" "$tmp/err" || fail "status: the -c file was not passed on: $(cat "$tmp/err")"
# --forge: the file is checked by the front, the forge by the daemon's
# program (here: unreachable, 69)
cat >"$tmp/forge.conf" <<EOF
[bridge]
address = patchbridge@bridge.example.org
domain = bridge.example.org
list_address = list@example.org
[forge]
url = http://127.0.0.1:9
token_file = $tmp/token
connect_timeout = 1s
max_retries = 0
[inbound]
approval_policy = none
[project "group/project"]
EOF
printf 'token\n' >"$tmp/token"
chmod 600 "$tmp/token"
"$pb" check-config --file-only --forge "$tmp/forge.conf" >"$tmp/out" 2>"$tmp/err"
rc=$?
grep -q "forge.conf: ok" "$tmp/out" || fail "check-config --forge: the file check did not run: $(cat "$tmp/out" "$tmp/err")"
[ $rc -eq 69 ] || fail "check-config --forge on an unreachable forge: exit $rc, expected 69 ($(cat "$tmp/err"))"
for c in run send status why replay export format; do
	"$pb" "$c" --help >"$tmp/out" 2>&1 || fail "$c --help: exit $?"
	grep -q "^usage: patchbridge \[-c FILE\] $c" "$tmp/out" ||
		fail "$c --help: $(head -n 1 "$tmp/out")"
done

# 4. a lone front
cp "$pb" "$tmp/patchbridge"
"$tmp/patchbridge" status >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ -e "$libexecdir/patchbridge-daemon" ]; then
	echo "programs: $libexecdir/patchbridge-daemon is installed; the lone-front check is skipped"
else
	[ $rc -eq 72 ] || fail "a front without its programs: exit $rc, expected 72"
	grep -q "patchbridge-daemon: not found" "$tmp/err" ||
		fail "a front without its programs: $(cat "$tmp/err")"
fi
"$tmp/patchbridge" --version >"$tmp/out" 2>&1 || fail "a lone front cannot even say its version"

[ $failed -eq 0 ] && echo "programs: ok"
exit $failed
