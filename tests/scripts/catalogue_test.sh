#!/usr/bin/env bash
# scripts/make-catalogue-optimized and scripts/make-catalogue on a copy of the tree, with a fake
# cerar CLI (canned designs: the catalogue's own files). make-catalogue-optimized: a cell whose
# optimisation fails this run loses its earlier opt file and gets a "failed this run" row, so the
# files, OPTIMIZED.md's links and README's mention agree. make-catalogue: an eps file outside its
# grid (made by hand) is left alone.
#   catalogue_test.sh SOURCE
set -uo pipefail
source "$(dirname "$0")/../cli/harness.sh"
src=$1

tree=$work/tree
mkdir -p "$tree/matrices"
cp -r "$src/scripts" "$tree/"
cp "$src"/matrices/{README.md,OPTIMIZED.md,OPTIMIZED-STATE64.md,opt_N*_c*.json,opt-state64_N*_c*.json} "$tree/matrices/"
for N in 3 4 8 16; do
  for c in $((2 * N)) $((3 * N)); do cp "$src/matrices/eps_N${N}_c${c}.json" "$tree/matrices/"; done
done
# The fake CLI: design copies the catalogue's file of that (N, c) (or fails for $FAIL_CELL);
# validate passes; simulate measures 1e-5 for opt files, 1e-3 for the rest.
cat >"$work/cerar" <<SH
#!/bin/sh
cmd=\$1; shift
case \$cmd in
  design)
    while [ \$# -gt 0 ]; do
      case \$1 in -N) N=\$2 ;; -c) C=\$2 ;; -o) O=\$2 ;; --construction) K=\$2 ;; esac; shift
    done
    if [ "\$K" = eps ]; then  # a cell the catalogue lacks (c = 4N): the c = 3N file's content
      f=$src/matrices/eps_N\${N}_c\${C}.json
      [ -f "\$f" ] || f=$src/matrices/eps_N\${N}_c\$((3 * N)).json
      cp "\$f" "\$O"; exit 0
    fi
    [ "\$N \$C" = "\$FAIL_CELL" ] && { echo "cerar: the optimiser found nothing" >&2; exit 1; }
    cp "$src/matrices/opt_N\${N}_c\${C}.json" "\$O" ;;
  validate) exit 0 ;;
  simulate) case \$1 in */opt_*) echo '{"measured_err_rms": 1e-5}' ;; *) echo '{"measured_err_rms": 1e-3}' ;; esac ;;
esac
SH
chmod +x "$work/cerar"

m=$tree/matrices
FAIL_CELL="4 8" CERAR_CLI=$work/cerar bash "$tree/scripts/make-catalogue-optimized" >"$work/out" 2>&1 ||
  bad "make-catalogue-optimized: exit $?: $(tail -3 "$work/out")"
files=$(cd "$m" && ls opt_N*_c*.json | sort)
listed=$(grep -o '\[opt_N[0-9]*_c[0-9]*\.json\]' "$m/OPTIMIZED.md" | tr -d '[]' | sort)
mentioned=$(grep '^Optimised designs' "$m/README.md" | grep -o '\[opt_N[0-9]*_c[0-9]*\.json\]' | tr -d '[]' | sort)
[[ ! -e $m/opt_N4_c8.json ]] && ok "failed cell: its earlier file removed" || bad "failed cell: opt_N4_c8.json kept"
grep -q '^| 4 | 8 |.*failed this run (cerar: the optimiser found nothing); no file |$' "$m/OPTIMIZED.md" \
  && ok "failed cell: OPTIMIZED.md says so" || bad "failed cell: no row in OPTIMIZED.md"
[[ $(grep -c '^| 4 | 8 |' "$m/OPTIMIZED.md") -eq 1 && $(grep '^| 4 | 8 |' "$m/OPTIMIZED.md" | tr -cd '|' | wc -c) -eq 8 ]] \
  && ok "failed cell: one row, 7 columns" || bad "failed cell row: $(grep '^| 4 | 8 |' "$m/OPTIMIZED.md")"
[[ -n $files && $files == "$listed" && $files == "$mentioned" ]] \
  && ok "files, OPTIMIZED.md and README agree: $(echo $files)" \
  || bad "disagree: files '$(echo $files)', OPTIMIZED.md '$(echo $listed)', README '$(echo $mentioned)'"
cmp -s <(grep -v '^Optimised designs' "$src/matrices/README.md") <(grep -v '^Optimised designs' "$m/README.md") \
  && ok "README otherwise unchanged" || bad "README changed elsewhere: $(diff <(grep -v '^Optimised designs' "$src/matrices/README.md") <(grep -v '^Optimised designs' "$m/README.md") | head -5)"
ls "$m"/*.tmp >/dev/null 2>&1 && bad "temporary files left: $(ls "$m"/*.tmp)" || ok "no temporary file left"

# make-catalogue with nothing useful (CERAR_USEFUL_ERROR=1e-300: every grid design dropped): the
# grid's eps files go, a hand-made eps_N6_c12.json (N = 6: outside the grid) stays.
cp "$src/matrices/eps_N3_c6.json" "$m/eps_N6_c12.json"
CERAR_USEFUL_ERROR=1e-300 CERAR_CLI=$work/cerar bash "$tree/scripts/make-catalogue" >"$work/out" 2>&1 ||
  bad "make-catalogue: exit $?: $(tail -3 "$work/out")"
[[ -f $m/eps_N6_c12.json ]] && ok "make-catalogue: a file outside its grid left alone" \
  || bad "make-catalogue removed eps_N6_c12.json"
[[ ! -e $m/eps_N4_c8.json && ! -e $m/eps_N16_c48.json ]] && ok "make-catalogue: dropped grid designs removed" \
  || bad "make-catalogue: dropped grid designs kept"

finish
