//! The native `_tensorboard` module behind `stdlib/utils/tensorboard.dl`'s
//! `SummaryWriter`: event files and summaries from `crate::tensorboard`. Every function
//! takes the event file's path, so the writer's state lives in the Kiln object.

use super::mathmod::module;
use super::methods::str_arg;
use super::numarray::{number, numbers};
use super::{arity, tensor::te};
use crate::interp::value::{DictMap, Key, ModuleObj, Value};
use crate::interp::{value_err, Interp, R};
use crate::tensorboard::proto::{Event, SummaryValue};
use crate::tensorboard::record::read_records;
use crate::tensorboard::summary::{self, Bins};
use crate::tensorboard::writer::{self, EventFile};
use prost::Message;
use std::path::PathBuf;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

pub fn tensorboard_module() -> Rc<ModuleObj> {
    module(
        "_tensorboard",
        &[
            ("default_log_dir", default_log_dir),
            ("now", now),
            ("create", create),
            ("scalar", scalar),
            ("text", text),
            ("histogram", histogram),
            ("image", image),
            ("read_events", read_events),
        ],
        &[],
    )
}

fn default_log_dir(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("default_log_dir", args, 1, 1)?;
    Ok(Value::str(&writer::default_log_dir(str_arg(
        &args[0],
        "SummaryWriter",
    )?)))
}

fn now(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("now", args, 0, 0)?;
    Ok(Value::Float(writer::now()))
}

/// `create(log_dir, filename_suffix)`: a new event file; its path.
fn create(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("create", args, 2, 2)?;
    super::fileobj::fs_gate(me, "SummaryWriter")?;
    let dir = str_arg(&args[0], "SummaryWriter")?;
    let f =
        EventFile::create(&PathBuf::from(dir), str_arg(&args[1], "SummaryWriter")?).map_err(te)?;
    Ok(Value::str(&f.path.to_string_lossy()))
}

/// The event file, the tag, the step (None: 0) and the wall time (None: now) at
/// positions 0, 1, 3, 4 of `args`.
fn target(me: &Interp, args: &[Value], fname: &str) -> R<(EventFile, String, i64, f64)> {
    super::fileobj::fs_gate(me, fname)?;
    let path = PathBuf::from(str_arg(&args[0], fname)?);
    let tag = str_arg(&args[1], fname)?.to_string();
    let step = match &args[3] {
        Value::None => 0,
        v => {
            let s = number(v, fname)?;
            if s.fract() != 0.0 || !s.is_finite() {
                return Err(value_err(format!(
                    "{fname}(): global_step must be an integer"
                )));
            }
            s as i64
        }
    };
    let wall = match &args[4] {
        Value::None => writer::now(),
        v => number(v, fname)?,
    };
    Ok((EventFile { path }, tag, step, wall))
}

/// `scalar(path, tag, value, step, walltime)`.
fn scalar(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("add_scalar", args, 5, 5)?;
    let (f, tag, step, wall) = target(me, args, "add_scalar")?;
    let v = number(&args[2], "add_scalar")?;
    f.summary(step, wall, vec![summary::scalar(&tag, v)])
        .map_err(te)?;
    Ok(Value::None)
}

/// `text(path, tag, text, step, walltime)`.
fn text(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("add_text", args, 5, 5)?;
    let (f, tag, step, wall) = target(me, args, "add_text")?;
    let t = str_arg(&args[2], "add_text")?;
    f.summary(step, wall, vec![summary::text(&tag, t)])
        .map_err(te)?;
    Ok(Value::None)
}

/// `histogram(path, tag, values, step, walltime, bins)`: bins `'tensorflow'` or an int.
fn histogram(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("add_histogram", args, 6, 6)?;
    let (f, tag, step, wall) = target(me, args, "add_histogram")?;
    let (_, vals) = numbers(&args[2], "add_histogram")?;
    let bins = match &args[5] {
        Value::Str(s) if &**s == "tensorflow" => Bins::Tensorflow,
        Value::Int(n) if *n > 0 => Bins::Count(*n as usize),
        other => {
            let r = me.repr(other)?;
            return Err(value_err(format!(
                "add_histogram(): bins must be 'tensorflow' or a positive int, not {r}"
            )));
        }
    };
    let v = summary::histogram(&tag, &vals, bins).map_err(te)?;
    f.summary(step, wall, vec![v]).map_err(te)?;
    Ok(Value::None)
}

/// `image(path, tag, img, step, walltime, dataformats)`: floats in [0, 1] are scaled by
/// 255, integers taken as 0..255 (Kiln has no uint8); both clipped and truncated as
/// PyTorch's `(x * scale).clip(0, 255).astype(uint8)`.
fn image(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("add_image", args, 6, 6)?;
    let (f, tag, step, wall) = target(me, args, "add_image")?;
    let (shape, vals) = numbers(&args[2], "add_image")?;
    let fmt = str_arg(&args[5], "add_image")?;
    let scale = match &args[2] {
        Value::Tensor(t) if t.dtype() != crate::tensor::DType::F32 => 1.0,
        _ => 255.0,
    };
    let (h, w, c, hwc) = to_hwc(&shape, &vals, fmt)?;
    let px: Vec<u8> = hwc
        .iter()
        .map(|v| (v * scale).clamp(0.0, 255.0) as u8)
        .collect();
    let v = summary::image(&tag, &px, h, w, c).map_err(te)?;
    f.summary(step, wall, vec![v]).map_err(te)?;
    Ok(Value::None)
}

