# Generates format_cases.tsv with python3 3.11: python3 gen_format_cases.py format_cases.tsv
import sys, itertools
ints = [0, 1, -1, 7, 42, -42, 255, -255, 1000, 1234567, -1234567, 65, 9223372036854775807, -9223372036854775808, True, False]
floats = [0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 0.1, 2.675, 1234567.891, -1234567.891, 1e-5, 1e-4, 0.0001234,
          1e16, 1e15, 9999999999999998.0, 1e22, 1.5e300, 5e-324, 2.2250738585072014e-308, 123456789012345678.0,
          0.5, 2.5, 99.5, 9.9999, 0.999999, 100.0, 12345.6789, 1.7976931348623157e308,
          float('inf'), float('-inf'), float('nan'), 3.141592653589793, -0.0001, 0.00001234, 1e100, 6.02214076e23]
strs = ['', 'a', 'hello', 'héllo wörld', '日本語', "it's", 'x' * 12]
int_specs = ['', 'd', 'b', 'o', 'x', 'X', 'c', 'n', '#b', '#o', '#x', '#X', '+d', ' d', '-d', '5', '05', '010', '<5', '>5', '^5', '=5', '*^9', '0=8', 'x<6',
             ',', '_', '_b', '_x', '_o', '_X', '#_x', '010,', '012_', '012_x', '#012_b', '+,', ' 015,', ',d', '20,', '<20,', '^+20,', '.2', 'z', 's', 'q', ',x', ',c', '+c', '#c', '5c', '^5c',
             'e', 'E', 'f', '.2f', '%', '.1%', 'g', 'G', '10.3e', ',.2f', '+09.1f', 'z.1f', 'n', '08n', '#10x', '0>8x', 'F', 'abc', '.', '_,', ',_', '1_000']
float_specs = ['', 'e', 'E', 'f', 'F', 'g', 'G', 'n', '%', '.0e', '.1e', '.3e', '.10e', '.0f', '.1f', '.2f', '.3f', '.10f', '.20f', '.0g', '.1g', '.2g', '.3g', '.10g', '.17g',
               '.0', '.1', '.2', '.3', '.5', '.16', '.17', '#', '#.0f', '#.0e', '#g', '#.3g', '#.0', '#.3', '+', ' ', '-', '+.2f', ' .3e', 'z', 'z.2f', 'z.0f', 'z.1e', 'z.3g', 'z%', '+z.1f',
               '10', '010', '<10', '>10', '^10', '=10', '*^12.3f', '0=12.2f', '012.3f', '-012.3e', '+012', ',', '_', ',.2f', '_.3f', '020,.2f', '015_.1f', ',e', ',g', ',%', ',.3%', '012,',
               '.3%', '10.2%', 'G', '.3G', 'E', '.2E', 'F', '.1F', 'd', 'x', 'c', 's', 'b', 'q', ',n', '.2n', '', '^', '0', '0<10', 'x=10.2f', '20.10e', '.100f', '.30e', '.60g', '.400f', '.2147483648f', '99999999999999999999']
str_specs = ['', 's', '5', '<5', '>5', '^5', '*^7', '.2', '10.3', '^10.3s', '05', '0<5', '+', ' ', '-', 'z', '#', '=5', ',', '_', 'd', 'x', '.0', 'q', '.', '>=5', '.5s', '^^8', '0>7', 'abc', 'ä<6']
def fmt_case(kind, v, s):
    try:
        r = format(v, s)
        return 'ok', r
    except Exception as e:
        return type(e).__name__, str(e)
out = ['# Expected results of format(value, spec) from CPython 3.11.7, produced by',
       '# testdata/gen_format_cases.py. Columns: kind, value, spec,',
       '# outcome (ok or exception class), text. Values: ints/bools in decimal, floats as repr.']
def val_text(v):
    if isinstance(v, bool): return 'True' if v else 'False'
    if isinstance(v, float): return repr(v)
    return str(v)
for kind, vals, specs in (('int', ints, int_specs), ('float', floats, float_specs), ('str', strs, str_specs)):
    for v in vals:
        k = 'bool' if isinstance(v, bool) else kind
        for s in specs:
            st, r = fmt_case(kind, v, s)
            for x in (val_text(v), s, r):
                assert '\t' not in x and '\n' not in x
            out.append('\t'.join((k, val_text(v), s, st, r)))
open(sys.argv[1], 'w').write('\n'.join(out) + '\n')
print(len(out))
