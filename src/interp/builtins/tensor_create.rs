//! Tensor creation globals: `tensor zeros ones empty full rand randn randint *_like
//! arange linspace eye manual_seed randperm`, each with `dtype=` and `requires_grad=`,
//! and PyTorch's generator draws behind torch.utils.data (`_torch_seed_state`,
//! `_random_int64`, `_random_below`).

use super::tensor::{
    dtype_of, finish, int_of, list_value, scalar_of, shape_args, sizes, te, Args, Kw,
};
use crate::interp::value::{NativeImpl, Value};
use crate::interp::{type_err, value_err, Interp, R};
use crate::tensor::creation::Fill;
use crate::tensor::dtype::default_float;
use crate::tensor::{creation, random, DType, Scalar, Tensor};

pub const GLOBALS: &[(&str, NativeImpl)] = &[
    ("tensor", tensor),
    ("zeros", zeros),
    ("ones", ones),
    ("empty", empty),
    ("full", full),
    ("rand", rand),
    ("randn", randn),
    ("randint", randint),
    ("zeros_like", zeros_like),
    ("ones_like", ones_like),
    ("empty_like", zeros_like),
    ("full_like", full_like),
    ("rand_like", rand_like),
    ("randn_like", randn_like),
    ("arange", arange),
    ("linspace", linspace),
    ("eye", eye),
    ("manual_seed", manual_seed),
    ("randperm", randperm),
    ("device", device),
    ("_torch_seed_state", torch_seed_state),
    ("_random_int64", random_int64),
    ("_random_below", random_below),
];

const CREATE_KW: &[&str] = &["dtype", "device", "requires_grad"];

/// Most nesting `tensor(data)` accepts (also bounds the recursion on self-containing
/// lists).
const MAX_DIMS: usize = 64;

/// Walks nested lists/tuples/tensors, measuring the shape and collecting the leaves.
struct Flatten {
    shape: Vec<usize>,
    leaf_depth: Option<usize>,
    leaves: Vec<Scalar>,
}

impl Flatten {
    fn walk(&mut self, v: &Value, depth: usize) -> R<()> {
        let items: Vec<Value> = match v {
            Value::List(l) => l.borrow().clone(),
            Value::Tuple(t) | Value::Size(t) => t.to_vec(),
            Value::Tensor(t) => {
                let nested = list_value(t.tolist().map_err(te)?);
                return self.walk(&nested, depth);
            }
            _ => return self.leaf(v, depth),
        };
        if depth >= MAX_DIMS {
            return Err(value_err(format!(
                "tensor(): too many dimensions (more than {MAX_DIMS})"
            )));
        }
        if self.leaf_depth.is_some_and(|d| d <= depth) {
            return Err(value_err(format!(
                "tensor(): expected a number at dim {depth}, got a sequence"
            )));
        }
        match self.shape.get(depth) {
            Some(&n) if n != items.len() => {
                return Err(value_err(format!(
                    "expected sequence of length {} at dim {} (got {})",
                    n,
                    depth,
                    items.len()
                )))
            }
            Some(_) => {}
            None => self.shape.push(items.len()),
        }
        for x in &items {
            self.walk(x, depth + 1)?;
        }
        Ok(())
    }

    fn leaf(&mut self, v: &Value, depth: usize) -> R<()> {
        let Some(s) = scalar_of(v) else {
            return Err(type_err(format!(
                "tensor(): could not convert an element of type '{}' to a number",
                v.type_name()
            )));
        };
        if self.shape.len() > depth || self.leaf_depth.is_some_and(|d| d != depth) {
            return Err(value_err(format!(
                "expected sequence of length {} at dim {} (got a number)",
                self.shape.get(depth).copied().unwrap_or(0),
                depth
            )));
        }
        self.leaf_depth = Some(depth);
        self.leaves.push(s);
        Ok(())
    }
}

/// `tensor(data)` for nested lists, numbers, bools and tensors.
pub fn from_value(data: &Value, dtype: Option<DType>) -> R<Tensor> {
    if let Value::Tensor(t) = data {
        let c = t.detach().contiguous_copy().map_err(te)?;
        return match dtype {
            Some(d) => c.cast(d).map_err(te),
            None => Ok(c),
        };
    }
    let mut f = Flatten {
        shape: Vec::new(),
        leaf_depth: None,
        leaves: Vec::new(),
    };
    f.walk(data, 0)?;
    creation::from_scalars(&f.leaves, &f.shape, dtype).map_err(te)
}

