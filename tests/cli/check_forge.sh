#!/bin/sh
# `patchbridge check-config --file-only --forge` against the GitLab simulator
# (the file and the forge; the host checks have tests of their own):
#   check_forge.sh PATCHBRIDGE     (under tests/forgesim/run-with-sim.sh)
# A token that can act as the reviewers passes; one without admin rights,
# one without the sudo scope, and an administrator's without admin_mode
# under Admin Mode each get a line saying what to do, and exit 78 while an
# approval policy needs Sudo; with approval_policy = none only a note.
# A project that requires re-authentication to approve is a problem too.
# With [webhook] enabled, a webhook that GitLab disabled after failed
# deliveries (for a while, then for good) is a problem until re-enabled.
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
	if [ -n "${WEBHOOK:-}" ]; then
		printf 's3cret\n' >"$tmp/hook.secret"
		chmod 600 "$tmp/hook.secret"
		printf '[webhook]\nenabled = yes\nsecret_file = %s\n' \
			"$tmp/hook.secret" >>"$tmp/c.conf"
	fi
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
# A token GitLab does not know (its plain 401): the operator's, told so.
check no-such-token forge 78 \
	'problem: the token was not accepted: GitLab does not know it' \
	"put it in $tmp/token"

# The token's expiry date (GET /personal_access_tokens/self): none is
# fine; a warning from 14 days before; expired or revoked, a problem
# that names the file to put a new one in.
check admin-token forge 0 'the token has no expiry date' 'forge: ok'
soon=$(date -u -d '+7 days' +%F) later=$(date -u -d '+100 days' +%F)
sim POST tokens "{\"user\": \"root\", \"token\": \"soon-token\", \"scopes\": [\"api\", \"sudo\"], \"expires_at\": \"$soon\"}"
check soon-token forge 0 "warning: the token expires on $soon, in 7 days" \
	"put it in $tmp/token" 'forge: ok'
sim POST tokens "{\"user\": \"root\", \"token\": \"later-token\", \"scopes\": [\"api\", \"sudo\"], \"expires_at\": \"$later\"}"
check later-token forge 0 "the token expires on $later, in 100 days" 'forge: ok'
sim PUT tokens/soon-token '{"expire": true}'
check soon-token forge 78 'problem: the token has expired' \
	"put it in $tmp/token ([forge] token_file)"
sim PUT tokens/later-token '{"revoked": true}'
check later-token forge 78 'problem: the token was revoked'

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

# The bridge's webhook, disabled by GitLab after failed deliveries
# (app/models/concerns/web_hooks/auto_disabling.rb): for a while after
# the 4th in a row, for good after the 40th; fine once re-enabled.
sim POST reset '{}'
hook=$(curl -sf -X POST -H 'Content-Type: application/json' \
	-d '{"url": "http://127.0.0.1:9/hooks/gitlab?x=1"}' "$url/_sim/webhooks" |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
WEBHOOK=yes check admin-token forge 0 'forge: ok'
sim POST "webhooks/$hook/failures" '{"count": 4}'
WEBHOOK=yes check admin-token forge 78 \
	'problem: group/project: GitLab disabled the webhook http://127.0.0.1:9/hooks/gitlab (id' \
	'after 4 or more failures in a row (until 20' \
	're-enable it in Settings > Webhooks' 'the bridge falls back to polling'
check admin-token forge 0 'forge: ok'
grep -qF 'x=1' "$tmp/out" && fail "the hook's query was shown"
for _ in $(seq 36); do
	sim POST time '{"advance_s": 86401}'
	sim POST "webhooks/$hook/failures" '{"count": 1}'
done
WEBHOOK=yes check admin-token forge 78 'after 40 failures in a row:'
sim POST "webhooks/$hook/enable" '{}'
WEBHOOK=yes check admin-token forge 0 'forge: ok'
WEBHOOK=yes check bot-token none 0 'its webhooks cannot be read' \
	'GitLab shows them to Maintainers'

# An unreachable forge: 69.
printf 'admin-token\n' >"$tmp/token"
sed "s|^url = .*|url = http://127.0.0.1:9|" "$tmp/c.conf" >"$tmp/d.conf"
"$pb" check-config --file-only --forge "$tmp/d.conf" >"$tmp/out" 2>&1
[ $? = 69 ] || fail "unreachable forge: not 69"

exit $failed
