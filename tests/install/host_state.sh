#!/bin/bash
# host_state.sh record|compare FILE
#
# What the suite's tests that touch the host (users, Postfix, install,
# the end-to-end beds) may leave behind, recorded before them (CTest
# fixture host_state: host_state_record is its setup) and compared after
# them (install_host_clean, its cleanup): the test fails on any
# difference.  Recorded:
#
#   * the users and groups (name, id, members);
#   * the entries directly in /etc, /var/spool, /var/lib and /run, with
#     owner, group and mode (a test that writes there makes one);
#   * everything named patchbridge* below /etc, /var/spool, /var/lib,
#     /var/log, /run and /usr/local (an install without DESTDIR, a spool
#     made at the default path, a lock file in it);
#   * the digests of /etc/postfix/main.cf and master.cf, and the names
#     in /etc/postfix (a test that changes the host's Postfix).
#
# Names only, no contents (but Postfix's two files): the host's own
# logs, package lists and queue files change on their own.  Another
# user's work on a shared machine (a package installed meanwhile) shows
# too: the difference is printed, for a human to judge.
#
# Exit 0 same, 1 different (or no record).
set -u
export LC_ALL=C
[ $# -eq 2 ] || {
	echo "usage: $0 record|compare FILE" >&2
	exit 2
}

snapshot() {
	local d
	echo "# users"
	getent passwd | cut -d: -f1,3,4,6,7 | sort
	echo "# groups"
	getent group | cut -d: -f1,3,4 | sort
	for d in /etc /var/spool /var/lib /run; do
		echo "# $d"
		find "$d" -mindepth 1 -maxdepth 1 -printf '%p %u:%g %m %y\n' \
			2>/dev/null | sort
	done
	echo "# patchbridge*"
	find /etc /var/spool /var/lib /var/log /run /usr/local \
		-name 'patchbridge*' -prune -printf '%p %u:%g %m %y\n' \
		2>/dev/null | sort
	find /etc /var/spool /var/lib /var/log /run /usr/local \
		-path '*/patchbridge*/*' -printf '%p %u:%g %m %y\n' \
		2>/dev/null | sort
	echo "# /etc/postfix"
	find /etc/postfix -printf '%p %u:%g %m %y\n' 2>/dev/null | sort
	for d in /etc/postfix/main.cf /etc/postfix/master.cf; do
		if [ -f "$d" ]; then
			sha256sum "$d"
		else
			echo "absent $d"
		fi
	done
}

case $1 in
record)
	mkdir -p "$(dirname "$2")" && snapshot >"$2" || exit 1
	echo "host_state: recorded $(wc -l <"$2") lines in $2"
	;;
compare)
	[ -f "$2" ] || {
		echo "FAIL: no record $2 (host_state_record did not run)"
		exit 1
	}
	now=$(mktemp) || exit 1
	trap 'rm -f "$now"' EXIT
	snapshot >"$now"
	if ! diff -u "$2" "$now" >"$now.diff"; then
		echo "FAIL: the tests changed the host (- before, + after):"
		cat "$now.diff"
		rm -f "$now.diff"
		exit 1
	fi
	rm -f "$now.diff" "$2"
	echo "host_state: the host is as it was ($(wc -l <"$now") lines)"
	;;
*)
	echo "usage: $0 record|compare FILE" >&2
	exit 2
	;;
esac
