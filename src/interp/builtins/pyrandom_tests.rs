//! Tests of `pyrandom.rs` against streams produced by CPython 3.11.7's `random`.

use super::*;

/// One seed's expected outputs (each list from a freshly seeded generator, see below).
type Case = (
    i64,
    [f64; 3],
    [u64; 6],
    [i64; 10],
    [f64; 5],
    [usize; 10],
    [usize; 3],
);

/// Produced by python3 3.11.7 with:
/// ```python
/// import random
/// def show(seed):
///     r = random.Random(seed)
///     vals = [repr(r.random()) for _ in range(3)]
///     r = random.Random(seed)
///     bits = [r.getrandbits(k) for k in (1, 7, 32, 33, 53, 64)]
///     r = random.Random(seed)
///     ints = [r.randint(1, 6) for _ in range(5)] + [r.randint(-10**18, 10**18),
///             r.randrange(0, 100, 7), r.randrange(50, -50, -3), r.randrange(10),
///             r.randint(-(2**63), 2**63 - 1)]
///     r = random.Random(seed)
///     g = [repr(r.gauss(0.0, 1.0)) for _ in range(3)] + [repr(r.uniform(-2.0, 3.0)),
///          repr(r.gauss(5.0, 0.5))]
///     r = random.Random(seed)
///     x = list(range(10)); r.shuffle(x)
///     ch = [r.choice(range(1000)) for _ in range(3)]
///     print(f"    ({seed}, [{', '.join(vals)}], {bits}, {ints}, [{', '.join(g)}], {x}, {ch}),")
/// for s in [0, 1, 42, -42, 12345, 2**32, 2**32 + 5, -(2**63), 2**63 - 1, 987654321987654321]:
///     show(s)
/// ```
#[rustfmt::skip]
const CASES: [Case; 10] = [
    (0, [0.8444218515250481, 0.7579544029403025, 0.420571580830845], [1, 49, 3255389356, 3823568514, 2332111581032244, 9431353882395063546], [4, 4, 1, 3, 5, -66285450771185179, 98, -7, 7, -4024381387931422438], [0.9417154046806644, -1.3965781047011498, -0.6797144480784211, 0.5563736068430427, 5.18525178373033], [7, 8, 1, 5, 3, 4, 2, 0, 9, 6], [366, 597, 913]),
    (1, [0.13436424411240122, 0.8474337369372327, 0.763774618976614], [0, 72, 3639700191, 7740669488, 2297455587083473, 9139164268605729673], [2, 5, 1, 3, 1, 754659928281503099, 49, -40, 6, -5350389410352740842], [1.2881847531554629, 1.449445608699771, 0.06633580893826191, 0.47717543545970464, 4.617728174514184], [6, 8, 9, 7, 5, 3, 0, 4, 1, 2], [807, 214, 96]),
    (42, [0.6394267984578837, 0.025010755222666936, 0.27502931836911926], [1, 14, 107420369, 3184935163, 2010501012863888, 13585496030504862185], [6, 1, 1, 6, 3, -485311068318647408, 14, 32, 8, 1669292198774022018], [-0.14409032957792836, -0.1729036003315193, -0.11131586156766246, 1.6823560708200622, 5.3509918625494315], [7, 3, 2, 8, 5, 6, 9, 4, 0, 1], [604, 432, 32]),
    (-42, [0.6394267984578837, 0.025010755222666936, 0.27502931836911926], [1, 14, 107420369, 3184935163, 2010501012863888, 13585496030504862185], [6, 1, 1, 6, 3, -485311068318647408, 14, 32, 8, 1669292198774022018], [-0.14409032957792836, -0.1729036003315193, -0.11131586156766246, 1.6823560708200622, 5.3509918625494315], [7, 3, 2, 8, 5, 6, 9, 4, 0, 1], [604, 432, 32]),
    (12345, [0.41661987254534116, 0.010169169457068361, 0.8252065092537432], [0, 93, 43676229, 7817590892, 2689911400921319, 6795996055430912186], [4, 6, 1, 3, 3, -553447324200374000, 28, -31, 2, -5777353454584339015], [-0.12380079558885389, 0.07152496347566478, 0.3833691943171596, -0.15794155255762155, 4.625001469556529], [8, 7, 3, 5, 1, 2, 9, 4, 0, 6], [165, 382, 127]),
    (4294967296, [0.11299430095636409, 0.41782886486292836, 0.0166763664992291], [0, 44, 1794561286, 4014597330, 5509893382973197, 14861564313759884179], [1, 3, 4, 1, 1, 757820492967764480, 35, -34, 0, 8426331715411981101], [0.7888598085495195, 0.6779984204616889, 1.3679793770790432, 2.0282351062570925, 5.071932360248154], [8, 9, 3, 2, 4, 7, 0, 6, 5, 1], [14, 141, 77]),
    (4294967301, [0.15727238718789782, 0.2824866316461999, 0.6044540318498407], [0, 62, 1213270837, 8117169770, 130815406628965, 11580414858807844413], [2, 4, 3, 5, 1, 447551856000998973, 14, -43, 5, -4753965624178007432], [0.44832685298439173, 0.6803899119130167, -0.13551900463453007, 1.1388777185722883, 4.947811655585514], [5, 3, 6, 1, 9, 0, 8, 4, 7, 2], [747, 362, 958]),
    (i64::MIN, [0.5534639983914199, 0.9406144709090462, 0.24199432111690833], [1, 50, 4039908392, 899083848, 7667714787010171, 1563467281580459875], [5, 4, 2, 2, 5, -176606154257953483, 84, -13, 8, 8560554312741098068], [-2.243599936884441, -0.7833701065227084, 0.09816154071313908, -1.5762213559042608, 5.97491518487893], [5, 7, 9, 2, 0, 4, 1, 3, 6, 8], [469, 666, 685]),
    (9223372036854775807, [0.3166448820870279, 0.631259308253863, 0.8035542479972343], [0, 84, 2711238091, 4864845664, 4084438697644510, 8795274642428743868], [3, 6, 6, 2, 4, -748103984367913848, 49, -1, 2, 1054029170385773445], [-0.5743629130941533, 1.2905155840981153, 0.3629410941290464, 0.3839639787918925, 4.481207335347375], [4, 1, 9, 8, 6, 0, 3, 7, 2, 5], [632, 784, 96]),
    (987654321987654321, [0.6304701928011915, 0.9223463008792321, 0.9470159215332953], [1, 108, 3961447176, 8303094963, 4282955853129178, 10949854590860034450], [6, 3, 4, 3, 5, -93919504208891410, 35, -46, 3, 792487925008886606], [-1.5427146207820468, -1.6525809460038812, 1.0736857315030772, 0.9679640023880123, 4.814371456613037], [1, 9, 6, 2, 3, 0, 8, 4, 7, 5], [683, 555, 155]),
];

