#!/usr/bin/python3
"""Independent high-precision figures of a shift-invariant construction (PROTOCOL.md §4-§6).

    python3 scripts/reference-figures.py vandermonde 4 20 0.01 300,600
    python3 scripts/reference-figures.py eps 5 7 0.001 100

Prints, for each working precision (decimal digits), err_op, err_rms and kappa_dec of the exact
construction, computed with mpmath (Debian: python3-mpmath) straight from the definitions:
D_j = (sum W^T)(sum W W^T)^-1 by normal equations, err_op from the eigenvalues of
sum Delta Delta^T, kappa_dec from those of D^T D. It shares no code with the toolkit; where two
precisions print the same digits, those digits are right. tests/design/precision_test.cc quotes
its values. eps is taken as the float64 the toolkit receives.
"""
import sys

import mpmath as mp


def fourier(N, p, tau):
    """f_p(tau) of PROTOCOL.md §6: 1, then cos/sin pairs of period N."""
    if p == 0:
        return mp.mpf(1)
    m = (p + 1) // 2
    angle = 2 * mp.pi * ((m * tau) % N) / N
    return mp.cos(angle) if p % 2 == 1 else mp.sin(angle)


def base_sequence(construction, N, c, eps):
    L = c + N - 2
    C = {}
    if construction == "vandermonde":
        alphas = [1 + eps * mp.cos((2 * k + 1) * mp.pi / (2 * c)) for k in range(c)]
        for tau in range(-(N - 1), L):
            C[tau] = [a ** tau for a in alphas]
    elif construction == "eps":
        r = -(-c // N) - 1
        last = c - r * N
        for tau in range(-(N - 1), L):
            row = []
            for k in range(c):
                q, p = divmod(k, N)
                if q == r and last < N and last % 2 == 0:
                    p += 1  # a partial cluster of even size keeps cos/sin pairs together
                row.append(mp.exp(eps * (q - mp.mpf(r) / 2) * tau) * fourier(N, p, tau))
            C[tau] = row
    else:
        raise SystemExit("construction must be eps or vandermonde")
    return C


def figures(construction, N, c, eps, dps):
    mp.mp.dps = dps
    eps = mp.mpf(eps)
    C = base_sequence(construction, N, c, eps)
    L = c + N - 2
    E = [mp.matrix([C[t - i] for t in range(L)]) for i in range(N)]
    err_op = err_rms = kappa_dec = 0
    for j in range(N):
        windows = []
        for i in range(N):
            if i == j:
                continue
            s = (j - 1 - i) % N
            windows.append(mp.matrix([[E[i][N - 2 + r - s, k] for k in range(c)]
                                      for r in range(c)]))
        sum_wt, gram = mp.zeros(c, c), mp.zeros(c, c)
        for W in windows:
            sum_wt += W.T
            gram += W * W.T
        D = sum_wt * mp.inverse(gram)
        P, frob2 = mp.zeros(c, c), 0
        for W in windows:
            delta = D * W - mp.eye(c)
            P += delta * delta.T
            frob2 += sum(delta[a, b] ** 2 for a in range(c) for b in range(c))
        err_op = max(err_op, mp.sqrt(max(mp.eigsy(P, eigvals_only=True))))
        err_rms = max(err_rms, mp.sqrt(frob2 / (N * c)))
        sv2 = mp.eigsy(D.T * D, eigvals_only=True)
        kappa_dec = max(kappa_dec, mp.sqrt(max(sv2) / min(sv2)))
    return err_op, err_rms, kappa_dec


def fail(message):
    """One line on stderr and exit 2, as the toolkit's commands do."""
    print("reference-figures: " + message, file=sys.stderr)
    raise SystemExit(2)


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    if len(sys.argv) != 6:
        fail("usage: reference-figures.py eps|vandermonde N c eps DIGITS[,DIGITS...] (--help)")
    construction = sys.argv[1]
    if construction not in ("eps", "vandermonde"):
        fail("construction %r, expected eps or vandermonde" % construction)
    try:
        N, c, eps = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
        digits = [int(x) for x in sys.argv[5].split(",")]
    except ValueError as e:
        fail("%s (N, c and the digits are integers, eps a number)" % e)
    if N < 2 or c < 1:
        fail("N = %d, c = %d, expected N >= 2 and c >= 1" % (N, c))
    if not (eps >= 0 and eps < float("inf")):
        fail("eps = %r, expected a finite value >= 0" % eps)
    if any(d < 15 for d in digits):
        fail("digits %s, expected each >= 15" % sys.argv[5])
    print("digits  err_op  err_rms  kappa_dec  (%s N = %d, c = %d, eps = %r)" % (construction, N, c, eps))
    for dps in digits:
        print(dps, " ".join(mp.nstr(x, 20) for x in figures(construction, N, c, eps, dps)),
              flush=True)


if __name__ == "__main__":
    main()
