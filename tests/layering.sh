#!/bin/sh
# The layering of the code, checked at three levels (HACKING.md,
# "Layout"):
#
#   1. folders: a module includes headers of its own layer and the layers
#      below it only:
#        util < core < mail, state < forge < outbound, inbound < cmd
#        util < core < mail, state < milter
#      (mail and state do not see each other: classification reads the
#      thread map through core/threadmap.h);
#   2. modules: each third-party library is included by exactly one
#      module (one .c/.h pair), which converts its conventions to ours;
#   2a. the GitLab client's internal header (forge/gitlab_int.h) is
#       included by the client's own files (bridge/forge/gitlab*.c)
#       only;
#   2b. likewise the reply parser's (mail/reply_int.h): bridge/mail/reply*.c
#       only;
#   2c. SQL: statements are written in the state store only
#      (bridge/state/store.c, its table files store_*.c, and the two
#      engine drivers): no other file of bridge/ or milter/ holds SQL
#      text in a string, and the store's inside (state/storeq.h) is
#      included by bridge/state/ only;
#   3. links: with --milter BINARY, the milter program carries no symbol
#      of the forge, outbound or inbound layers and imports no HTTP,
#      JSON or git library.
#
#   layering.sh [TOP] [--milter BINARY]
#   layering.sh --self-test      plant each kind of violation in a scratch
#                                tree and fail unless every one is caught
top=.
milter=""
while [ $# -gt 0 ]; do
	case $1 in
	--self-test) self_test=1; shift ;;
	--milter) milter=${2:?--milter needs a binary}; shift 2 ;;
	*) top=$1; shift ;;
	esac
done
export LC_ALL=C

check_tree() { # top [milter-binary]
	t=$1
	m=$2
	rc=0
	layer() { # dir allowed-layers...
		dir=$1
		shift
		[ -d "$t/$dir" ] || return 0
		allowed=$(printf '%s|' "$@")
		allowed=${allowed%|}
		bad=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z]+/' \
			"$t/$dir" --include='*.c' --include='*.h' |
			grep -vE "#[[:space:]]*include[[:space:]]+\"($allowed)/")
		if [ -n "$bad" ]; then
			echo "layering: $dir may include only: $*"
			echo "$bad"
			rc=1
		fi
	}
	layer bridge/util util
	layer bridge/core util core
	layer bridge/mail util core mail
	layer bridge/state util core state
	layer bridge/forge util core forge
	layer bridge/outbound util core mail state forge outbound
	layer bridge/inbound util core mail state forge inbound
	layer bridge/cmd util core mail state forge outbound inbound cmd
	layer milter util core mail state milter
	# Each third-party library behind one module.
	confine() { # include-pattern module-regex
		bad=$(grep -rlE "#[[:space:]]*include[[:space:]]*<($1)" \
			"$t/bridge" "$t/milter" 2>/dev/null |
			sed "s#^$t/##" | grep -vE "^($2)\.[ch]\$")
		if [ -n "$bad" ]; then
			echo "layering: <$1...> may be included only by $2:"
			echo "$bad"
			rc=1
		fi
	}
	confine 'curl/' 'bridge/forge/http|bridge/outbound/submit'
	confine 'json-c/|json\.h' 'bridge/forge/json'
	confine 'git2' 'bridge/outbound/gitrepo'
	confine 'sqlite3\.h' 'bridge/state/db_sqlite'
	confine 'libpq-fe\.h|libpq/|postgres' 'bridge/state/db_pg'
	confine 'gmime/' 'bridge/mail/mail'
	confine 'glib\.h|glib/' 'bridge/mail/mail|bridge/mail/digest'
	confine 'yaml\.h' 'bridge/core/owners'
	confine 'openssl/' 'bridge/mail/patatt'
	confine 'microhttpd' 'bridge/forge/httpd'
	confine 'libmilter/' 'milter/glue'
	# A module cut into files shares a header among them alone: the
	# GitLab client's and the reply parser's stay inside them.
	internal() { # header (dir/name_int.h) and the module's files' prefix
		bad=$(grep -rlE "#[[:space:]]*include[[:space:]]*\"$1\"" \
			"$t/bridge" "$t/milter" "$t/tests" --include='*.[ch]' \
			2>/dev/null | sed "s#^$t/##" |
			grep -vE "^bridge/$2(_[a-z]+)?\.[ch]\$")
		if [ -n "$bad" ]; then
			echo "layering: $1 may be included only by bridge/$2*.c:"
			echo "$bad"
			rc=1
		fi
	}
	internal forge/gitlab_int.h forge/gitlab
	internal mail/reply_int.h mail/reply
	# SQL text only in the store and its engine drivers.
	sql='"[^"]*\b(SELECT [^"]*FROM|INSERT INTO|UPDATE [a-z_]+ SET|DELETE FROM|CREATE (UNIQUE )?(TABLE|INDEX)|ALTER TABLE|DROP TABLE|PRAGMA [a-z_]+|BEGIN (IMMEDIATE|TRANSACTION)|SAVEPOINT |ROLLBACK|COMMIT\b)'
	bad=$(grep -rnE "$sql" "$t/bridge" "$t/milter" --include='*.c' \
		--include='*.h' 2>/dev/null | sed "s#^$t/##" |
		grep -vE '^bridge/state/(store(_[a-z_]+)?|db_sqlite|db_pg)\.c:')
	if [ -n "$bad" ]; then
		echo "layering: SQL outside bridge/state/store*.c and the drivers:"
		echo "$bad"
		rc=1
	fi
	bad=$(grep -rlE '#[[:space:]]*include[[:space:]]*"state/storeq\.h"' \
		"$t/bridge" "$t/milter" "$t/tests" --include='*.[ch]' \
		2>/dev/null | sed "s#^$t/##" | grep -vE '^bridge/state/')
	if [ -n "$bad" ]; then
		echo "layering: state/storeq.h is included outside bridge/state/:"
		echo "$bad"
		rc=1
	fi
	# What the milter program links.
	if [ -n "$m" ]; then
		own=$(nm --defined-only "$m" 2>/dev/null |
			grep -E ' [TDBR] (forge|gitlab|http|json|webhook|outbound|inbound|mirror|gitrepo|series|submit|apply|plan|approval)_' |
			head -5)
		imp=$(nm -D --undefined-only "$m" 2>/dev/null |
			grep -E ' (curl_|git_|json_object|json_tokener|MHD_)' | head -5)
		if [ -n "$own$imp" ]; then
			echo "layering: the milter links what it must not (forge, outbound, inbound, curl, libgit2, json-c, libmicrohttpd):"
			[ -n "$own" ] && echo "$own"
			[ -n "$imp" ] && echo "$imp"
			rc=1
		fi
	fi
	return $rc
}

