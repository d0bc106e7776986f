# scaled S: S (seconds, or a count of polls) times PB_TEST_SLOWDOWN
# (default 1; rounded up), the one factor every bound on a wait of the
# test suite is multiplied by (HACKING.md, "Timing in tests").  Sourced
# by the shell tests and tests/postfix/pfbed: `for _ in $(seq
# "$(scaled 100)"); do ... sleep 0.1; done`.
scaled() {
	awk -v s="$1" -v f="${PB_TEST_SLOWDOWN:-1}" 'BEGIN {
		if (f + 0 < 1) f = 1
		v = s * f; printf "%d\n", (v == int(v)) ? v : int(v) + 1 }'
}
