//! The native half of `time` (`_time`): clocks, `sleep`, and the C library's calendar
//! functions (`gmtime_r`, `localtime_r`, `mktime`, `strftime`, as CPython uses them).
//! `stdlib/time.dl` builds `struct_time` and the public functions on top.

use super::arity;
use super::convert::{int_arg, num_arg};
use super::mathmod::module;
use crate::error::ErrorKind;
use crate::interp::value::{ModuleObj, Value};
use crate::interp::{err, type_err, value_err, Interp, R};
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

pub fn time_module() -> Rc<ModuleObj> {
    let (timezone, altzone, daylight, tzname) = zone_constants();
    module(
        "_time",
        &[
            ("time", time),
            ("time_ns", time_ns),
            ("perf_counter", perf_counter),
            ("monotonic", perf_counter),
            ("perf_counter_ns", perf_counter_ns),
            ("monotonic_ns", perf_counter_ns),
            ("sleep", sleep),
            ("_gmtime", gmtime),
            ("_localtime", localtime),
            ("_mktime", mktime),
            ("_strftime", strftime),
        ],
        &[
            ("timezone", Value::Int(timezone)),
            ("altzone", Value::Int(altzone)),
            ("daylight", Value::Int(daylight)),
            ("tzname", tzname),
        ],
    )
}

fn since_epoch() -> std::time::Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

fn time(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("time", a, 0, 0)?;
    Ok(Value::Float(since_epoch().as_secs_f64()))
}

fn time_ns(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("time_ns", a, 0, 0)?;
    Ok(Value::Int(since_epoch().as_nanos() as i64))
}

fn started() -> std::time::Duration {
    thread_local! {
        static START: std::time::Instant = std::time::Instant::now();
    }
    START.with(|s| s.elapsed())
}

fn perf_counter(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("perf_counter", a, 0, 0)?;
    Ok(Value::Float(started().as_secs_f64()))
}

fn perf_counter_ns(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("perf_counter_ns", a, 0, 0)?;
    Ok(Value::Int(started().as_nanos() as i64))
}

fn sleep(me: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("sleep", a, 1, 1)?;
    let secs = num_arg(&a[0], "sleep")?;
    if secs.is_nan() || secs < 0.0 {
        return Err(value_err("sleep length must be non-negative"));
    }
    let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs.min(1e9));
    // Sleep in slices so the interrupt flag is honoured.
    loop {
        me.poll_limits()?;
        let now = std::time::Instant::now();
        if now >= end {
            return Ok(Value::None);
        }
        std::thread::sleep((end - now).min(std::time::Duration::from_millis(20)));
    }
}

/// The seconds argument of `gmtime`/`localtime`: now when `None`, else floored.
fn secs_arg(a: &[Value], name: &str) -> R<libc::time_t> {
    arity(name, a, 0, 1)?;
    let secs = match a.first() {
        None | Some(Value::None) => return Ok(since_epoch().as_secs() as libc::time_t),
        Some(v @ (Value::Int(_) | Value::Bool(_))) => return int_arg(v, name),
        Some(Value::Float(f)) => *f,
        Some(v) => return int_arg(v, ""),
    };
    if secs.is_nan() {
        return Err(value_err("Invalid value NaN (not a number)"));
    }
    let f = secs.floor();
    if !(-9.2e18..9.2e18).contains(&f) {
        return Err(err(
            ErrorKind::OverflowError,
            "timestamp out of range for platform time_t",
        ));
    }
    Ok(f as libc::time_t)
}

/// `struct tm` as the 11 fields `struct_time` keeps: the 9 sequence fields, the zone
/// name and the UTC offset.
fn tm_tuple(tm: &libc::tm, zone: &str) -> Value {
    let i = |x: libc::c_int| Value::Int(x as i64);
    Value::tuple(vec![
        Value::Int(tm.tm_year as i64 + 1900),
        i(tm.tm_mon + 1),
        i(tm.tm_mday),
        i(tm.tm_hour),
        i(tm.tm_min),
        i(tm.tm_sec),
        i((tm.tm_wday + 6) % 7),
        i(tm.tm_yday + 1),
        i(tm.tm_isdst),
        Value::str(zone),
        Value::Int(tm.tm_gmtoff),
    ])
}

fn out_of_range() -> crate::interp::Exc {
    err(
        ErrorKind::OverflowError,
        "timestamp out of range for platform time_t",
    )
}

fn gmtime(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let t = secs_arg(a, "gmtime")?;
    // SAFETY: `tm` is plain data; gmtime_r writes it and reads only `t`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::gmtime_r(&t, &mut tm) }.is_null() {
        return Err(out_of_range());
    }
    Ok(tm_tuple(&tm, "GMT"))
}

/// `localtime_r`, with the zone name it reports.
fn local_tm(t: libc::time_t) -> Option<(libc::tm, String)> {
    // SAFETY: `tm` is plain data; tzset/localtime_r write it and the C library's zone
    // state; `tm_zone` points into that state (or is null) and is copied at once.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { tzset() };
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return None;
    }
    let zone = if tm.tm_zone.is_null() {
        String::new()
    } else {
        unsafe { std::ffi::CStr::from_ptr(tm.tm_zone) }
            .to_string_lossy()
            .into_owned()
    };
    Some((tm, zone))
}

extern "C" {
    fn tzset();
}

fn localtime(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let t = secs_arg(a, "localtime")?;
    let (tm, zone) = local_tm(t).ok_or_else(out_of_range)?;
    Ok(tm_tuple(&tm, &zone))
}

