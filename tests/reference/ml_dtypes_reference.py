#!/usr/bin/env python3
"""mixprec against ml_dtypes (and numpy's float16), bit for bit.

Runs tests/reference/ml_dtypes_tables.cpp's program, which writes mixprec's decoding of every
code and its nearest-even, non-saturating encoding (what ml_dtypes' astype does) of a set of float
inputs (every <stride>-th float bit pattern plus every value, midpoint and overflow threshold of
each format, one float either side, both signs); computes the same with ml_dtypes; compares.

A disagreement is allowed only where a named rule of FORMATS explains it (docs/decisions.md,
"ml_dtypes"); the script prints, per format, the counts of checks, of each allowed difference and
of unexplained mismatches, and exits 1 on any unexplained one.

    ml_dtypes_reference.py <ml_dtypes_tables program> [--stride N] [--keep DIR]

To compare another type, add a row to FORMATS: the mixprec name (as format_name<> spells it;
ml_dtypes_tables.cpp's with_table_type and code_bits must know it, as they know every minifloat),
the numpy/ml_dtypes scalar type, the code width in bits, and the names of the allowed differences
(functions of ALLOWED).  Codes are compared masked to their width.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np


class Row:
    def __init__(self, name, dtype, bits, allowed=()):
        self.name, self.dtype, self.bits, self.allowed = name, dtype, bits, tuple(allowed)


def code_dtype(row):
    return np.uint16 if row.bits > 8 else np.uint8


# Allowed differences.  Each gets (row, float inputs, mixprec codes, ml_dtypes codes) of the
# disagreeing encodings and returns which of them it explains.
def nan_payload(row, x, mine, theirs):
    # Both NaN with the input's sign: numpy's float16 keeps the top payload bits of a float NaN
    # (a signalling NaN stays one); mixprec gives the canonical quiet NaN (decisions.md §1).
    table = np.isnan(np.arange(1 << row.bits, dtype=np.uint32).astype(code_dtype(row)).view(row.dtype))
    sign = 1 << (row.bits - 1)
    return table[mine] & table[theirs] & ((mine & sign) == (theirs & sign))


def nan_into_finite_format(row, x, mine, theirs):
    # fp6 / fp4 have no NaN: mixprec gives +max (as CUDA's cvt.rn.satfinite does, decisions.md
    # §1); ml_dtypes gives the code of -0.
    return np.isnan(x)


def e8m0_float_subnormal_inputs(row, x, mine, theirs):
    # Float subnormals strictly between 2^-127 and 1.5 × 2^-127: nearer to 2^-127 (code 0x00),
    # which mixprec gives; ml_dtypes 0.6.0 gives 2^-126 (0x01).  Every other input agrees, the
    # tie 1.5 × 2^-127 included.
    lo = np.float32(2.0 ** -127)
    return (x > lo) & (x < np.float32(1.5) * lo) & (mine == 0x00) & (theirs == 0x01)


ALLOWED = {f.__name__: f for f in (nan_payload, nan_into_finite_format, e8m0_float_subnormal_inputs)}

FORMATS = [
    Row("float16", np.float16, 16, ["nan_payload"]),
    Row("bfloat16", ml_dtypes.bfloat16, 16),
    Row("float8_e4m3fn", ml_dtypes.float8_e4m3fn, 8),
    Row("float8_e5m2", ml_dtypes.float8_e5m2, 8),
    Row("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, 8),
    Row("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, 8),
    Row("float8_e4m3", ml_dtypes.float8_e4m3, 8),
    Row("float8_e3m4", ml_dtypes.float8_e3m4, 8),
    Row("float8_e4m3b11fnuz", ml_dtypes.float8_e4m3b11fnuz, 8),
    Row("float6_e3m2fn", ml_dtypes.float6_e3m2fn, 6, ["nan_into_finite_format"]),
    Row("float6_e2m3fn", ml_dtypes.float6_e2m3fn, 6, ["nan_into_finite_format"]),
    Row("float4_e2m1fn", ml_dtypes.float4_e2m1fn, 4, ["nan_into_finite_format"]),
    Row("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, 8, ["e8m0_float_subnormal_inputs"]),
    # The narrow integers: encode is intn's constructor, ml_dtypes' astype rule (intn.hpp); arith
    # compares + - * on every pair of codes (compare_intn_arithmetic).
    Row("int4", ml_dtypes.int4, 4),
    Row("uint4", ml_dtypes.uint4, 4),
    Row("int2", ml_dtypes.int2, 2),
    Row("uint2", ml_dtypes.uint2, 2),
    Row("int1", ml_dtypes.int1, 1),
    Row("uint1", ml_dtypes.uint1, 1),
]
INTN = ("int4", "uint4", "int2", "uint2", "int1", "uint1")


def compare_intn_arithmetic(row, directory):
    """+ - * of every pair of codes against ml_dtypes' ufuncs; returns the mismatches."""
    mask = (1 << row.bits) - 1
    codes = np.arange(1 << row.bits, dtype=np.uint8)
    a = np.repeat(codes, codes.size).view(row.dtype)
    b = np.tile(codes, codes.size).view(row.dtype)
    theirs = np.stack([a + b, a - b, a * b], axis=1).view(np.uint8).reshape(-1) & mask
    mine = np.fromfile(os.path.join(directory, row.name + ".arith.u8"), dtype=np.uint8)
    bad = int(np.count_nonzero(mine != theirs))
    print("%-18s %5d pairs of codes: + - * %s" % (row.name, a.size, "agree" if bad == 0 else "%d DIFFER" % bad))
    return bad


