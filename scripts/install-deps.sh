#!/bin/sh
# Install the Debian 12 packages that patchbridge's build, tests and demo
# need (what the programs need at run time is in README.md,
# "Installing").  Idempotent: packages already present are left alone,
# and the package lists are refreshed at most once per run (only when
# something is missing).  An existing Postfix configuration is never
# touched.  Must run as root.
set -eu

PKGS="
build-essential cmake pkgconf git git-email ca-certificates
libgmime-3.0-dev libgit2-dev libcurl4-openssl-dev libjson-c-dev
libsqlite3-dev sqlite3 libpq-dev postgresql libyaml-dev libcmocka-dev
libmilter-dev
libssl-dev
libmicrohttpd-dev
libgpgme-dev libassuan-dev libunistring-dev
clang libclang-rt-14-dev clang-format
postfix swaks miltertest
python3 python3-yaml python3-jsonschema
prometheus python3-prometheus-client
b4 public-inbox
man-db groff-base logrotate
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
# promtool, with which the tests evaluate contrib/prometheus/, comes only
# in Debian's prometheus package, with the Prometheus server.  A machine
# that did not have that server gets it neither started by the install
# (policy-rc.d: Debian's invoke-rc.d policy, 101 = not now) nor enabled
# for the next boot: it is not ours to run.
policy=""
case " $missing " in
*" prometheus "*)
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		trap 'rm -f "$policy"' EXIT
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
	fi
	;;
esac
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
if [ -n "$policy" ]; then
	rm -f "$policy"
	systemctl disable --quiet prometheus.service 2>/dev/null || :
fi
echo "install-deps: done"
