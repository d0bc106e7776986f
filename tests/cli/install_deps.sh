#!/bin/sh
# scripts/install-deps.sh answers Postfix's debconf question ("No
# configuration") only on a machine without a Postfix configuration.
#
#   install_deps.sh SOURCE_DIR
#
# The script runs with stand-ins for dpkg-query (every package present
# but postfix), debconf-set-selections (records what it is given) and
# apt-get (does nothing) first in PATH; PB_POSTFIX_MAIN_CF names the
# main.cf it looks for.  Exit 0 pass, 1 fail, 77 skipped (not root: the
# script refuses to run).
set -u
src=$1
[ "$(id -u)" -eq 0 ] || { echo "SKIP: install-deps.sh must run as root"; exit 77; }
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/install_deps.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
cat >"$tmp/bin/dpkg-query" <<'STUB'
#!/bin/sh
# dpkg-query -W -f='${Status}\n' PKG: all installed but postfix
for a; do last=$a; done
[ "$last" = postfix ] && exit 1
echo "install ok installed"
STUB
cat >"$tmp/bin/debconf-set-selections" <<STUB
#!/bin/sh
cat >>"$tmp/preseeded"
STUB
printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/apt-get"
chmod +x "$tmp/bin/"*
failed=0

run() {
	rm -f "$tmp/preseeded"
	PATH=$tmp/bin:$PATH PB_POSTFIX_MAIN_CF=$tmp/main.cf \
		sh "$src/scripts/install-deps.sh" >"$tmp/out" 2>&1 || {
		echo "FAIL: install-deps.sh exited $?: $(cat "$tmp/out")"
		failed=1
	}
}

# A machine with a Postfix configuration: not a word to debconf.
echo "myhostname = lists.example.org" >"$tmp/main.cf"
run
if [ -s "$tmp/preseeded" ]; then
	echo "FAIL: preseeded with a main.cf present: $(cat "$tmp/preseeded")"
	failed=1
fi
grep -q "installing: postfix" "$tmp/out" || {
	echo "FAIL: postfix not installed: $(cat "$tmp/out")"
	failed=1
}
# A machine without: "No configuration", so the install never blocks.
rm -f "$tmp/main.cf"
run
grep -qx "postfix postfix/main_mailer_type select No configuration" \
	"$tmp/preseeded" 2>/dev/null || {
	echo "FAIL: not preseeded without a main.cf"
	failed=1
}
[ $failed = 0 ] && echo "install_deps: ok"
exit $failed