fn tensor(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("tensor", args, kw);
    a.check(1, &["data", "dtype", "device", "requires_grad"])?;
    let data = a.required(0, "data")?;
    let t = from_value(data, a.kw("dtype").map(dtype_of).transpose()?)?;
    finish(t, &a)
}

fn shaped(
    fname: &str,
    args: &[Value],
    kw: Kw,
    f: fn(&[usize], DType) -> crate::Result<Tensor>,
) -> R<Value> {
    let a = Args::new(fname, &[], kw);
    a.check(0, CREATE_KW)?;
    shaped_checked(fname, args, a, f)
}

/// `rand`/`randn`: `shaped` with `generator=`.
fn shaped_random(
    fname: &str,
    args: &[Value],
    kw: Kw,
    f: fn(&[usize], DType) -> crate::Result<Tensor>,
) -> R<Value> {
    let a = Args::new(fname, &[], kw);
    a.check(0, &["generator", "dtype", "device", "requires_grad"])?;
    super::generator::with_generator(a.kw("generator"), fname, || {
        shaped_checked(fname, args, a, f)
    })
}

fn shaped_checked(
    fname: &str,
    args: &[Value],
    a: Args,
    f: fn(&[usize], DType) -> crate::Result<Tensor>,
) -> R<Value> {
    let shape = sizes(&shape_args(args, fname)?, fname)?;
    let dt = a
        .kw("dtype")
        .map(dtype_of)
        .transpose()?
        .unwrap_or_else(default_float);
    finish(f(&shape, dt).map_err(te)?, &a)
}

fn zeros(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    shaped("zeros", args, kw, creation::zeros)
}

fn ones(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    shaped("ones", args, kw, creation::ones)
}

fn empty(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    shaped("empty", args, kw, creation::empty)
}

fn rand(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    shaped_random("rand", args, kw, creation::rand)
}

fn randn(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    shaped_random("randn", args, kw, creation::randn)
}

fn full(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("full", args, kw);
    a.check(
        2,
        &["size", "fill_value", "dtype", "device", "requires_grad"],
    )?;
    let shape = sizes(
        &shape_args(std::slice::from_ref(a.required(0, "size")?), "full")?,
        "full",
    )?;
    let v = a.required(1, "fill_value")?;
    let s = scalar_of(v).ok_or_else(|| {
        type_err(format!(
            "full(): fill_value must be a number, not {}",
            v.type_name()
        ))
    })?;
    let t = creation::full(&shape, s, a.dtype(usize::MAX)?).map_err(te)?;
    finish(t, &a)
}

/// `randint(high, size)` or `randint(low, high, size)`.
fn randint(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("randint", args, kw);
    a.check(
        3,
        &[
            "low",
            "high",
            "size",
            "generator",
            "dtype",
            "device",
            "requires_grad",
        ],
    )?;
    let (bounds, size) = match args.split_last() {
        Some((s @ (Value::Tuple(_) | Value::Size(_) | Value::List(_)), rest)) => (rest, Some(s)),
        _ => (args, None),
    };
    let size = size
        .or_else(|| a.kw("size"))
        .ok_or_else(|| type_err("randint() missing required argument 'size'"))?;
    let shape = sizes(
        &shape_args(std::slice::from_ref(size), "randint")?,
        "randint",
    )?;
    let (low, high) = match bounds {
        [h] => (0, int_of(h, "randint")?),
        [l, h] => (int_of(l, "randint")?, int_of(h, "randint")?),
        _ => {
            let low = a.kw("low").map(|v| int_of(v, "randint")).transpose()?;
            let high = a
                .kw("high")
                .ok_or_else(|| type_err("randint() missing required argument 'high'"))?;
            (low.unwrap_or(0), int_of(high, "randint")?)
        }
    };
    let dt = a.dtype(usize::MAX)?.unwrap_or(DType::I64);
    let t = super::generator::with_generator(a.kw("generator"), "randint", || {
        creation::randint(low, high, &shape, dt).map_err(te)
    })?;
    finish(t, &a)
}

