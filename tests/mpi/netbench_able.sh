#!/usr/bin/env bash
# Whether scripts/netbench can run here, found by doing what it does, in a namespace of its own:
# create a uniquely named network namespace, a veth pair and a bridge in it, a tbf qdisc, and
# delete the namespace (which deletes them). Root alone is not enough: root in an unprivileged
# container lacks CAP_SYS_ADMIN / CAP_NET_ADMIN, a kernel may lack veth, bridge or sch_tbf.
# Can: runs COMMAND (exec) or exits 0. Cannot: one line saying why, exit 77 (ctest: skipped).
#   netbench_able.sh [COMMAND...]
set -uo pipefail
skip() { echo "netbench: cannot run here ($*), skipped"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root"
command -v ip >/dev/null || skip "no ip (iproute2)"
ns=cerar-probe-$$-$RANDOM
err=$(ip netns add "$ns" 2>&1) || skip "cannot create a network namespace: ${err//$'\n'/ }"
err=$({ ip -n "$ns" link add nbprobe0 type veth peer name nbprobe1 &&
        ip -n "$ns" link add nbprobebr type bridge &&
        ip -n "$ns" link set nbprobe0 up &&
        ip netns exec "$ns" tc qdisc add dev nbprobe0 root tbf rate 100mbit burst 256kb latency 50ms
      } 2>&1)
rc=$?
ip netns del "$ns" 2>/dev/null || echo "netbench_able: could not delete namespace $ns" >&2
(( rc == 0 )) || skip "veth, bridge or tc tbf failed: ${err//$'\n'/ }"
(( $# == 0 )) || exec "$@"