/// An image in `fmt` (`CHW`, `HWC` or `HW`) as height, width, channels and HWC values.
fn to_hwc(shape: &[usize], vals: &[f64], fmt: &str) -> R<(usize, usize, usize, Vec<f64>)> {
    let bad = || {
        value_err(format!(
            "add_image(): an image of shape {shape:?} does not match dataformats='{fmt}'"
        ))
    };
    match (fmt, shape) {
        ("HW", [h, w]) => Ok((*h, *w, 1, vals.to_vec())),
        ("HWC", [h, w, c]) => Ok((*h, *w, *c, vals.to_vec())),
        ("CHW", [c, h, w]) => {
            let mut out = Vec::with_capacity(vals.len());
            for i in 0..h * w {
                for ch in 0..*c {
                    out.push(vals[ch * h * w + i]);
                }
            }
            Ok((*h, *w, *c, out))
        }
        ("HW" | "HWC" | "CHW", _) => Err(bad()),
        _ => Err(value_err(format!(
            "add_image(): dataformats must be 'CHW', 'HWC' or 'HW', not '{fmt}'"
        ))),
    }
}

fn dict(items: Vec<(&str, Value)>) -> Value {
    let mut m = DictMap::default();
    for (k, v) in items {
        m.insert(Key(Value::str(k)), v);
    }
    Value::dict(m)
}

fn floats(v: &[f64]) -> Value {
    Value::list(v.iter().map(|x| Value::Float(*x)).collect())
}

/// One summary value as a dict: `tag`, `kind` and the kind's fields.
fn value_dict(v: &SummaryValue) -> R<Value> {
    let tag = ("tag", Value::str(&v.tag));
    if let Some(x) = v.simple_value {
        return Ok(dict(vec![
            tag,
            ("kind", Value::str("scalar")),
            ("value", Value::Float(x as f64)),
        ]));
    }
    if let Some(h) = &v.histo {
        return Ok(dict(vec![
            tag,
            ("kind", Value::str("histogram")),
            ("min", Value::Float(h.min)),
            ("max", Value::Float(h.max)),
            ("num", Value::Float(h.num)),
            ("sum", Value::Float(h.sum)),
            ("sum_squares", Value::Float(h.sum_squares)),
            ("bucket_limit", floats(&h.bucket_limit)),
            ("bucket", floats(&h.bucket)),
        ]));
    }
    if let Some(im) = &v.image {
        let png = crate::io::png::decode(&im.encoded_image_string).map_err(te)?;
        let px: Vec<i64> = png.pixels.iter().map(|&p| p as i64).collect();
        let t = crate::tensor::creation::from_i64(px, &[png.height, png.width, png.channels])
            .map_err(te)?;
        return Ok(dict(vec![
            tag,
            ("kind", Value::str("image")),
            ("height", Value::Int(im.height as i64)),
            ("width", Value::Int(im.width as i64)),
            ("colorspace", Value::Int(im.colorspace as i64)),
            ("pixels", Value::Tensor(t)),
        ]));
    }
    if let Some(t) = &v.tensor {
        let plugin = v
            .metadata
            .as_ref()
            .and_then(|m| m.plugin_data.as_ref())
            .map_or("", |p| p.plugin_name.as_str());
        let s = t
            .string_val
            .first()
            .map(|b| String::from_utf8_lossy(b).into_owned());
        if let ("text", Some(s)) = (plugin, s) {
            return Ok(dict(vec![
                tag,
                ("kind", Value::str("text")),
                ("value", Value::str(&s)),
            ]));
        }
    }
    Ok(dict(vec![tag, ("kind", Value::str("other"))]))
}

/// `read_events(path)`: the events of an event file as dicts (`wall_time`, `step`, and
/// `file_version` or `summary`, a list of value dicts); a damaged file is a ValueError.
fn read_events(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("read_events", args, 1, 1)?;
    super::fileobj::fs_gate(me, "read_events")?;
    let path = PathBuf::from(str_arg(&args[0], "read_events")?);
    let bytes = crate::io::read_file(&path).map_err(te)?;
    let recs = read_records(&bytes).map_err(|e| {
        value_err(format!(
            "read_events(): '{}' is damaged: {e:?}",
            path.display()
        ))
    })?;
    let mut out = Vec::new();
    for r in recs {
        let ev =
            Event::decode(r).map_err(|e| value_err(format!("read_events(): bad event: {e}")))?;
        let mut items = vec![
            ("wall_time", Value::Float(ev.wall_time)),
            ("step", Value::Int(ev.step)),
        ];
        if let Some(v) = &ev.file_version {
            items.push(("file_version", Value::str(v)));
        }
        if let Some(s) = &ev.summary {
            let vals = s.value.iter().map(value_dict).collect::<R<Vec<_>>>()?;
            items.push(("summary", Value::list(vals)));
        }
        out.push(dict(items));
    }
    Ok(Value::list(out))
}