if [ -n "${self_test:-}" ]; then
	tmp=$(mktemp -d) || exit 1
	trap 'rm -rf "$tmp"' EXIT
	fails=0
	plant() { # name file text
		rm -rf "$tmp/t"
		mkdir -p "$tmp/t/$(dirname "$2")"
		printf '%s\n' "$3" >"$tmp/t/$2"
		if check_tree "$tmp/t" "" >/dev/null; then
			echo "layering self-test: NOT caught: $1"
			fails=1
		else
			echo "layering self-test: caught: $1"
		fi
	}
	plant "mail includes a state header" bridge/mail/x.c '#include "state/store.h"'
	plant "state includes a mail header" bridge/state/x.c '#include "mail/mail.h"'
	plant "core includes a mail header" bridge/core/x.c '#include "mail/mail.h"'
	plant "forge includes a state header" bridge/forge/x.c '#include "state/store.h"'
	plant "the milter includes a forge header" milter/x.c '#include "forge/forge.h"'
	plant "a second libgit2 user" bridge/outbound/mirror.c '#include <git2.h>'
	plant "a second SQLite user" bridge/state/store.c '#include <sqlite3.h>'
	plant "a second libpq user" bridge/state/store.c '#include <libpq-fe.h>'
	plant "a second GMime user" bridge/mail/review.c '#include <gmime/gmime.h>'
	plant "the GitLab client's header outside it" bridge/forge/webhook.c \
		'#include "forge/gitlab_int.h"'
	plant "the GitLab client's header in a command" bridge/cmd/x.c \
		'#include "forge/gitlab_int.h"'
	plant "the reply parser's header outside it" bridge/mail/review.c \
		'#include "mail/reply_int.h"'
	plant "SQL in a command" bridge/cmd/cmd_status.c \
		'static const char q[] = "SELECT count(*) FROM inbound";'
	plant "SQL in the milter" milter/session.c \
		'const char *q = "UPDATE thread_map SET state = 1";'
	plant "SQL in the store's configuration" bridge/state/storeconf.c \
		'static const char q[] = "DELETE FROM cursors";'
	plant "the store's inside included by a command" bridge/cmd/cmd_status.c \
		'#include "state/storeq.h"'
	# SQL in a table file of the store is where it belongs
	rm -rf "$tmp/t"
	mkdir -p "$tmp/t/bridge/state"
	printf '%s\n' 'static const char q[] = "DELETE FROM cursors";' \
		>"$tmp/t/bridge/state/store_cursor.c"
	if check_tree "$tmp/t" "" >/dev/null; then
		echo "layering self-test: passed: SQL in a store table file"
	else
		echo "layering self-test: WRONGLY caught: SQL in a store table file"
		fails=1
	fi
	# a milter binary that carries a forge symbol / imports libcurl
	mkdir -p "$tmp/b"
	printf 'int forge_open(void);\nint forge_open(void) { return 0; }\nint main(void) { return forge_open(); }\n' >"$tmp/b/f.c"
	printf '#include <curl/curl.h>\nint main(void) { curl_global_init(0); return 0; }\n' >"$tmp/b/c.c"
	for b in f c; do
		if ! cc -o "$tmp/b/$b" "$tmp/b/$b.c" $([ $b = c ] && echo -lcurl) 2>/dev/null; then
			echo "layering self-test: cannot build the $b probe (cc, libcurl)"
			fails=1
			continue
		fi
		rm -rf "$tmp/t" && mkdir -p "$tmp/t"
		if check_tree "$tmp/t" "$tmp/b/$b" >/dev/null; then
			echo "layering self-test: NOT caught: milter binary $b"
			fails=1
		else
			echo "layering self-test: caught: the milter links the forge ($b)"
		fi
	done
	# and the real tree passes
	if ! check_tree "$top" "$milter"; then
		echo "layering self-test: the real tree fails"
		fails=1
	fi
	exit $fails
fi

if check_tree "$top" "$milter"; then
	echo "layering: ok"
	exit 0
fi
exit 1
