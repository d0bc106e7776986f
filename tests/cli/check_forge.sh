#!/bin/sh
# `patchbridge check-config --file-only --forge` against the GitLab simulator
# (the file and the forge; the host checks have tests of their own):
#   check_forge.sh PATCHBRIDGE     (under tests/forgesim/run-with-sim.sh)
# A token that can act as the reviewers passes; one without admin rights,
# one without the sudo scope, and an administrator's without admin_mode
# under Admin Mode each get a line saying what to do, and exit 78 while an
# approval policy needs Sudo; with approval_policy = none only a note.
# A project that requires re-authentication to approve is a problem too.
set -u
pb=$1
url=${PB_FORGESIM_URL:?run me under tests/forgesim/run-with-sim.sh}
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/cli_check_forge.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

fail() {
	echo "FAIL: $*"
	sed 's/^/  | /' "$tmp/out"
	failed=1
}

write_conf() {
	cat >"$tmp/c.conf" <<CONF
[bridge]
address = bridge@example.org
domain = example.org
list_address = list@example.org
[forge]
url = $url
token_file = $tmp/token
max_retries = 0
[inbound]
approval_policy = $1
[project "group/project"]
CONF
}

# check TOKEN POLICY STATUS TEXT...: run with TOKEN; exit STATUS, and each
# TEXT somewhere in the output.
check() {
	token=$1 policy=$2 want=$3
	shift 3
	printf '%s\n' "$token" >"$tmp/token"
	chmod 600 "$tmp/token"
	write_conf "$policy"
	"$pb" check-config --file-only --forge "$tmp/c.conf" >"$tmp/out" 2>&1
	got=$?
	[ "$got" = "$want" ] ||
		fail "$token/$policy: exit $got, expected $want"
	for text in "$@"; do
		grep -qF -- "$text" "$tmp/out" ||
			fail "$token/$policy: no \"$text\""
	done
}

sim() {
	curl -sf -X "$1" -H 'Content-Type: application/json' \
		-d "$3" "$url/_sim/$2" >/dev/null || fail "control $1 $2"
}

sim POST reset '{}'
check admin-token forge 0 'the token is user "root"' \
	'its scopes: api, sudo' 'it can act as other users (Sudo)' 'forge: ok'
check bob-token forge 78 'the token is user "bob"' \
	'problem: it cannot act as other users (Sudo)' \
	'Must be admin to use sudo' "use an administrator's token" \
	'set approval_policy = none' 'need an administrator'
check admin-nosudo-token forge 78 'acting as an administrator' \
	"it is an administrator's token without the sudo scope" \
	'make one with the api and sudo scopes'
check bob-token none 0 'note: it cannot act as other users' 'forge: ok'
check readonly-token none 78 'lacks the api scope'
check no-such-token forge 78 'cannot tell who the token is'

# A project that requires re-authentication to approve: no approval by
# mail can work there (EE's ApprovalService refuses it), whatever the token.
sim PUT projects/1/settings '{"require_password_to_approve": true}'
check admin-token forge 78 'problem: group/project requires re-authentication' \
	'approvals by mail cannot work there'
check admin-token none 0 'forge: ok'
sim PUT projects/1/settings '{"require_password_to_approve": false}'
check admin-token forge 0 'forge: ok'

# Admin Mode: an administrator's token needs the admin_mode scope.
sim PUT settings '{"admin_mode": true}'
check admin-token forge 78 'Admin Mode is on and the token lacks the admin_mode'
sim POST tokens '{"user": "root", "token": "am-token", "scopes": ["api", "sudo", "admin_mode"]}'
check am-token forge 0 'its scopes: api, sudo, admin_mode' 'forge: ok'

# An unreachable forge: 69.
printf 'admin-token\n' >"$tmp/token"
sed "s|^url = .*|url = http://127.0.0.1:9|" "$tmp/c.conf" >"$tmp/d.conf"
"$pb" check-config --file-only --forge "$tmp/d.conf" >"$tmp/out" 2>&1
[ $? = 69 ] || fail "unreachable forge: not 69"

exit $failed
