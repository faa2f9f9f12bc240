#!/usr/bin/env bash
# scripts/netbench claims each namespace and link by creating it: an object of the same name that
# is not its own - there before `up`, or made by someone else after any look and just before
# netbench's own create - makes `up` stop with "... already exists and is not this instance's;
# left alone" (exit 2), remove what it did create, and leave that object as it is; a SIGTERM that
# arrives while such a create runs ends it with 130, still without touching that object. And
# netbench's deadline: `quick` whose ranks never end stops at CERAR_NETBENCH_DEADLINE (exit 124)
# and removes everything it made, processes included; `down` stops processes still running in
# the instance's namespaces. Needs what netbench needs (netbench_able.sh; exit 77: skipped).
# Leaves `ip netns list` and the links as it found them.
#   netbench_claim_test.sh SOURCE
set -uo pipefail
netbench=$1/scripts/netbench
bash "$(dirname "$0")/netbench_able.sh" || exit $?  # 77: netbench cannot run here, skipped
real_ip=$(command -v ip)
id=
work=$(mktemp -d)
foreign=()  # what this test made in netbench's place: removed at exit
cleanup() {
  local f
  for f in "${foreign[@]}"; do
    case $f in
      netns:*) "$real_ip" netns del "${f#netns:}" 2>/dev/null ;;
      link:*) "$real_ip" link del "${f#link:}" 2>/dev/null ;;
    esac
  done
  rm -rf "$work"
}
trap cleanup EXIT
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }

# An instance id nobody uses: no state folder, bridge or namespace of that id.
for ((k = 250; k >= 200; --k)); do
  [[ -e /run/cerar-netbench/$k ]] && continue
  "$real_ip" link show "cnb${k}br" >/dev/null 2>&1 && continue
  "$real_ip" netns list | grep -q "^cerar-nb$k-" && continue
  id=$k
  break
done
[[ -n $id ]] || { echo "netbench claim: no free instance id in 200 … 250, skipped"; exit 77; }

snapshot() {  # namespace and link names
  { "$real_ip" netns list | awk '{print $1}'; "$real_ip" -o link show | awk -F': ' '{print $2}'; } | sort
}
before=$(snapshot)

# case NAME OBJECT WRAP [term]: OBJECT (netns:NAME or link:NAME; none: nothing) is made by
# "someone else" - now when WRAP is empty, else by the `ip` that netbench runs just before
# running the command WRAP names (the race: after any check netbench could make) - and `up` must
# stop on it. With `term`, that `ip` also sends netbench SIGTERM (as Ctrl-C would, while its
# create runs): it must then exit 130, remove its own objects - and still not the foreign one.
case_() {
  local name=$1 object=$2 wrap=$3 mode=${4:-} bin=$work/bin-$RANDOM
  mkdir -p "$bin"
  local make=true
  case $object in
    netns:*) make="$real_ip netns add ${object#netns:}" ;;
    link:*) make="$real_ip link add ${object#link:} type bridge" ;;  # dummy: not in every kernel
  esac
  foreign+=("$object")
  local signal=:
  if [[ $mode == term ]]; then
    rm -f "$work/pid"
    signal="for i in \$(seq 50); do [ -s $work/pid ] && break; sleep 0.1; done; kill -TERM \$(cat $work/pid)"
  fi
  if [[ -z $wrap ]]; then
    $make || { bad "$name: could not make $object"; return; }
    ln -s "$real_ip" "$bin/ip"
  else
    # A stand-in ip: the foreign object appears the moment netbench runs the command that
    # would create its own (when its arguments are WRAP).
    cat >"$bin/ip" <<SH
