#!/bin/sh
# contrib/prometheus/ is right: the rules load (promtool check rules),
# their unit tests pass (promtool test rules), and every query of the
# rules and of the Grafana dashboard parses as PromQL (promtool, through
# a rule file made of them) and names only metrics `patchbridge
# list-metrics` has (with a histogram's _bucket, _sum and _count).
#
#   prometheus_check.sh PATCHBRIDGE SRCDIR
#
# Exit 0 pass, 1 fail, 77 skipped: promtool missing (Debian package
# "prometheus", which scripts/install-deps.sh installs).
set -u
pb=$1
dir=$2/contrib/prometheus
command -v promtool >/dev/null 2>&1 ||
	{ echo "prometheus_check: SKIP: promtool is not installed (apt-get install prometheus)"; exit 77; }
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/promcheck.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
rc=0

promtool check rules "$dir/alerts.yml" || rc=1
(cd "$dir" && promtool test rules alerts.test.yml) || rc=1

# Every query: the rules' and the dashboard's, as recording rules.
/usr/bin/python3 - "$dir" "$tmp" <<'PY' || rc=1
import json, os, sys, yaml
src, tmp = sys.argv[1], sys.argv[2]
exprs = []
with open(os.path.join(src, "alerts.yml")) as f:
    for g in yaml.safe_load(f)["groups"]:
        exprs += [("rule " + r["alert"], r["expr"]) for r in g["rules"]]
with open(os.path.join(src, "dashboard.json")) as f:
    dash = json.load(f)
for p in dash["panels"]:
    for t in p.get("targets", []):
        # Grafana's variables, as Grafana substitutes them
        e = (t["expr"].replace("$__rate_interval", "5m")
             .replace("$job", ".*").replace("$instance", ".*"))
        exprs.append(("panel %r" % p["title"], e))
for v in dash["templating"]["list"]:
    q = v["query"]["query"]
    inner = q[q.index("(") + 1:q.rindex(",")].replace("$job", ".*")
    exprs.append(("variable " + v["name"], inner))
rules = {"groups": [{"name": "check", "rules": [
    {"record": "check_%d" % i, "expr": e} for i, (_, e) in enumerate(exprs)]}]}
with open(os.path.join(tmp, "exprs.yml"), "w") as f:
    yaml.safe_dump(rules, f)
with open(os.path.join(tmp, "exprs.txt"), "w") as f:
    for where, e in exprs:
        f.write("%s\t%s\n" % (where, " ".join(e.split())))
print("prometheus_check: %d queries" % len(exprs))
PY
promtool check rules "$tmp/exprs.yml" >/dev/null ||
	{ echo "prometheus_check: a query does not parse:"; promtool check rules "$tmp/exprs.yml"; rc=1; }

"$pb" list-metrics >"$tmp/names" || exit 2
sed 's/$/_bucket/' "$tmp/names" | grep duration >>"$tmp/names"
sed 's/$/_sum/; s/_bucket_sum$//' "$tmp/names" | grep duration_seconds_sum >>"$tmp/names"
sed -n 's/\(.*duration_seconds\)$/\1_count/p' "$tmp/names" >>"$tmp/names"
while IFS='	' read -r where expr; do
	for m in $(printf '%s\n' "$expr" | grep -o 'patchbridge_[a-z_]*' | sort -u); do
		grep -qx "$m" "$tmp/names" ||
			{ echo "prometheus_check: $where: no such metric: $m"; rc=1; }
	done
done <"$tmp/exprs.txt"
[ $rc = 0 ] && echo "prometheus_check: ok"
exit $rc
