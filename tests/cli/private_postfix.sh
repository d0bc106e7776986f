# private_postfix DIR: a Postfix configuration of the test's own in DIR
# (main.cf and master.cf, unchrooted, its queue directory below DIR, no
# milter named yet) and MAIL_CONFIG pointing at it, which postconf reads:
# check-config and patchbridge-milter --check then never read the host's
# /etc/postfix, whose milters (or their absence) would change what they
# say.  Sourced by the tests of tests/cli.
private_postfix() {
	mkdir -p "$1/queue" || return 1
	printf 'queue_directory = %s\n' "$1/queue" >"$1/main.cf" || return 1
	cat >"$1/master.cf" <<'MASTER' || return 1
smtp      inet  n       -       n       -       -       smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
MASTER
	export MAIL_CONFIG=$1
}