#!/bin/sh
if [ "\$*" = "$wrap" ]; then $make || exit 99; $signal; fi
exec $real_ip "\$@"
SH
    chmod +x "$bin/ip"
  fi
  local rc=0 out pid
  PATH="$bin:$PATH" "$netbench" up --id "$id" --ranks 2 --rate 100 >"$work/out" 2>&1 &
  pid=$!
  echo "$pid" >"$work/pid"
  wait "$pid" || rc=$?
  out=$(cat "$work/out")
  local what=${object#*:}
  if [[ $mode == term ]]; then
    [[ $rc -eq 130 ]] && ok "$name: exit 130" || { bad "$name: exit $rc, output:"; sed 's/^/     | /' <<<"$out"; }
  elif [[ $rc -eq 2 && $out == *"$what"*"already exists and is not this instance's; left alone"* ]]; then
    ok "$name: exit 2: $(grep 'already exists' <<<"$out")"
  else
    bad "$name: exit $rc, output:"; sed 's/^/     | /' <<<"$out"
  fi
  case $object in
    netns:*) [[ -e /run/netns/$what ]] ;;
    link:*) "$real_ip" link show "$what" >/dev/null 2>&1 ;;
    *) true ;;
  esac && ok "$name: $object left alone" || bad "$name: $object was removed"
  [[ ! -e /run/cerar-netbench/$id ]] && ok "$name: instance $id removed" \
    || bad "$name: /run/cerar-netbench/$id left: $(cat "/run/cerar-netbench/$id/created" 2>/dev/null)"
  local left
  left=$(comm -13 <(echo "$before") <(snapshot) | grep -vx "${what:-/}")
  [[ -z $left ]] && ok "$name: nothing else left" || bad "$name: left behind: $left"
  case $object in
    netns:*) "$real_ip" netns del "$what" 2>/dev/null ;;
    link:*) "$real_ip" link del "$what" 2>/dev/null ;;
  esac
  unset 'foreign[-1]'
  # A failed case must not spoil the next ones (unless the instance was someone else's).
  [[ ! -e /run/cerar-netbench/$id || $out == *"is already up"* ]] || "$netbench" down --id "$id"
}

case_ "namespace there before up" "netns:cerar-nb$id-r1" ""
case_ "veth peer name there before up" "link:cnb${id}p1" ""
case_ "namespace made just before netbench's own" "netns:cerar-nb$id-r1" "netns add cerar-nb$id-r1"
case_ "bridge made just before netbench's own" "link:cnb${id}br" "link add cnb${id}br type bridge"
case_ "veth made just before netbench's own" "link:cnb${id}r1" "link add cnb${id}r1 type veth peer name cnb${id}p1"
case_ "SIGTERM while creating a namespace made meanwhile" "netns:cerar-nb$id-r1" "netns add cerar-nb$id-r1" term
case_ "SIGTERM while creating its own namespace" "none:" "netns add cerar-nb$id-r1" term

# The deadline: quick with a "cerar-bench" that never ends.
marker=$((86000 + $$ % 400))  # sleep MARKER: the ranks, found by their command line
printf '#!/bin/sh\nexec sleep %s\n' "$marker" >"$work/never"
chmod +x "$work/never"
quick_before=$(ls -d /tmp/cerar-netbench-quick.* 2>/dev/null)
state_before=$(ls /run/cerar-netbench 2>/dev/null)
rc=0
CERAR_BENCH=$work/never CERAR_NETBENCH_DEADLINE=8 timeout -s INT 60 "$netbench" quick >"$work/out" 2>&1 || rc=$?
[[ $rc -eq 124 ]] && ok "quick past its deadline: exit 124: $(grep deadline "$work/out")" \
  || { bad "quick past its deadline: exit $rc (expected 124)"; sed 's/^/     | /' "$work/out"; }
sleep 0.5
[[ -z $(pgrep -fx "sleep $marker") ]] && ok "quick past its deadline: no rank left" \
  || bad "quick past its deadline: ranks left: $(pgrep -fx "sleep $marker" | tr '\n' ' ')"
[[ $(ls /run/cerar-netbench 2>/dev/null) == "$state_before" ]] && ok "quick past its deadline: state folder removed" \
  || bad "quick past its deadline: /run/cerar-netbench now: $(ls /run/cerar-netbench)"
[[ $(ls -d /tmp/cerar-netbench-quick.* 2>/dev/null) == "$quick_before" ]] && ok "quick past its deadline: temp folder removed" \
  || bad "quick past its deadline: temp folder left"
[[ $(snapshot) == "$before" ]] && ok "quick past its deadline: no namespace or link left" \
  || bad "quick past its deadline: left: $(comm -13 <(echo "$before") <(snapshot) | tr '\n' ' ')"

# down with a process still running in one of the namespaces (mpirun killed, its ranks left).
if "$netbench" up --id "$id" --ranks 2 --rate 100 >"$work/out" 2>&1; then
  "$real_ip" netns exec "cerar-nb$id-r1" sleep "$marker" </dev/null >/dev/null 2>&1 &
  orphan=$!
  sleep 0.3
  "$netbench" down --id "$id" >"$work/out" 2>&1 || bad "down: exit $?: $(cat "$work/out")"
  sleep 0.2
  state=$(ps -o stat= -p "$orphan" 2>/dev/null)
  [[ -z $state || $state == Z* ]] && ok "down stopped the process left in a namespace" \
    || { bad "down left pid $orphan running ($state)"; kill "$orphan"; }
  wait "$orphan" 2>/dev/null
else
  bad "up for the down case: $(cat "$work/out")"
fi

after=$(snapshot)
[[ $after == "$before" ]] && ok "namespaces and links as before" \
  || bad "namespaces and links changed: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