#[test]
fn streams_match_cpython() {
    for (seed, randoms, bits, ints, gauss, shuffled, choices) in CASES {
        let mut r = PyRandom::new(seed);
        for want in randoms {
            assert_eq!(r.random().to_bits(), want.to_bits(), "seed {seed} random()");
        }
        let mut r = PyRandom::new(seed);
        for (k, want) in [1, 7, 32, 33, 53, 64].into_iter().zip(bits) {
            assert_eq!(
                r.getrandbits(k).ok(),
                Some(want),
                "seed {seed} getrandbits({k})"
            );
        }
        let mut r = PyRandom::new(seed);
        let mut got = Vec::new();
        for _ in 0..5 {
            got.push(r.randint(1, 6).ok());
        }
        got.push(
            r.randint(-1_000_000_000_000_000_000, 1_000_000_000_000_000_000)
                .ok(),
        );
        got.push(r.randrange(0, 100, 7).ok());
        got.push(r.randrange(50, -50, -3).ok());
        got.push(r.randrange_below(10).ok());
        got.push(r.randint(i64::MIN, i64::MAX).ok());
        let want: Vec<Option<i64>> = ints.iter().map(|&v| Some(v)).collect();
        assert_eq!(got, want, "seed {seed} ints");
        let mut r = PyRandom::new(seed);
        let got = [
            r.gauss(0.0, 1.0),
            r.gauss(0.0, 1.0),
            r.gauss(0.0, 1.0),
            r.uniform(-2.0, 3.0),
            r.gauss(5.0, 0.5),
        ];
        for (g, w) in got.iter().zip(gauss) {
            assert_eq!(
                g.to_bits(),
                w.to_bits(),
                "seed {seed} gauss/uniform {got:?}"
            );
        }
        let mut r = PyRandom::new(seed);
        assert_eq!(r.shuffle_permutation(10), shuffled, "seed {seed} shuffle");
        let picks: Vec<usize> = (0..3).filter_map(|_| r.choice_index(1000).ok()).collect();
        assert_eq!(picks, choices, "seed {seed} choice");
    }
}

#[test]
fn reseeding_restarts_the_stream_and_clears_gauss() {
    let mut r = PyRandom::new(7);
    let first = r.gauss(0.0, 1.0);
    r.seed(7);
    assert_eq!(r.gauss(0.0, 1.0).to_bits(), first.to_bits());
}

#[test]
fn errors_match_python() {
    let mut r = PyRandom::new(1);
    // python3: random.randint(5, 3) -> ValueError('empty range for randrange() (5, 4, -1)')
    let e = r.randint(5, 3).expect_err("empty");
    assert_eq!(e.kind, ErrorKind::ValueError);
    assert_eq!(e.message, "empty range for randrange() (5, 4, -1)");
    // python3: random.randrange(0, 10, 0) -> ValueError('zero step for randrange()')
    let e = r.randrange(0, 10, 0).expect_err("zero step");
    assert_eq!(e.message, "zero step for randrange()");
    // python3: random.randrange(0, 10, -1) -> ValueError('empty range for randrange()')
    let e = r.randrange(0, 10, -1).expect_err("empty");
    assert_eq!(e.message, "empty range for randrange()");
    let e = r.randrange_below(0).expect_err("empty");
    assert_eq!(e.message, "empty range for randrange()");
    // python3: random.choice([]) -> IndexError('Cannot choose from an empty sequence')
    let e = r.choice_index(0).expect_err("empty");
    assert_eq!(e.kind, ErrorKind::IndexError);
    assert_eq!(e.message, "Cannot choose from an empty sequence");
    assert!(r.getrandbits(65).is_err());
    assert_eq!(r.getrandbits(0).ok(), Some(0));
}

#[test]
fn entropy_seeding_gives_values_in_range() {
    let mut a = PyRandom::from_entropy();
    let x = a.random();
    assert!((0.0..1.0).contains(&x));
    let mut b = PyRandom::from_entropy();
    let ya: Vec<u64> = (0..4).filter_map(|_| a.getrandbits(64).ok()).collect();
    let yb: Vec<u64> = (0..4).filter_map(|_| b.getrandbits(64).ok()).collect();
    assert_ne!(ya, yb, "two entropy seeds gave the same stream");
}
