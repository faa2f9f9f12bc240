# Sourced by the CLI test scripts: a scratch folder removed at exit, one line per check, and a
# summary whose status is the script's ("N passed, M failed"; non-zero on any failure).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
finish() {
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}
