#!/usr/bin/env python3
"""ctest: scripts/read_design.py verifies a C++-written design file, reproduces its fingerprint,
rejects damaged copies with exit status 2 and one line, and writes a file that C++ then loads.
Usage: check_reader.py READER DIR LOADER"""
import importlib.util
import json
import math
import os
import subprocess
import sys

reader_path, folder, loader = sys.argv[1], sys.argv[2], sys.argv[3]
spec = importlib.util.spec_from_file_location("read_design", reader_path)
reader = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reader)
failures = []


def expect(condition, what):
    if not condition:
        failures.append(what)


good = os.path.join(folder, "good.json")
doc = reader.load(good)
expect(doc["N"] == 5 and doc["c"] == 7 and doc["L"] == 10, "N, c, L of good.json")
expect(len(doc["encoders"]) == 5 and len(doc["encoders"][0]) == 10, "encoder shape")
expect(len(doc["decoders"][4]) == 7 and len(doc["decoders"][4][6]) == 7, "decoder shape")
e00 = doc["encoders"][0][0]
expect(e00[0] == 0.0 and math.copysign(1, e00[0]) == -1, "E[0][0][0] is -0.0")
expect(e00[1] == 5e-324, "E[0][0][1] is the smallest subnormal")
expect(e00[2] == 1.0 / 3, "E[0][0][2] is 1/3 bit-exactly")
expect(doc["figures"]["kappa_dec"] == "inf", "kappa_dec = inf is written as \"inf\"")
with open(good + ".fingerprint") as f:
    expected_fingerprint = f.read().strip()
expect("%016x" % reader.fingerprint(doc) == expected_fingerprint,
       "fingerprint %016x != C++ %s" % (reader.fingerprint(doc), expected_fingerprint))

run = subprocess.run([sys.executable, reader_path, good], capture_output=True, text=True)
expect(run.returncode == 0, "CLI on good.json exits 0, got %d: %s" % (run.returncode, run.stderr))
expect("N 5  c 7  L 10" in run.stdout, "CLI prints N, c, L: " + run.stdout)

for name, words in (("bad_truncated.json", "not valid JSON"), ("bad_not_json.json", "not valid JSON"),
                    ("bad_edited.json", "integrity value does not match"),
                    ("bad_version.json", "version 7 is not supported")):
    path = os.path.join(folder, name)
    run = subprocess.run([sys.executable, reader_path, path], capture_output=True, text=True)
    lines = run.stderr.strip().splitlines()
    expect(run.returncode == 2, "%s: exit status %d, expected 2" % (name, run.returncode))
    expect(len(lines) == 1 and words in lines[0] and path in lines[0],
           "%s: expected one line with %r, got %r" % (name, words, run.stderr))

# The other direction: a file written by Python (repr floats, its own key order) loads in C++.
made = {
    "format": "cerar-design", "version": 1, "N": 3, "c": 2, "L": 3,
    "provenance": {"construction": "custom", "shift_invariant": False,
                   # integers at and beyond 64 bits: C++ reads 2**70 as a float64, and so
                   # must the Python integrity value
                   "parameters": {"from": "check_reader.py", "eps": 1e-05, "big": 2**70,
                                  "top": 2**64 - 1, "bottom": -2**63}},
    "notes": ["written by Python"],
    "decoders": [[[float(i + 1), 0.1], [-0.0, 2.5e-310]] for i in range(3)],
}
made["encoders"] = [[[1.0 / (i + r + 1), -1e-300 * r] for r in range(3)] for i in range(3)]
made["integrity"] = reader.integrity_value(made)
made_path = os.path.join(folder, "python_made.json")
with open(made_path, "w", encoding="utf-8") as f:
    json.dump(made, f, indent=1)
run = subprocess.run([loader, "--load", made_path], capture_output=True, text=True)
expect(run.returncode == 0, "C++ loads the Python-written file: " + run.stderr)
expect(run.stdout.strip() == "%016x" % reader.fingerprint(made),
       "fingerprints agree: C++ %s, Python %016x" % (run.stdout.strip(), reader.fingerprint(made)))
made["decoders"][1][0][1] = 0.1000000000000001
with open(made_path, "w", encoding="utf-8") as f:
    json.dump(made, f)
run = subprocess.run([loader, "--load", made_path], capture_output=True, text=True)
expect(run.returncode == 2 and "integrity value does not match" in run.stderr,
       "C++ rejects the edited Python-written file: " + run.stderr)

# A leading UTF-8 byte order mark: both readers skip it.
with open(good, "rb") as f:
    raw = f.read()
bom = os.path.join(folder, "bom.json")
with open(bom, "wb") as f:
    f.write(b"\xef\xbb\xbf" + raw)
run = subprocess.run([sys.executable, reader_path, bom], capture_output=True, text=True)
expect(run.returncode == 0, "Python reads a file with a BOM: " + run.stderr)
run = subprocess.run([loader, "--load", bom], capture_output=True, text=True)
expect(run.returncode == 0, "C++ reads a file with a BOM: " + run.stderr)

# A member named twice: both readers refuse it (last-wins and first-wins would differ).
with open(good, encoding="utf-8") as f:
    text = f.read()
duplicated = os.path.join(folder, "duplicate_encoders.json")
with open(duplicated, "w", encoding="utf-8") as f:
    f.write(text.replace("{", '{"encoders": [], ', 1))
run = subprocess.run([sys.executable, reader_path, duplicated], capture_output=True, text=True)
expect(run.returncode == 2 and "duplicate member 'encoders'" in run.stderr,
       "Python refuses a duplicate member: " + run.stderr)
run = subprocess.run([loader, "--load", duplicated], capture_output=True, text=True)
expect(run.returncode == 2 and 'duplicate member "encoders"' in run.stderr,
       "C++ refuses a duplicate member: " + run.stderr)

for f in failures:
    print("FAIL:", f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
