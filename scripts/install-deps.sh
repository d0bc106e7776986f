#!/bin/sh
# Install the Debian 12 packages that patchbridge's build, tests and demo
# need (what the programs need at run time is in README.md,
# "Installing").  Idempotent: packages already present are left alone,
# and the package lists are refreshed at most once per run (only when
# something is missing).  An existing Postfix configuration is never
# touched.  Must run as root.
set -eu

PKGS="
build-essential cmake pkgconf git ca-certificates
libgmime-3.0-dev libgit2-dev libcurl4-openssl-dev libjson-c-dev
libsqlite3-dev sqlite3 libpq-dev postgresql libyaml-dev libcmocka-dev
libmilter-dev
libmicrohttpd-dev
clang libclang-rt-14-dev clang-format
postfix swaks miltertest
python3 python3-yaml python3-jsonschema
b4 public-inbox
man-db groff-base
"

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: must run as root (apt-get install)" >&2
	exit 77
fi

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
		grep -q '^install ok installed$'; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi

echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# Debian's postfix package asks debconf questions; answer them so the
# install never blocks, and never start the system instance (the tests
# run their own private Postfix).  Only on a machine without a Postfix
# configuration: a list server's own main.cf (or its debconf answers,
# which a later upgrade of postfix reads again) is not ours to change.
# (PB_POSTFIX_MAIN_CF: another main.cf to look for, for
# tests/cli/install_deps.sh.)
case " $missing " in
*" postfix "*)
	if [ ! -e "${PB_POSTFIX_MAIN_CF:-/etc/postfix/main.cf}" ]; then
		echo "postfix postfix/main_mailer_type select No configuration" |
			debconf-set-selections
	fi
	;;
esac
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: done"