/// The `*_like` creations: a fill of the input's shape (captured as one node following
/// its symbolic sizes, so no size is read by Python).
fn like(fname: &str, args: &[Value], kw: Kw, fill: impl FnOnce(&Args) -> R<Fill>) -> R<Value> {
    let a = Args::new(fname, args, kw);
    a.check(
        2,
        &[
            "input",
            "fill_value",
            "generator",
            "dtype",
            "device",
            "requires_grad",
        ],
    )?;
    let t = a.tensor(0, "input")?;
    let dt = a.dtype(usize::MAX)?.unwrap_or(t.dtype());
    let fill = fill(&a)?;
    let out = super::generator::with_generator(a.kw("generator"), fname, || {
        creation::fill_like(&t, fill, dt).map_err(te)
    })?;
    finish(out, &a)
}

fn zeros_like(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    like("zeros_like", args, kw, |_| Ok(Fill::Value(Scalar::Int(0))))
}

fn ones_like(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    like("ones_like", args, kw, |_| Ok(Fill::Value(Scalar::Int(1))))
}

fn rand_like(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    like("rand_like", args, kw, |_| {
        Ok(Fill::Uniform { from: 0.0, to: 1.0 })
    })
}

fn randn_like(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    like("randn_like", args, kw, |_| {
        Ok(Fill::Normal {
            mean: 0.0,
            std: 1.0,
        })
    })
}

fn full_like(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    like("full_like", args, kw, |a| {
        let v = a.required(1, "fill_value")?;
        let x = scalar_of(v).ok_or_else(|| {
            type_err(format!(
                "full_like(): fill_value must be a number, not {}",
                v.type_name()
            ))
        })?;
        Ok(Fill::Value(x))
    })
}

fn number(v: &Value, fname: &str) -> R<Scalar> {
    scalar_of(v).ok_or_else(|| {
        type_err(format!(
            "{}(): expected a number, got {}",
            fname,
            v.type_name()
        ))
    })
}

/// `arange(end)`, `arange(start, end)`, `arange(start, end, step)`.
fn arange(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("arange", args, kw);
    a.check(
        3,
        &["start", "end", "step", "dtype", "device", "requires_grad"],
    )?;
    let (start, end, step) = match args {
        [e] => (Scalar::Int(0), number(e, "arange")?, Scalar::Int(1)),
        [s, e] => (number(s, "arange")?, number(e, "arange")?, Scalar::Int(1)),
        [s, e, st] => (
            number(s, "arange")?,
            number(e, "arange")?,
            number(st, "arange")?,
        ),
        _ => {
            let get = |n: &str, d: Scalar| a.kw(n).map(|v| number(v, "arange")).unwrap_or(Ok(d));
            (
                get("start", Scalar::Int(0))?,
                number(a.required(usize::MAX, "end")?, "arange")?,
                get("step", Scalar::Int(1))?,
            )
        }
    };
    let t = creation::arange(start, end, step, a.dtype(usize::MAX)?).map_err(te)?;
    finish(t, &a)
}

fn linspace(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("linspace", args, kw);
    a.check(
        3,
        &["start", "end", "steps", "dtype", "device", "requires_grad"],
    )?;
    let start = number(a.required(0, "start")?, "linspace")?.as_f64();
    let end = number(a.required(1, "end")?, "linspace")?.as_f64();
    let steps = int_of(a.required(2, "steps")?, "linspace")?;
    let steps = usize::try_from(steps)
        .map_err(|_| value_err("linspace(): number of steps must be non-negative"))?;
    let dt = a.dtype(usize::MAX)?.unwrap_or_else(default_float);
    finish(
        creation::linspace_in(start, end, steps, dt).map_err(te)?,
        &a,
    )
}

fn eye(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("eye", args, kw);
    a.check(2, &["n", "m", "dtype", "device", "requires_grad"])?;
    let n = sizes(&[int_of(a.required(0, "n")?, "eye")?], "eye")?[0];
    let m = match a.int(1, "m")? {
        Some(m) => Some(sizes(&[m], "eye")?[0]),
        None => None,
    };
    let dt = a.dtype(usize::MAX)?.unwrap_or_else(default_float);
    finish(creation::eye(n, m, dt).map_err(te)?, &a)
}

fn manual_seed(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("manual_seed", args, kw);
    a.check(1, &["seed"])?;
    let seed = int_of(a.required(0, "seed")?, "manual_seed")?;
    random::manual_seed(seed as u64);
    Ok(Value::None)
}