/// `(timezone, altzone, daylight, tzname)` as CPython computes them: from the offsets
/// of this year's January and July.
fn zone_constants() -> (i64, i64, i64, Value) {
    let now = since_epoch().as_secs() as libc::time_t;
    let year = local_tm(now).map_or(70, |(tm, _)| tm.tm_year);
    let at = |mon: i32| {
        // January 1st / July 1st of this year, noon UTC (a day never straddles a zone)
        let days = days_from_civil(year as i64 + 1900, mon, 1);
        local_tm((days * 86400 + 43200) as libc::time_t)
            .map_or((0, "UTC".to_string()), |(tm, z)| (tm.tm_gmtoff, z))
    };
    let (jan, jan_name) = at(1);
    let (jul, jul_name) = at(7);
    let names = |a: String, b: String| Value::tuple(vec![Value::str(&a), Value::str(&b)]);
    if jan < jul {
        // northern hemisphere: January is standard time
        (-jan, -jul, 1, names(jan_name, jul_name))
    } else if jan > jul {
        (-jul, -jan, 1, names(jul_name, jan_name))
    } else {
        (-jan, -jan, 0, names(jan_name.clone(), jan_name))
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i32, d: i32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// A `struct tm` from the 9 sequence fields, checked as CPython's `strftime` checks
/// them (0 is accepted for month, day and day of year).
fn tm_from(v: &Value, name: &str) -> R<libc::tm> {
    let fields = match v {
        Value::Tuple(t) if t.len() >= 9 => t.clone(),
        Value::Tuple(t) => {
            return Err(type_err(format!(
                "{name}(): illegal time tuple argument (expected 9 fields, got {})",
                t.len()
            )))
        }
        other => {
            return Err(type_err(format!(
                "Tuple or struct_time argument required, not {}",
                other.type_name()
            )))
        }
    };
    let mut f = [0i64; 9];
    for (slot, x) in f.iter_mut().zip(fields.iter()) {
        *slot = int_arg(x, name)?;
    }
    let [year, mon, mday, hour, min, sec, wday, yday, isdst] = f;
    let check = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(value_err(format!("{what} out of range")))
        }
    };
    check((0..=12).contains(&mon), "month")?;
    check((0..=31).contains(&mday), "day of month")?;
    check((0..=23).contains(&hour), "hour")?;
    check((0..=59).contains(&min), "minute")?;
    check((0..=61).contains(&sec), "seconds")?;
    check(wday >= 0, "day of week")?;
    check((0..=366).contains(&yday), "day of year")?;
    let year = year - 1900;
    if !(i32::MIN as i64..=i32::MAX as i64).contains(&year) {
        return Err(err(ErrorKind::OverflowError, "year out of range"));
    }
    // SAFETY: `tm` is plain data.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    tm.tm_year = year as i32;
    tm.tm_mon = (mon.max(1) - 1) as i32;
    tm.tm_mday = mday.max(1) as i32;
    tm.tm_hour = hour as i32;
    tm.tm_min = min as i32;
    tm.tm_sec = sec as i32;
    tm.tm_wday = ((wday + 1) % 7) as i32;
    tm.tm_yday = (yday.max(1) - 1) as i32;
    tm.tm_isdst = isdst.clamp(-1, 1) as i32;
    if let Some(Value::Int(off)) = fields.get(10) {
        tm.tm_gmtoff = *off as libc::c_long;
    }
    Ok(tm)
}

fn mktime(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("mktime", a, 1, 1)?;
    let mut tm = tm_from(&a[0], "mktime")?;
    tm.tm_wday = -1;
    // SAFETY: `tm` is a valid struct tm; mktime normalizes it in place.
    let t = unsafe { libc::mktime(&mut tm) };
    if t == -1 && tm.tm_wday == -1 {
        return Err(err(
            ErrorKind::OverflowError,
            "mktime argument out of range",
        ));
    }
    Ok(Value::Float(t as f64))
}

/// `_strftime(format, fields)`: the C library's `strftime` (in the C locale, as
/// CPython's), with the zone name and offset of the `struct_time`.
fn strftime(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("strftime", a, 2, 2)?;
    let fmt = match &a[0] {
        Value::Str(s) => s.clone(),
        other => {
            return Err(type_err(format!(
                "strftime() argument 1 must be str, not {}",
                other.type_name()
            )))
        }
    };
    let mut tm = tm_from(&a[1], "strftime")?;
    let zone = match &a[1] {
        Value::Tuple(t) => match t.get(9) {
            Some(Value::Str(z)) => z.to_string(),
            _ => String::new(),
        },
        _ => String::new(),
    };
    let cfmt =
        std::ffi::CString::new(fmt.as_bytes()).map_err(|_| value_err("embedded null character"))?;
    let czone = std::ffi::CString::new(zone).unwrap_or_default();
    tm.tm_zone = czone.as_ptr();
    if fmt.is_empty() {
        return Ok(Value::str(""));
    }
    // as CPython: grow the buffer until the result fits (an empty result of a format
    // that should print something means "too small")
    let mut size = 1024usize;
    loop {
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` holds `size` bytes; `cfmt`, `tm` and the zone it points to live
        // through the call.
        let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), size, cfmt.as_ptr(), &tm) };
        if n > 0 || size >= 256 * fmt.len() + 1024 {
            buf.truncate(n);
            return Ok(Value::str(&String::from_utf8_lossy(&buf)));
        }
        size *= 2;
    }
}
