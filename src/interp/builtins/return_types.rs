//! torch.return_types: the tensor methods and functions whose PyTorch result is a named
//! tuple (`max(dim)`, `sort`, `topk`, `slogdet`, `svd`, ...) get their tuple wrapped in
//! the class of that name from stdlib/return_types.dl (`.values`/`.indices`, unpacking,
//! indexing and PyTorch's printed form).

use crate::interp::value::Value;
use crate::interp::{Interp, R};

/// The return type of method or function `name` when it returns a tuple.
fn class_of(name: &str) -> Option<&'static str> {
    Some(match name {
        "max" => "max",
        "min" => "min",
        "sort" => "sort",
        "topk" => "topk",
        "kthvalue" => "kthvalue",
        "median" => "median",
        "mode" => "mode",
        "cummax" => "cummax",
        "cummin" => "cummin",
        "aminmax" => "aminmax",
        "slogdet" => "slogdet",
        "svd" => "svd",
        _ => return None,
    })
}

impl Interp {
    /// `v` as `torch.return_types.<name>` when `name`'s result is a named tuple and `v`
    /// is a tuple (a reduction over all elements returns a tensor: unchanged).
    pub fn named_result(&mut self, name: &str, v: Value) -> R<Value> {
        let (Some(cls), Value::Tuple(items)) = (class_of(name), &v) else {
            return Ok(v);
        };
        // A first import inside a capture is not the function's own global store.
        let recording = crate::ir::record::set_active(false);
        let m = self.import_dotted("return_types");
        crate::ir::record::set_active(recording);
        let m = m?;
        let c = self.get_attr(&Value::Module(m), cls)?;
        self.call_value(&c, items.to_vec(), Vec::new())
    }
}
