#!/usr/bin/env python3
"""Where a design's predicted rounding error comes from, and what wider arithmetic would save.

    /usr/bin/python3 scripts/error-budget.py [--arithmetic float32] DESIGN.json ...

For each design: the error model of docs/error-model.md evaluated term by term (an independent
numpy transcription of design/src/design/error_model.cc; the script fails if its total differs
from the file's figures.predicted_error by more than 1e-6 relative), the share of the rounding
variance of the worst rank that each step contributes, and the predicted error if one step ran
in float64 and rounded its result once:

  step64    the ring step x = (e(t) + y(t-1)) - e(t-N) with one rounding instead of two
  encode64  the encode as a float64 dot product, rounded once (no entry, product, partial-sum
            roundings)
  decode64  observation and decode in float64 from the float32 packets: o = y - e and
            g + sum_r D[k,r] o[r] rounded once
  all       the three together (one rounding per stored packet and per result)
  acc64     all, but the observation o = y - e rounded to float32 when stored: what the runtime's
            Accumulation::kFloat64 does (the arithmetic "float32+acc64" of the toolkit's model)
  lap       the ring with lap-limited rounding: each hop computes d = (e(t) - e(t-N)) + r(t-N)
            and x = y(t-1) + d with TwoSum, which returns the rounding error r(t) of x exactly
            (x + r(t) = y(t-1) + d); the rank adds r(t) back a lap later (and to its own
            observation), so a hop's rounding error lives N - 1 hops instead of riding the
            diagonal for ever. What stays: one rounding per hop of the last N - 1 hops, and
            the rounding of d (size
            |E_i[t] - E_i[t-N]|, small for nearly periodic designs), which is not compensated.
            Same traffic; per element 6 more flops and one more stored vector per round.
  lap+all   lap with encode64 and decode64
  feedback  acc64, and each rank adds the rounding of its packets back a lap later, summed over
            the laps (Accumulation::kFloat64Feedback, "float32+acc64+feedback"; only where
            c > 2N): the hop s places upstream of an observation counts 1 + floor((s + 1) / N)
            times, so a rounding grows linearly over the laps (docs/error-model.md, "Rounding
            feedback"). N more stored vectors; same traffic.
  state64   feedback, with the encoded vectors, observations and feedback sums kept in float64
            (Accumulation::kFloat64State, "float32+state64"): no encode or observation
            rounding; every packet is rounded, x(0) = fl(e(0)) included; the decoded result is
            rounded once (docs/error-model.md, "Float64 state"). Twice the stored bytes of
            feedback; same traffic.

Each variant is evaluated twice: with the ring's rows N apart correlated (the toolkit's model:
y_j(t) and y_j(t + N) lie on one diagonal, so the later one carries every ring rounding error of
the earlier; with lap, only the uncompensated part) and with the observation rows' errors
independent (the model before 2026-12-06, which overestimates by 6-14 % where D's rows N apart
have opposite signs). scripts/ring-rounding-sim.py measures which of the two a float32 run sees.
The check against the file uses the correlated form; with --arithmetic float32+acc64 (or
float32+acc64+feedback, float32+state64) it checks the acc64 (feedback, state64) variant against
that figure of the file.

"re-tuned" scales the predicted error by the design family's optimum law (docs/optimizer.md
§8b): error ~ sqrt(a b) for c <= 2N (r* = 1), ~ (a^2 b)^(1/3) above, with b the rounding
variance's square root per unit kappa; it is an estimate of what a search in that arithmetic
would reach, not a searched design (none for exact designs, c <= N).
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import read_design  # noqa: E402

RHO = 0.18
UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float64": 2.0 ** -53, "bfloat16": 2.0 ** -8,
                 "float32+acc64": 2.0 ** -24, "float32+acc64+feedback": 2.0 ** -24,
                 "float32+state64": 2.0 ** -24}
ACC64 = {"step64": True, "encode64": True, "decode64": True, "round_obs": True}
FEEDBACK = dict(ACC64, feedback=True)
STATE64 = dict(FEEDBACK, round_obs=False, state64=True)


def hop_offset(i, j, n):
    return (j - 1 - i) % n


def terms(E, D, N, c, q, step64=False, encode64=False, decode64=False, lap=False,
          correlated=False, round_obs=False, feedback=False, state64=False):
    """Per rank j: dict of rounding-variance terms (summed over the c outputs, before / (N c))."""
    L = c + N - 2
    feedback = feedback and c > 2 * N  # FeedsBackRounding(N, c)
    rn2 = np.array([[float(E[i][t] @ E[i][t]) for t in range(L)] for i in range(N)])
    cum = [np.cumsum(E[i] ** 2, axis=1) for i in range(N)]  # partial ||E_i[t,:k]||^2
    if state64:  # e(t) kept in float64: never rounded
        venc = 0.0 * rn2
    elif encode64:
        venc = q * rn2
    else:
        venc = np.array([[q * (2.0 * rn2[i][t] + cum[i][t][1:].sum()) for t in range(L)]
                         for i in range(N)])

    def norm2(i, t):
        return rn2[i % N][t] if 0 <= t < L else 0.0

    R = np.zeros((N, L))
    hops = np.zeros((N, L))  # lap: the rounding variance each hop adds
    drift = np.zeros((N, L))  # lap: uncompensated roundings of d, riding the diagonal
    for t in range(L):
        for i in range(N):
            X = sum(norm2(i - s, t - s) for s in range(N))
            hop = 0.0
            if lap:
                if t >= 1:
                    hops[i][t] = q * X
                if t >= N:
                    d = E[i % N][t] - E[i % N][t - N]
                    drift[i][t] = q * float(d @ d)
                drift[i][t] += drift[(i - 1) % N][t - 1] if t >= 1 else 0.0
                R[i][t] = drift[i][t] + sum(hops[(i - s) % N][t - s]
                                            for s in range(N - 1) if t - s >= 0)
                continue
            if step64:
                if t >= 1 or state64:  # state64: x(0) = fl(e(0)) is a rounding too
                    hop = q * X
            else:
                if t >= 1:
                    hop += q * (X + norm2(i, t - N))
                if t >= N:
                    hop += q * X
            hops[i][t] = hop
            R[i][t] = (R[(i - 1) % N][t - 1] if t >= 1 else 0.0) + hop

    out = []
    for j in range(N):
        Vo = np.zeros(c)
        ring = np.zeros(c)
        shared = np.zeros(c)
        slope = np.zeros(c)  # feedback: Cov(row r, row r + mN) = shared + m slope
        enc = np.zeros(c)
        sub = np.zeros(c)
        for r in range(c):
            t = N - 2 + r
            for i in range(N):
                if i == j:
                    continue
                row = t - hop_offset(i, j, N)
                Vo[r] += rn2[i][row]
                enc[r] += venc[i][row]
            ring[r] = R[(j - 1) % N][t]
            if feedback:
                w = np.array([1 + (k + 1) // N for k in range(t + 1)], dtype=float)
                h = np.array([hops[(j - 1 - k) % N][t - k] for k in range(t + 1)])
                ring[r] = float(h @ (w * w))
                slope[r] = float(h @ w)
            shared[r] = drift[(j - 1) % N][t] if lap else ring[r]
            sub[r] = q * Vo[r] if (r >= 1 and (round_obs or not decode64)) else 0.0
        Dj = D[j]
        d2 = Dj ** 2
        if correlated:
            # y_j(t) and y_j(t + N) lie on one diagonal: the later holds every ring error of the
            # earlier (lap: only the uncompensated drift), so Cov = shared variance of the earlier.
            C = np.diag(ring)
            for r1 in range(c):
                for m, r2 in enumerate(range(r1 + N, c, N), start=1):
                    C[r1, r2] = C[r2, r1] = shared[r1] + m * slope[r1]
            t_ring = float(np.einsum("kr,rs,ks->", Dj, C, Dj))
        else:
            t_ring = float((d2 @ ring).sum())
        t_enc = float((d2 @ enc).sum())
        t_sub = float((d2 @ sub).sum())
        # Partial sums P_m = sum_{r<=m} D[k,r] W_ij[r,:], summed over the windows i != j.
        partial = np.zeros((c, c))
        for i in range(N):
            if i == j:
                continue
            s = hop_offset(i, j, N)
            W = E[i][N - 2 - s:N - 2 - s + c]
            P = np.cumsum(Dj[:, :, None] * W[None, :, :], axis=1)  # k, m, column
            partial += (P ** 2).sum(axis=2)
        if decode64:
            t_entries = 0.0
            t_partial = 0.0
            t_final = float(q * (1.0 + partial[:, c - 1]).sum())
        else:
            t_entries = float(q * 2.0 * (d2 @ Vo).sum())
            t_partial = float(q * partial[:, 1:].sum())
            t_final = float(q * (1.0 + partial[:, c - 1]).sum())
        out.append({"ring": t_ring, "encode": t_enc, "observation": t_sub,
                    "decode entries, products": t_entries, "decode partial sums": t_partial,
                    "final add": t_final})
    return out


def predicted(err_rms, per_rank_terms, N, c):
    return max(math.sqrt(e * e + sum(t.values()) / (N * c))
               for e, t in zip(err_rms, per_rank_terms))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("designs", nargs="+")
    ap.add_argument("--arithmetic", default="float32", choices=sorted(UNIT_ROUNDOFF))
    a = ap.parse_args()
    u = UNIT_ROUNDOFF[a.arithmetic]
    q = RHO * u * u
    for path in a.designs:
        try:
            doc = read_design.load(path)
        except read_design.DesignFileError as e:
            sys.exit(f"error-budget: {e}")
        N, c = doc["N"], doc["c"]
        E = [np.array(m) for m in doc["encoders"]]
        D = [np.array(m) for m in doc["decoders"]]
        fig = doc.get("figures") or {}
        err = fig.get("err_rms_per_rank")
        want = (fig.get("predicted_error") or {}).get(a.arithmetic)
        if not err or want is None:  # the format allows [] ("not computed")
            sys.exit(f"error-budget: {path} has no err_rms_per_rank / predicted_error.{a.arithmetic}"
                     " (cerar design writes both)")
        kw0 = {"float32+acc64": ACC64, "float32+acc64+feedback": FEEDBACK,
               "float32+state64": STATE64}.get(a.arithmetic, {})
        base = terms(E, D, N, c, q, correlated=True, **kw0)
        got = predicted(err, base, N, c)
        if abs(got - want) > 1e-6 * want:
            sys.exit(f"error-budget: {path}: model {got:.9g} != file's predicted_error "
                     f"{want:.9g} (relative {abs(got - want) / want:.2e} > 1e-6)")
        worst = max(range(N), key=lambda j: err[j] ** 2 + sum(base[j].values()))
        total = sum(base[worst].values())
        rounding = math.sqrt(total / (N * c))
        kappa = fig.get("kappa_dec", float("nan"))
        r_star = 1 if c <= 2 * N else 2
        print(f"{path}: N = {N}, c = {c}, {a.arithmetic}: predicted {got:.4g} (file {want:.4g}), "
              f"err_rms {err[worst]:.4g}, rounding {rounding:.4g}, kappa_dec {kappa:.4g}, "
              f"worst rank {worst}")
        print("  share of the rounding variance:")
        for name, v in base[worst].items():
            print(f"    {name:26s} {100 * v / total:5.1f} %")
        print("  variant (see the docstring)  rows N apart correlated: predicted  rounding (x)"
              "  re-tuned  | rows independent: predicted  rounding (x)  re-tuned")
        for label, kw in (("none", {}), ("step64", {"step64": True}),
                          ("encode64", {"encode64": True}), ("decode64", {"decode64": True}),
                          ("all", {"step64": True, "encode64": True, "decode64": True}),
                          ("acc64", ACC64),
                          ("feedback", FEEDBACK),
                          ("state64", STATE64),
                          ("lap", {"lap": True}),
                          ("lap+all", {"lap": True, "encode64": True, "decode64": True})):
            cells = []
            for correlated in (True, False):
                t = terms(E, D, N, c, q, correlated=correlated, **kw)
                p = predicted(err, t, N, c)
                rr = math.sqrt(sum(t[worst].values()) / (N * c)) / rounding
                # Exact designs (c <= N) have no approximation error to trade: nothing to re-tune.
                est = (f"{got * (rr ** 0.5 if r_star == 1 else rr ** (1.0 / 3.0)):.4g}"
                       if c > N else "-")
                cells.append(f"{p:10.4g}  {rr:6.3f}  {est:>10s}")
            print(f"    {label:10s} {cells[0]}  | {cells[1]}")


if __name__ == "__main__":
    main()
