#!/bin/sh
# Fail when a header reaches up the layer stack (STYLE.md, "Layout"):
#   util < core < forge < outbound, inbound < main;  core < milter.
# Third-party headers are already confined by PRIVATE linking; this checks
# our own "layer/x.h" includes, which share one include root.
top=${1:-.}
rc=0
check() { # dir allowed-layers...
	dir=$1
	shift
	[ -d "$top/$dir" ] || return 0
	allowed=$(printf '%s|' "$@")
	allowed=${allowed%|}
	bad=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z]+/' \
		"$top/$dir" --include='*.c' --include='*.h' |
		grep -vE "#[[:space:]]*include[[:space:]]+\"($allowed)/")
	if [ -n "$bad" ]; then
		echo "layering: $dir may include only: $*"
		echo "$bad"
		rc=1
	fi
}
check bridge/util util
check bridge/core util core
check bridge/forge util core forge
check bridge/outbound util core forge outbound
check bridge/inbound util core forge inbound
check milter util core milter
# Library confinement: only these modules may include these headers.
confine() { # pattern allowed-file-regex
	bad=$(grep -rlE "#[[:space:]]*include[[:space:]]*<($1)" "$top/bridge" \
		"$top/milter" 2>/dev/null | grep -vE "$2")
	if [ -n "$bad" ]; then
		echo "layering: <$1...> may be included only by $2:"
		echo "$bad"
		rc=1
	fi
}
confine 'curl/' '(bridge/forge/http|bridge/outbound/submit)\.[ch]$'
confine 'json-c/|json\.h' 'bridge/forge/json\.[ch]$'
confine 'git2' 'bridge/outbound/'
confine 'sqlite3\.h' 'bridge/core/store'
confine 'gmime/' 'bridge/core/mail'
confine 'yaml\.h' 'bridge/core/owners'
confine 'microhttpd' 'bridge/forge/webhook\.[ch]$'
[ $rc = 0 ] && echo "layering: ok"
exit $rc
