#!/usr/bin/env bash
# Runs failure_test.py MODE on 3 ranks and checks what each live rank printed (see its docstring):
#   failure_check.sh MODE PYTHON TEST_DIR MPIEXEC...
set -uo pipefail
mode=$1 python=$2 dir=$3
shift 3
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
"$@" -np 3 "$python" "$dir/failure_test.py" "$mode" >"$log" 2>&1
echo "mpirun exit code $? after $((SECONDS - start)) s"
case $mode in
  disagree) ranks="0 1 2" want="TransportError: ranks disagree on design fingerprint" ;;
  silent) ranks="0 2" want="TransportError: rank RANK: not every rank joined the check of element count within 3 s" ;;
esac
status=0
for r in $ranks; do
  line=$(grep "^rank $r: backward() raised" "$log")
  if [[ $line == *"${want//RANK/$r}"* ]] && grep -q "^rank $r: then communicator unusable" "$log"; then
    echo "ok: $line"
  else
    echo "rank $r: expected '${want//RANK/$r}' then 'communicator unusable'; got: ${line:-nothing}"
    status=1
  fi
done
[[ $status -eq 0 ]] || cat "$log"
exit $status
