#!/usr/bin/env bash
# Runs failure_test.py on 3 ranks and checks what each live rank printed (see its docstring):
#   failure_check.sh PYTHON TEST_DIR MPIEXEC...
set -uo pipefail
python=$1 dir=$2
shift 2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
"$@" -np 3 "$python" "$dir/failure_test.py" >"$log" 2>&1
echo "mpirun exit code $? after $((SECONDS - start)) s"
status=0
check() {  # check SCENARIO RANK EXPECTED
  local line
  line=$(grep "^$1 rank $2: backward() raised" "$log")
  if [[ $line == *"$3"* ]] && grep -q "^$1 rank $2: then communicator unusable" "$log"; then
    echo "ok: $line"
  else
    echo "$1, rank $2: expected '$3' then 'communicator unusable'; got: ${line:-nothing}"
    status=1
  fi
}
for r in 0 1 2; do
  check disagree $r "TransportError: ranks disagree on DDP hook options and design"
done
for r in 0 2; do
  check silent $r "TransportError: rank $r: not every rank joined the check of DDP hook options and design"
done
[[ $status -eq 0 ]] || cat "$log"
exit $status
