#!/usr/bin/env python3
"""Runs a design's protocol in float32 with numpy and compares the error with the error model.

    /usr/bin/python3 scripts/ring-rounding-sim.py [--count M] [--seed K] [--check] DESIGN.json ...

Three runs per design on the same random inputs (N x c components of M elements, standard
normal, rounded to float32), all sending the same L float32 packets of M elements:

  plain     every operation in float32, in the order of docs/error-model.md: encode as a
            left-to-right dot product, x = (e(t) + y(t-1)) - e(t-N), o = y - e, decode left to
            right (what `cerar simulate --dtype f32` runs, written independently).
  all       encode, ring step and decode in float64 from float32 values, each result rounded
            once to float32 (scripts/error-budget.py's variant "all").
  acc64     all, with the observation rounded to float32 when stored: the runtime's
            Accumulation::kFloat64 (`cerar simulate --accumulate f64`, written independently).
  lap+all   as all, but the ring step in float32 with d = (e(t) - e(t-N)) + r(t-N) and
            x = y(t-1) + d by TwoSum, which yields the rounding error r(t) of x exactly; the
            rank adds r(t) back a lap later and to its own observation, so ring rounding errors
            live N - 1 hops instead of for ever (docs/optimizer.md §8b).

Each prints the measured relative error max_j |S_hat_j - S| / |S| and the error model's
prediction for that variant (scripts/error-budget.py) twice: with rows N apart correlated (the
toolkit's model) and with the observation rows' errors independent (the model before
2026-12-06). --check exits 1 unless every measured/predicted ratio of the correlated model lies
in [0.95, 1.05]: tight enough that the independent-rows model fails it (0.87-0.94 on eps_N4_c12
and optimised c = 3N designs), while the sampling noise of 2^16-element runs is below 1 %. It also
exits 1 unless the script's model of plain and acc64 equals the file's predicted_error float32
and float32+acc64 (where recorded) to 1e-6. Exit 2 on a bad file.
"""
import argparse
import importlib.util
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import read_design  # noqa: E402

_spec = importlib.util.spec_from_file_location("error_budget", os.path.join(HERE, "error-budget.py"))
error_budget = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(error_budget)

F32, F64 = np.float32, np.float64


