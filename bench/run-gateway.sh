#!/usr/bin/env bash
# Rough gateway overhead: N sequential GETs of a tenant's pod list straight from tp-1 and through
# HAProxy + gateways (the local region must be up). Prints requests/s for both.
#   bench/run-gateway.sh [N]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=${1:-500}
st=$here/.ursa
tok=$(cut -d, -f1 "$st/tokens.csv")
run() {
	local url=$1 t0 t1
	t0=$(date +%s.%N)
	for ((i = 0; i < n; i++)); do printf 'url = "%s"\noutput = /dev/null\n' "$url"; done >"$st/bench-gw.curl"
	curl -s --cacert "$st/ca.crt" -H "Authorization: Bearer $tok" -K "$st/bench-gw.curl"
	t1=$(date +%s.%N)
	python3 -c "import sys; n,a,b=int(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); print('%-40s %6d req in %.2fs = %.0f req/s' % (sys.argv[4], n, b-a, n/(b-a)))" "$n" "$t0" "$t1" "$url"
}
run "https://127.0.0.1:7101/api/v1/namespaces/default/pods"
run "https://127.0.0.1:6443/api/v1/namespaces/default/pods"
rm -f "$st/bench-gw.curl"
