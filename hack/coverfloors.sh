#!/bin/sh
# coverfloors.sh OUT PKG:MIN...: check the coverage floors against the
# output of one `go test -cover` run (OUT), so that the packages are not
# tested a second time for their coverage. A package missing from OUT, or
# without a coverage figure (it failed to build or its tests failed), fails.
set -eu
out=${1:?usage: coverfloors.sh GO-TEST-OUTPUT PKG:MIN...}
shift
module=$(sed -n 's/^module[[:space:]]*//p' "$(dirname "$0")/../go.mod")
rc=0
for pm in "$@"; do
	pkg=${pm%%:*}
	min=${pm##*:}
	pct=$(awk -v p="$module/$pkg" '$2 == p && /coverage: / { sub(/.*coverage: /, ""); sub(/% of statements.*/, ""); print; exit }' "$out")
	if [ -z "$pct" ]; then
		echo "coverage $pkg: no figure in the test output (did its tests fail?)"
		rc=1
	elif awk -v p="$pct" -v m="$min" 'BEGIN { exit !(p + 0 >= m) }'; then
		echo "coverage $pkg $pct% (floor $min%)"
	else
		echo "coverage $pkg $pct% is under its floor of $min%"
		rc=1
	fi
done
exit $rc