def simulate(E, D, N, c, count, seed, wide, lap, round_obs=False):
    """Measured max_j |S_hat_j - S| / |S| of one float32 run: plain (not wide), all (wide, not
    lap), acc64 (wide, round_obs) or lap+all (wide and lap)."""
    L = c + N - 2
    g = np.random.default_rng(seed).standard_normal((N, c, count)).astype(F32)
    S = g.astype(F64).sum(axis=0)
    e = np.zeros((N, L, count), F32)
    for i in range(N):
        if wide:
            e[i] = (E[i] @ g[i].astype(F64)).astype(F32)
            continue
        E32 = E[i].astype(F32)
        for t in range(L):
            acc = E32[t, 0] * g[i, 0]
            for k in range(1, c):
                acc = acc + E32[t, k] * g[i, k]
            e[i, t] = acc
    zero = np.zeros(count, F32)

    def enc(i, t):
        return e[i % N, t] if 0 <= t < L else zero

    y = np.zeros((N, count), F32)  # y_i(t - 1)
    r = np.zeros((N, L, count), F32)  # lap: rounding error of x_i(t)
    obs = np.zeros((N, c, count), F64 if wide else F32)
    for t in range(L):
        x = np.empty((N, count), F32)
        for i in range(N):
            if not wide:
                x[i] = (enc(i, t) + y[i]) - enc(i, t - N)
                continue
            if not lap:  # the step in float64, rounded once
                x[i] = (enc(i, t).astype(F64) + y[i] - enc(i, t - N)).astype(F32)
                continue
            d = enc(i, t) - enc(i, t - N)
            if t >= N:
                d = d + r[i, t - N]  # x_i(t - N) fell short of its exact value by r
            s = y[i] + d  # TwoSum (Knuth): s + r == y + d exactly
            b = s - y[i]
            r[i, t] = (y[i] - (s - b)) + (d - b)
            x[i] = s
        y = np.roll(x, 1, axis=0)  # y_i(t) = x_{i-1}(t)
        row = t - (N - 2)
        if 0 <= row < c:
            own_t = t - N + 1
            for j in range(N):
                if wide:
                    own = enc(j, own_t).astype(F64) - (r[j, own_t] if lap and own_t >= 0 else 0.0)
                    obs[j, row] = y[j].astype(F64) - own
                    if round_obs:  # stored as float32, as the runtime stores it
                        obs[j, row] = obs[j, row].astype(F32)
                else:
                    obs[j, row] = y[j] - enc(j, own_t)
    worst = 0.0
    for j in range(N):
        if wide:
            out = (g[j].astype(F64) + D[j] @ obs[j]).astype(F32)
        else:
            D32 = D[j].astype(F32)
            out = np.empty((c, count), F32)
            for k in range(c):
                acc = D32[k, 0] * obs[j, 0]
                for q in range(1, c):
                    acc = acc + D32[k, q] * obs[j, q]
                out[k] = g[j, k] + acc
        worst = max(worst, float(np.linalg.norm(out.astype(F64) - S) / np.linalg.norm(S)))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("designs", nargs="+")
    ap.add_argument("--count", type=int, default=65536, help="elements per component (default 65536)")
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.count < 1:
        print(f"ring-rounding-sim: --count {a.count}, expected >= 1", file=sys.stderr)
        sys.exit(2)
    q = error_budget.RHO * error_budget.UNIT_ROUNDOFF["float32"] ** 2
    failed = False
    for path in a.designs:
        try:
            doc = read_design.load(path)
        except read_design.DesignFileError as e:
            print(f"ring-rounding-sim: {e}", file=sys.stderr)
            sys.exit(2)
        N, c = doc["N"], doc["c"]
        E = [np.array(m) for m in doc["encoders"]]
        D = [np.array(m) for m in doc["decoders"]]
        err = (doc.get("figures") or {}).get("err_rms_per_rank")
        if not err:  # missing, or [] ("not computed", which the format allows)
            print(f"ring-rounding-sim: {path} has no figures.err_rms_per_rank", file=sys.stderr)
            sys.exit(2)
        recorded = (doc.get("figures") or {}).get("predicted_error") or {}
        for label, wide, lap, kw in (
                ("plain", False, False, {}),
                ("all", True, False, {"step64": True, "encode64": True, "decode64": True}),
                ("acc64", True, False, error_budget.ACC64),
                ("lap+all", True, True, {"lap": True, "encode64": True, "decode64": True})):
            arithmetic = {"plain": "float32", "acc64": "float32+acc64"}.get(label)
            if arithmetic in recorded:
                mine = error_budget.predicted(  # the toolkit's model: rows N apart correlated
                    err, error_budget.terms(E, D, N, c, q, correlated=True, **kw), N, c)
                if abs(mine - recorded[arithmetic]) > 1e-6 * recorded[arithmetic]:
                    print(f"{path}: the script's {label} model {mine:.9g} != the file's "
                          f"predicted_error {arithmetic} {recorded[arithmetic]:.9g}", flush=True)
                    failed = True
            measured = simulate(E, D, N, c, a.count, a.seed, wide, lap,
                                round_obs=kw.get("round_obs", False))
            cells = []
            for correlated in (True, False):
                p = error_budget.predicted(
                    err, error_budget.terms(E, D, N, c, q, correlated=correlated, **kw), N, c)
                cells.append(f"{p:.4g} ({measured / p:.3f})")
            ratio = measured / error_budget.predicted(
                err, error_budget.terms(E, D, N, c, q, correlated=True, **kw), N, c)
            ok = 0.95 <= ratio <= 1.05
            failed |= not ok
            print(f"{path}: N = {N}, c = {c}, {label:8s} measured {measured:.4g}  predicted "
                  f"(measured/predicted), rows N apart correlated {cells[0]}, rows independent "
                  f"{cells[1]}{'' if ok else '  OUTSIDE [0.95, 1.05]'}", flush=True)
    sys.exit(1 if a.check and failed else 0)


if __name__ == "__main__":
    main()