/// Runs `f` on PyTorch's engine: this thread's stream for `generator=None`, else the
/// engine of a `torch.Generator` (data.Generator, whose `_state` is the list of 625 ints
/// `_torch_seed_state` makes), written back after.
fn with_torch_engine<T>(
    generator: Option<&Value>,
    fname: &str,
    f: impl FnOnce(&mut random::Mt19937) -> T,
) -> R<T> {
    super::generator::with_generator(generator, fname, || {
        Ok(random::with_rng(|r| f(&mut r.torch)))
    })
}

/// `randperm(n, generator=None)`: a random permutation of `0..n` in PyTorch's order
/// (`randperm_cpu`'s swaps on its mt19937 engine, seeded by `manual_seed`).
fn randperm(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("randperm", args, kw);
    a.check(1, &["n", "generator", "dtype", "device", "requires_grad"])?;
    let n = sizes(&[int_of(a.required(0, "n")?, "randperm")?], "randperm")?[0];
    let mut v: Vec<i64> = crate::tensor::storage::collect_vec(n, 0..n as i64).map_err(te)?;
    with_torch_engine(a.kw("generator"), "randperm", |g| {
        g.shuffle_like_randperm(&mut v)
    })?;
    let t = creation::from_i64(v, &[n]).map_err(te)?;
    let t = match a.dtype(usize::MAX)? {
        Some(d) => t.cast(d).map_err(te)?,
        None => t,
    };
    finish(t, &a)
}

/// `_torch_seed_state(seed)`: the state of a PyTorch CPU generator just seeded with
/// `seed`, as data.Generator keeps it.
fn torch_seed_state(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("_torch_seed_state", args, kw);
    a.check(1, &["seed"])?;
    let seed = int_of(a.required(0, "seed")?, "_torch_seed_state")?;
    let words = random::Mt19937::torch_seeded(seed as u64).to_words();
    Ok(Value::list(words.into_iter().map(Value::Int).collect()))
}

/// `_random_int64(generator=None)`: PyTorch's
/// `torch.empty((), dtype=torch.int64).random_(generator=generator).item()`.
fn random_int64(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("_random_int64", args, kw);
    a.check(1, &["generator"])?;
    let v = with_torch_engine(a.get(0, "generator"), "_random_int64", |g| g.random_int64())?;
    Ok(Value::Int(v))
}

/// `_random_below(n, generator=None)`: one element of PyTorch's
/// `randint(n, (k,), generator=generator)` for `0 < n < 2^32` (`random() % n`).
fn random_below(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("_random_below", args, kw);
    a.check(2, &["n", "generator"])?;
    let n = int_of(a.required(0, "n")?, "_random_below")?;
    let n = u32::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| value_err(format!("_random_below: n must be in [1, 2^32), got {n}")))?;
    let v = with_torch_engine(a.get(1, "generator"), "_random_below", |g| g.next_u32() % n)?;
    Ok(Value::Int(i64::from(v)))
}

/// `torch.device("cuda:0")`, `device("cuda", 0)`, `device(type="cpu")`: the device as
/// its string (`str(torch.device(...))`), which every `device=` and `.to()` accepts;
/// creating a non-CPU device is allowed (as PyTorch's), using it raises.
fn device(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("device", args, kw);
    a.check(2, &["type", "index"])?;
    let s = match a.required(0, "type")? {
        Value::Str(s) => s.clone(),
        v => {
            return Err(type_err(format!(
                "device(): argument 'type' must be str, not {}",
                v.type_name()
            )))
        }
    };
    let (kind, index) = super::tensor::device_name(&s, "device")?;
    let index = match (index, a.int(1, "index")?) {
        (Some(_), Some(_)) => return Err(crate::interp::err(
            crate::error::ErrorKind::RuntimeError,
            "device(): type (string) must not include an index because index was passed explicitly",
        )),
        (i, j) => i.or(j),
    };
    Ok(Value::str(&match index {
        Some(i) => format!("{kind}:{i}"),
        None => kind.to_string(),
    }))
}

/// `Tensor(data)` called as a class: the same as `tensor(data)`.
pub fn construct(args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("Tensor", args, kw);
    a.check(1, &["data", "dtype", "requires_grad"])?;
    let t = from_value(a.required(0, "data")?, a.dtype(usize::MAX)?)?;
    finish(t, &a)
}
