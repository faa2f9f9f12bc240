#!/usr/bin/env python3
"""Writes tests/fuzz/regression/: hostile design files (issue 14), each of which every CERAR
reader must refuse with one line, quickly and in bounded memory. The fuzzer replays them
(scripts/fuzz) and cerar_format_tests loads each (RegressionCorpus.EveryFileIsRejectedWithOneLine).

    /usr/bin/python3 tests/fuzz/make_regression_corpus.py     # rewrites the folder

Built from matrices/eps_N2_c2.json by text edits, so no Python JSON limit (nesting) applies.
"""
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fuzz" / "regression"
GOOD = (ROOT / "matrices" / "eps_N2_c2.json").read_text()


def top(member):
    """The good file with `member` ("\\"name\\": value") first in the top-level object."""
    return GOOD.replace("{", "{" + member + ",", 1)


def parameters(value):
    start = GOOD.index('"parameters":') + len('"parameters":')
    end = GOOD.index("}", start) + 1
    return GOOD[:start] + value + GOOD[end:]


def first_row(row):
    start = GOOD.index("[", GOOD.index("[", GOOD.index("[", GOOD.index('"encoders"')) + 1) + 1)
    return GOOD[:start] + row + GOOD[GOOD.index("]", start) + 1:]


def nested(depth):
    return "[" * depth + "]" * depth


CASES = {
    # Defect 1: nesting that overflowed the stack of three recursive walks.
    "deep_parameters.json": parameters('{"x":' + nested(30000) + "}"),
    "deep_top_level.json": nested(30000),
    "deep_unknown_member.json": top('"junk":' + nested(30000)),
    "deep_in_row.json": first_row("[" + nested(30000) + ",0.0]"),
    "unclosed_brackets.json": "[" * 60000,
    "deep_objects.json": parameters('{"a":' * 20000 + "1" + "}" * 20000 + "}"),
    # Defect 9: duplicate members (last wins would load another design than first wins).
    "duplicate_integrity.json": top('"integrity": "sha256:' + "0" * 64 + '"'),
    "duplicate_encoders.json": top('"encoders": [[[9.0]],[[9.0]]]'),
    "duplicate_parameter.json": parameters('{"eps":1.0,"eps":0.001}'),
    "duplicate_N.json": top('"N": 3'),
    # Defect 10: terminal escapes and line breaks in names and strings.
    "escape_member_name.json": top('"\\u001b]0;pwned\\u0007\\n\\u009b2J\\u202e": 1'),
    "escape_integrity.json": GOOD[:GOOD.index('"sha256:')] + '"\\u001b[2J\\r\\n"\n}\n',
    "escape_construction.json": GOOD.replace('"construction":"eps"',
                                             '"construction":"\\u001b[31mred\\u001b[0m"'),
    # Defect 5 and size bounds: garbage, NUL bytes, oversized structure.
    "nul_bytes.json": "\0" * 4096,
    "trailing_nul.json": GOOD + "\0" + '{"junk": 1}',
    "many_members.json": top(",".join('"m%d":0' % k for k in range(200))),
    "long_format_string.json": GOOD.replace('"cerar-design"', '"' + "f" * 5000 + '"'),
    "long_row.json": first_row("[" + ",".join(["0.5"] * 5000) + "]"),
    "huge_N.json": GOOD.replace('"N": 2', '"N": 1000000000', 1),
    "huge_N_unsigned.json": GOOD.replace('"N": 2', '"N": 18446744073709551615', 1),
    "overflowing_number.json": first_row("[1e400]"),
    "nan_token.json": first_row("[NaN]"),
    "invalid_utf8.json": GOOD.replace('"construction":"eps"', '"construction":"\udcff\udcfe"'),
    "bom_and_garbage.json": "\ufeff" + GOOD + "garbage",
}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.iterdir():
        old.unlink()
    for name, text in sorted(CASES.items()):
        data = text.encode("utf-8", "surrogateescape")
        (OUT / name).write_bytes(data)
        print("%-28s %8d bytes" % (name, len(data)))


if __name__ == "__main__":
    main()
