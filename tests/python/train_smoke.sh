#!/usr/bin/env bash
# scripts/train's program end to end on a few steps (4 ranks, MPI transport, the MLP task: the
# transformer's steps cost too much for CI; `scripts/train --quick` runs both): every method
# runs, runs.csv has the documented columns, summary.json, table.md and curves.png are written.
#   train_smoke.sh PYTHON SOURCE OUT MPIEXEC...
set -euo pipefail
python=$1 source=$2 out=$3
shift 3
rm -rf "$out"
# Run directly, without MASTER_PORT, while another program holds the port train.py once took by
# default (29517): it must pick a free one (as scripts/train does), not collide.
unset MASTER_PORT CERAR_PORT_OFFSET
"$python" -c 'import socket, sys, time
s = socket.socket()
try:
    s.bind(("", 29517)); s.listen()
except OSError:
    pass  # already taken by someone else: as good for this test
print("held", flush=True)
time.sleep(600)' >"$out.holder" &
holder=$!
trap 'kill "$holder" 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q held "$out.holder" 2>/dev/null && break; sleep 0.1; done
"$@" -np 4 "$python" "$source/python/train/train.py" --out "$out" --transport mpi \
  --tasks mlp --methods exact,cerar,control --c 2 --seeds 1 --steps 6 --eval-every 3 \
  | tee "$out.log"
kill "$holder" 2>/dev/null || true
port=$(sed -n 's/^cerar train: torch.distributed rendezvous at 127.0.0.1:\([0-9]*\)$/\1/p' "$out.log")
[[ -n $port && $port != 29517 ]] \
  || { echo "rendezvous port '$port': expected a free one, not the held 29517" >&2; exit 1; }
rm -f "$out.holder" "$out.log"
"$python" "$source/python/train/plot.py" "$out" >/dev/null
head -1 "$out/runs.csv" | grep -q '^task,optimizer,method,c,seed,step,val_loss,seconds,bytes_sent,max_replica_diff,' \
  || { echo "runs.csv header: $(head -1 "$out/runs.csv")" >&2; exit 1; }
rows=$(($(wc -l < "$out/runs.csv") - 1))
[[ $rows -eq 6 ]] || { echo "runs.csv has $rows rows, expected 3 methods x 2 evaluations" >&2; exit 1; }
[[ -s $out/curves.png && -s $out/table.md && -s $out/summary.json ]] \
  || { echo "missing outputs in $out" >&2; exit 1; }
# The coded path with float64 state (the hook's accumulation option) at c = 3N, where the
# packets' rounding is fed back too, on the catalogue's design for that arithmetic.
rm -rf "$out.state64"
"$@" -np 4 "$python" "$source/python/train/train.py" --out "$out.state64" --transport mpi \
  --tasks mlp --methods cerar --c 3 --seeds 1 --steps 4 --eval-every 2 --accumulation f64-state
"$python" "$source/python/train/plot.py" "$out.state64" >/dev/null
rows64=$(($(wc -l < "$out.state64/runs.csv") - 1))
[[ $rows64 -eq 2 ]] || { echo "f64-state runs.csv has $rows64 rows, expected 2" >&2; exit 1; }
grep -q -- '--accumulation f64-state' "$out.state64/table.md" \
  || { echo "table.md does not name the accumulation" >&2; exit 1; }
echo "train smoke: ok ($rows rows; f64-state $rows64 rows)"