def compare(row, directory, inputs):
    """Prints one line for the format; returns the number of unexplained mismatches."""
    mask = (1 << row.bits) - 1
    codes = np.arange(1 << row.bits, dtype=np.uint32).astype(code_dtype(row))
    theirs_decode = codes.view(row.dtype).astype(np.float32).view(np.uint32)
    mine_decode = np.fromfile(os.path.join(directory, row.name + ".decode.f32"), dtype=np.uint32)
    decode_differs = mine_decode != theirs_decode
    both_nan = np.isnan(mine_decode.view(np.float32)) & np.isnan(theirs_decode.view(np.float32))
    decode_nan_only = int(np.count_nonzero(decode_differs & both_nan))
    unexplained = int(np.count_nonzero(decode_differs & ~both_nan))

    theirs = inputs.astype(row.dtype).view(code_dtype(row)).astype(np.uint32) & mask
    mine = np.fromfile(os.path.join(directory, row.name + ".encode.u32"), dtype=np.uint32)
    differs = np.nonzero(mine != theirs)[0]
    explained = np.zeros(differs.size, dtype=bool)
    counts = []
    for rule in row.allowed:
        hit = ALLOWED[rule](row, inputs[differs], mine[differs], theirs[differs]) & ~explained
        explained |= hit
        counts.append("%s %d" % (rule, int(np.count_nonzero(hit))))
    bad = differs[~explained]
    unexplained += bad.size
    # Decoding: a signalling NaN widens with its quiet bit set in mixprec (IEEE 754-2019 §6.2.3),
    # unchanged in ml_dtypes; so NaN codes are compared as NaN-or-not only.
    print("%-18s %5d codes decoded (%d NaN bits differ), %d inputs encoded: %d differ, allowed: %s; unexplained %d"
          % (row.name, codes.size, decode_nan_only, inputs.size, differs.size, ", ".join(counts) or "none",
             unexplained))
    for i in bad[:5]:
        print("    x = %r (0x%08x): mixprec 0x%x, ml_dtypes 0x%x"
              % (float(inputs[i]), int(inputs.view(np.uint32)[i]), int(mine[i]), int(theirs[i])))
    return unexplained


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program", help="the ml_dtypes_tables program")
    parser.add_argument("--stride", type=int, default=4099, help="float bit patterns stride (default 4099)")
    parser.add_argument("--keep", help="write the tables here and keep them")
    args = parser.parse_args()
    print("ml_dtypes %s, numpy %s" % (ml_dtypes.__version__, np.__version__))
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.keep or scratch
        os.makedirs(directory, exist_ok=True)
        subprocess.run([args.program, directory, str(args.stride)] + [r.name for r in FORMATS], check=True)
        inputs = np.fromfile(os.path.join(directory, "inputs.f32"), dtype=np.float32)
        with np.errstate(all="ignore"):
            unexplained = sum(compare(row, directory, inputs) for row in FORMATS)
            unexplained += sum(compare_intn_arithmetic(row, directory) for row in FORMATS if row.name in INTN)
    print("ml_dtypes_reference: %s" % ("all results match or differ as documented" if unexplained == 0
                                        else "%d UNEXPLAINED MISMATCHES" % unexplained))
    return 0 if unexplained == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
