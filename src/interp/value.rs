//! The runtime value model: a small enum, scalars unboxed, heap objects behind `Rc`.

pub use super::attrs::{AttrHint, Attrs, Layout, Own};
use super::gc::GcHeader;
use super::tree::FuncProto;
pub use super::value_drop::discard;
use crate::error::ErrorKind;
use indexmap::IndexMap;
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

/// Fast, deterministic hasher for name-keyed maps.
pub type FxBuild = foldhash::fast::FixedState;
/// A name-keyed, insertion-ordered map (instance and class attributes).
pub type NameMap = IndexMap<Rc<str>, Value, FxBuild>;
/// A Python dict: insertion-ordered, keyed by hashable values.
pub type DictMap = IndexMap<Key, Value, FxBuild>;

/// A shared mutable variable cell (closures).
pub type CellRef = Rc<CellObj>;

/// A closure cell: the variable (reached through `Deref`, so a cell reads like the
/// `RefCell` it wraps) and the cycle collector's header.
#[derive(Debug)]
pub struct CellObj {
    value: RefCell<Value>,
    pub gc: GcHeader,
}

impl CellObj {
    pub fn new(v: Value) -> CellObj {
        CellObj {
            value: RefCell::new(v),
            gc: GcHeader::default(),
        }
    }
}

impl std::ops::Deref for CellObj {
    type Target = RefCell<Value>;

    #[inline(always)]
    fn deref(&self) -> &RefCell<Value> {
        &self.value
    }
}

/// A Kiln value. Cloning is cheap (scalars copy, heap objects bump a refcount).
///
/// `repr(C, u64)`: a word-sized tag and every payload at offset 8, so a value is three
/// aligned words with no padding and every move is three word loads and stores. (With
/// the default layout `Bool`/`DType` payloads sit at offset 1, and a move copies the
/// bytes after the tag in odd-sized pieces; reading back a value just written that way
/// stalls store forwarding, e.g. a function's return value.) The unused tag values
/// still serve as the niche of `R<Value>` and `Option<Value>`.
#[derive(Clone, Debug, Default)]
#[repr(C, u64)]
pub enum Value {
    #[default]
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    List(Rc<RefCell<Vec<Value>>>),
    Tuple(Rc<[Value]>),
    /// A `torch.Size` (`t.shape`, `t.size()`): a tuple subclass of ints (symbolic ints
    /// during a capture) that prints as `torch.Size([2, 3])`.
    Size(Rc<[Value]>),
    Dict(Rc<RefCell<DictMap>>),
    Set(Rc<RefCell<DictMap>>),
    /// A `frozenset`: a set nothing mutates after it is built (so it is hashable).
    FrozenSet(Rc<RefCell<DictMap>>),
    Range(Rc<RangeObj>),
    Slice(Rc<[Value; 3]>),
    Ellipsis,
    /// `NotImplemented`: what a binary dunder returns to pass to the other operand.
    NotImplemented,
    Func(Rc<Function>),
    Native(Rc<NativeFn>),
    BoundMethod(Rc<(Value, Value)>),
    /// A method of a built-in type bound to its receiver (`xs.append` used as a value).
    BuiltinMethod(Rc<(Value, Rc<str>)>),
    Class(Rc<Class>),
    Instance(Rc<Instance>),
    Module(Rc<ModuleObj>),
    Iter(Rc<RefCell<IterObj>>),
    /// The object `super()` returns: the class to start the lookup after, and `self`.
    Super(Rc<(Rc<Class>, Value)>),
    /// A tensor (an Rc handle: cloning shares the tensor object).
    Tensor(crate::tensor::Tensor),
    /// A size of a symbolic dim read during a capture (`compile::capture::symint`); Python sees
    /// an `int` (any use other than affine arithmetic, shapes and slices is a guarded
    /// decision on its value: `interp::capture::symint`).
    SymInt(Rc<crate::compile::capture::symint::SymInt>),
    /// A float read during a capture that the compiled version takes at run time
    /// (`compile::capture::symfloat`); Python sees a `float` (any use other than float
    /// arithmetic and arithmetic with a float tensor is a guarded decision on its value).
    SymFloat(Rc<crate::compile::capture::symfloat::SymFloat>),
    /// A `@compile`d function (or a compiled module's bound `forward`).
    Compiled(Rc<crate::interp::capture::compiled::CompiledFn>),
    /// A static graph from `trace()`.
    Graph(Rc<crate::interp::capture::traced::TracedGraph>),
    /// A tensor dtype (`float32`, `int64`; `bool` the class also names the bool dtype).
    DType(crate::tensor::DType),
    /// The context manager `no_grad()` / `enable_grad()` returns.
    GradMode(Rc<GradModeCtx>),
    /// An autograd node (`t.grad_fn`, `g.next_functions`).
    GradFn(Rc<super::builtins::grad_fn::GradFn>),
    /// Internal: a closure cell stored in a frame slot. Never visible to scripts.
    Cell(CellRef),
    /// Internal: an unassigned slot. Never visible to scripts.
    Unbound,
}

/// `with no_grad():` state: the mode to switch to and the modes to restore on exit
/// (a stack, so one object can be entered again while active).
#[derive(Debug)]
pub struct GradModeCtx {
    pub enable: bool,
    pub saved: RefCell<Vec<bool>>,
    /// `set_grad_enabled(mode)` switches when called: the mode before the call, which
    /// the first `__exit__` restores.
    pub before_call: std::cell::Cell<Option<bool>>,
}

#[derive(Debug)]
pub struct RangeObj {
    pub start: i64,
    pub stop: i64,
    pub step: i64,
}

impl RangeObj {
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len(&self) -> i64 {
        let (a, b, s) = (self.start as i128, self.stop as i128, self.step as i128);
        let n = if s > 0 {
            if b > a {
                (b - a + s - 1) / s
            } else {
                0
            }
        } else if a > b {
            (a - b - s - 1) / (-s)
        } else {
            0
        };
        n as i64
    }
    pub fn get(&self, i: i64) -> i64 {
        self.start + i * self.step
    }
}

/// A Kiln function value: the resolved code plus what was captured at `def` time.
#[derive(Debug)]
pub struct Function {
    pub proto: Rc<FuncProto>,
    pub defaults: Vec<Value>,
    pub kwdefaults: Vec<Option<Value>>,
    /// One entry per captured name: a `Value::Cell`, or the value itself for a variable
    /// its defining function never rebinds (no cell needed).
    pub closure: Vec<Value>,
    pub globals: Rc<ModuleObj>,
    /// The class whose body defined this function (for zero-argument `super()`).
    pub owner: RefCell<Option<std::rc::Weak<Class>>>,
    /// Attributes set on the function (`f.__wrapped__ = g`, `functools.wraps`): they
    /// shadow the computed `__name__`/`__qualname__`/`__doc__`/`__module__`.
    /// (Boxed and absent until the first one: most functions never get any.)
    #[allow(clippy::box_collection)]
    pub attrs: RefCell<Option<Box<NameMap>>>,
    pub gc: GcHeader,
}

impl Function {
    /// The docstring: the body's first statement when it is a string literal.
    pub fn doc(&self) -> Value {
        use super::tree::{ExKind, StKind};
        match self.proto.body.first().map(|s| &s.kind) {
            Some(StKind::Expr(e)) => match &e.kind {
                ExKind::Const(v @ Value::Str(_)) if !self.proto.is_lambda => v.clone(),
                _ => Value::None,
            },
            _ => Value::None,
        }
    }
}

/// A built-in function implemented in Rust.
pub type NativeImpl = fn(&mut super::Interp, &[Value], &[(Rc<str>, Value)]) -> super::R<Value>;

/// A host (embedding) closure behind `Engine::register_fn`: positional arguments in,
/// a value or an exception out.
pub type HostImpl = Box<dyn FnMut(&[Value]) -> super::R<Value>>;

/// The code of a native function: a builtin's fn pointer or a host closure.
pub enum NativeCode {
    Builtin(NativeImpl),
    Host(RefCell<HostImpl>),
}

pub struct NativeFn {
    pub name: Rc<str>,
    pub code: NativeCode,
}

impl std::fmt::Debug for NativeFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<built-in function {}>", self.name)
    }
}

/// What kind of class this is: user-defined, a built-in exception, or a built-in type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassKind {
    User,
    Exc(ErrorKind),
    Builtin(TypeTag),
}

/// The built-in types that are also callable class objects (`int`, `list`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeTag {
    Object,
    NoneType,
    Bool,
    Int,
    Float,
    Str,
    List,
    Tuple,
    Size,
    Dict,
    Set,
    FrozenSet,
    Range,
    Slice,
    Function,
    BuiltinFunction,
    Method,
    Type,
    Module,
    Iterator,
    Super,
    Ellipsis,
    NotImplementedType,
    Tensor,
    DType,
    GradMode,
    GradFn,
    Generator,
}

#[derive(Debug)]
pub struct Class {
    pub name: Rc<str>,
    /// The first base class (`None`: `object`).
    pub base: Option<Rc<Class>>,
    /// The method resolution order after this class (C3 over all bases), without
    /// `object`: `C.__mro__` is `(C, *mro, object)`.
    pub mro: Vec<Rc<Class>>,
    pub dict: RefCell<NameMap>,
    pub kind: ClassKind,
    pub gc: GcHeader,
    /// Memoized lookups of fixed names (see `lookup_static`).
    pub methods: super::method_cache::MethodCache,
    /// The root of its instances' layout tree (shared with its first base's).
    pub layout: Rc<Layout>,
}

/// A class going away invalidates the inline caches (`SiteCache`), which know classes
/// by address: a new class at the same address is then never mistaken for it.
impl Drop for Class {
    fn drop(&mut self) {
        super::method_cache::classes_changed();
    }
}

impl Class {
    /// Finds an attribute in this class or its bases.
    pub fn lookup(&self, name: &str) -> Option<Value> {
        if let Some(v) = self.dict.borrow().get(name) {
            return Some(v.clone());
        }
        for k in &self.mro {
            if let Some(v) = k.dict.borrow().get(name) {
                return Some(v.clone());
            }
        }
        None
    }

    /// `lookup` of a fixed name (`__init__`, operator dunders), memoized per class until
    /// some class dict changes.
    #[inline]
    pub fn lookup_static(&self, name: &'static str) -> Option<Value> {
        if let Some(v) = self.methods.get(name) {
            return v;
        }
        let v = self.lookup(name);
        self.methods.put(name, v.clone());
        v
    }

    /// How instances hash and compare as dict keys (memoized until a class changes).
    #[inline]
    pub fn key_flags(&self) -> super::method_cache::KeyFlags {
        match self.methods.key_flags() {
            Some(f) => f,
            None => self.find_key_flags(),
        }
    }

    #[cold]
    fn find_key_flags(&self) -> super::method_cache::KeyFlags {
        let h = self.lookup("__hash__");
        let f = super::method_cache::KeyFlags {
            user_hash: matches!(&h, Some(v) if !matches!(v, Value::None)),
            unhashable: matches!(h, Some(Value::None)),
            user_eq: self.lookup("__eq__").is_some(),
        };
        self.methods.set_key_flags(f);
        f
    }

    /// True when `self` is `other` or derives from it.
    pub fn is_subclass(self: &Rc<Class>, other: &Rc<Class>) -> bool {
        if other.kind == ClassKind::Builtin(TypeTag::Object) {
            return true;
        }
        Rc::ptr_eq(self, other) || self.mro.iter().any(|k| Rc::ptr_eq(k, other))
    }

    /// The built-in exception kind this class is or derives from.
    pub fn exc_kind(&self) -> Option<ErrorKind> {
        if let ClassKind::Exc(k) = self.kind {
            return Some(k);
        }
        self.mro.iter().find_map(|k| match k.kind {
            ClassKind::Exc(e) => Some(e),
            _ => None,
        })
    }
}

#[derive(Debug)]
pub struct Instance {
    pub class: Rc<Class>,
    /// Its attributes (read and written through `Instance::attr` and friends, or
    /// `Attrs`' hinted accessors on the interpreter's hot paths).
    pub attrs: RefCell<Attrs>,
    /// The last result of the class's own `__hash__` (set by `Interp::key` before every
    /// map lookup with this instance), or none: the instance hashes by identity.
    pub hash: super::keys::UserHash,
    pub gc: GcHeader,
}

/// A module: a table of global slots, indexed by name.
#[derive(Debug)]
pub struct ModuleObj {
    pub name: Rc<str>,
    pub index: RefCell<IndexMap<Rc<str>, u32, FxBuild>>,
    pub slots: RefCell<Vec<Value>>,
    /// The directory of the module's file (for imports), if it came from disk.
    pub dir: RefCell<Option<std::path::PathBuf>>,
    pub gc: GcHeader,
}

impl ModuleObj {
    pub fn new(name: &str, dir: Option<std::path::PathBuf>) -> ModuleObj {
        ModuleObj {
            name: name.into(),
            index: RefCell::new(IndexMap::default()),
            slots: RefCell::new(Vec::new()),
            dir: RefCell::new(dir),
            gc: GcHeader::default(),
        }
    }

    /// The slot index of a global name, creating an unbound slot if new.
    pub fn intern(&self, name: &Rc<str>) -> u32 {
        let mut idx = self.index.borrow_mut();
        if let Some(i) = idx.get(name) {
            return *i;
        }
        let i = idx.len() as u32;
        idx.insert(name.clone(), i);
        self.slots.borrow_mut().push(Value::Unbound);
        i
    }

    pub fn get(&self, name: &str) -> Option<Value> {
        let i = *self.index.borrow().get(name)?;
        match self.slots.borrow().get(i as usize) {
            Some(Value::Unbound) | None => None,
            Some(v) => Some(v.clone()),
        }
    }

    pub fn set(&self, name: &Rc<str>, v: Value) {
        let i = self.intern(name);
        if let Some(s) = self.slots.borrow_mut().get_mut(i as usize) {
            *s = v;
        }
    }

    /// All bound names and values, in definition order.
    pub fn items(&self) -> Vec<(Rc<str>, Value)> {
        let slots = self.slots.borrow();
        self.index
            .borrow()
            .iter()
            .filter_map(|(k, i)| match slots.get(*i as usize) {
                Some(Value::Unbound) | None => None,
                Some(v) => Some((k.clone(), v.clone())),
            })
            .collect()
    }
}

/// Iterator state for `iter()` and the iterator-producing builtins.
#[derive(Debug)]
pub enum IterObj {
    Seq {
        items: Rc<[Value]>,
        pos: usize,
    },
    List {
        list: Rc<RefCell<Vec<Value>>>,
        pos: usize,
    },
    Range {
        cur: i64,
        stop: i64,
        step: i64,
    },
    Enumerate {
        inner: Value,
        count: i64,
    },
    Zip(Vec<Value>),
    Map {
        func: Value,
        iters: Vec<Value>,
    },
    Filter {
        func: Value,
        inner: Value,
    },
    /// An instance with `__next__`.
    User(Value),
    /// A generator (its state lives in the `Generator`).
    Gen(Rc<super::gen::Generator>),
    /// `progress(iterable)`: the inner iterator and its bar.
    Progress(Box<super::builtins::progress::ProgressState>),
    Done,
}

/// A hashable dict/set key with Python's equality rules (`1 == 1.0 == True`).
#[derive(Clone, Debug)]
pub struct Key(pub Value);

/// Tuples nested deeper than this are not hashable (`RecursionError`), so hashing and
/// comparing keys (which recurse) stay shallow on the native stack.
pub const MAX_KEY_DEPTH: usize = 1000;

impl Key {
    /// Wraps a value as a key: `TypeError` if it is unhashable, `RecursionError` for
    /// tuples nested deeper than [`MAX_KEY_DEPTH`].
    pub fn new(v: Value) -> super::R<Key> {
        let v = match super::capture::symint::has_sym(&v) {
            true => super::capture::symint::concrete(&v),
            false => v,
        };
        Key::check(&v, 0)?;
        Ok(Key(v))
    }

    fn check(v: &Value, depth: usize) -> super::R<()> {
        let unhashable = |t: &str| super::type_err(format!("unhashable type: '{t}'"));
        match v {
            Value::List(_) => Err(unhashable("list")),
            Value::Dict(_) => Err(unhashable("dict")),
            Value::Set(_) => Err(unhashable("set")),
            Value::Slice(_) => Err(unhashable("slice")),
            Value::Instance(i) if i.class.key_flags().unhashable => Err(unhashable(&i.class.name)),
            Value::Tuple(_) | Value::Size(_) if depth >= MAX_KEY_DEPTH => Err(super::err(
                ErrorKind::RecursionError,
                "maximum recursion depth exceeded while getting the hash of a tuple",
            )),
            Value::Tuple(t) | Value::Size(t) => t.iter().try_for_each(|x| Key::check(x, depth + 1)),
            _ => Ok(()),
        }
    }
}

/// A key feeds its map's hasher its Python hash (see `pyhash`).
impl Hash for Key {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_i64(super::pyhash::value(&self.0, 0))
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        simple_eq(&self.0, &other.0)
    }
}
impl Eq for Key {}

/// Equality without user `__eq__` (identity for objects): used for dict keys.
pub fn simple_eq(a: &Value, b: &Value) -> bool {
    use Value::*;
    match (a, b) {
        (None, None) | (Ellipsis, Ellipsis) | (NotImplemented, NotImplemented) => true,
        (Int(x), Int(y)) => x == y,
        (Float(x), Float(y)) => x == y,
        (Int(x), Float(y)) | (Float(y), Int(x)) => (*x as f64) == *y && int_float_eq(*x, *y),
        (Bool(x), Bool(y)) => x == y,
        (Bool(x), Int(y)) | (Int(y), Bool(x)) => (*x as i64) == *y,
        (Bool(x), Float(y)) | (Float(y), Bool(x)) => (*x as i64 as f64) == *y,
        (Str(x), Str(y)) => x == y,
        (Tuple(x) | Size(x), Tuple(y) | Size(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| simple_eq(p, q))
        }
        (FrozenSet(x), FrozenSet(y)) | (FrozenSet(x), Set(y)) | (Set(x), FrozenSet(y)) => {
            match (x.try_borrow(), y.try_borrow()) {
                (Ok(x), Ok(y)) => x.len() == y.len() && x.keys().all(|k| y.contains_key(k)),
                _ => false,
            }
        }
        (DType(x), DType(y)) => x == y,
        (DType(d), Class(c)) | (Class(c), DType(d)) => is_bool_dtype(*d, c),
        _ => a.ptr_id() != 0 && a.ptr_id() == b.ptr_id(),
    }
}

/// `t.dtype == bool`: the bool class names the bool dtype.
pub fn is_bool_dtype(d: crate::tensor::DType, c: &Class) -> bool {
    d == crate::tensor::DType::Bool && c.kind == ClassKind::Builtin(TypeTag::Bool)
}

/// Exact int/float equality (no rounding of large ints).
pub fn int_float_eq(i: i64, f: f64) -> bool {
    f.fract() == 0.0 && (-9.223372036854776e18..9.223372036854776e18).contains(&f) && f as i64 == i
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(s.into())
    }

    pub fn list(v: Vec<Value>) -> Value {
        let l = Rc::new(RefCell::new(v));
        crate::compile::capture::trace::note_created(Rc::as_ptr(&l) as usize);
        super::gc::track_list(&l);
        Value::List(l)
    }

    pub fn tuple(v: Vec<Value>) -> Value {
        Value::Tuple(v.into())
    }

    /// The items of a tuple or of a `torch.Size` (a tuple subclass).
    #[inline]
    pub fn tuple_items(&self) -> Option<&Rc<[Value]>> {
        match self {
            Value::Tuple(t) | Value::Size(t) => Some(t),
            _ => None,
        }
    }

    /// A fresh dict (tracked by the cycle collector).
    pub fn dict(m: DictMap) -> Value {
        let d = Rc::new(RefCell::new(m));
        super::gc::track_dict(&d);
        Value::Dict(d)
    }

    /// A fresh set (tracked by the cycle collector).
    pub fn set(m: DictMap) -> Value {
        let d = Rc::new(RefCell::new(m));
        super::gc::track_set(&d);
        Value::Set(d)
    }

    /// A fresh frozenset (tracked by the cycle collector as a set).
    pub fn frozenset(m: DictMap) -> Value {
        let d = Rc::new(RefCell::new(m));
        super::gc::track_set(&d);
        Value::FrozenSet(d)
    }

    /// The members of a set or frozenset.
    pub fn set_members(&self) -> Option<&Rc<RefCell<DictMap>>> {
        match self {
            Value::Set(d) | Value::FrozenSet(d) => Some(d),
            _ => None,
        }
    }

    /// The address of a heap object (0 for unboxed values): used for `id` and `is`.
    pub fn ptr_id(&self) -> usize {
        use Value::*;
        match self {
            Str(s) => Rc::as_ptr(s) as *const u8 as usize,
            List(x) => Rc::as_ptr(x) as usize,
            Tuple(x) | Size(x) => Rc::as_ptr(x) as *const u8 as usize,
            Dict(x) | Set(x) | FrozenSet(x) => Rc::as_ptr(x) as usize,
            Range(x) => Rc::as_ptr(x) as usize,
            Slice(x) => Rc::as_ptr(x) as usize,
            Func(x) => Rc::as_ptr(x) as usize,
            Native(x) => Rc::as_ptr(x) as usize,
            BoundMethod(x) => Rc::as_ptr(x) as usize,
            BuiltinMethod(x) => Rc::as_ptr(x) as usize,
            Class(x) => Rc::as_ptr(x) as usize,
            Instance(x) => Rc::as_ptr(x) as usize,
            Module(x) => Rc::as_ptr(x) as usize,
            Iter(x) => Rc::as_ptr(x) as usize,
            Super(x) => Rc::as_ptr(x) as usize,
            Cell(x) => Rc::as_ptr(x) as usize,
            Tensor(t) => t.id(),
            Compiled(x) => Rc::as_ptr(x) as usize,
            Graph(x) => Rc::as_ptr(x) as usize,
            GradMode(x) => Rc::as_ptr(x) as usize,
            GradFn(g) => g.ptr_id(),
            None | Bool(_) | Int(_) | SymInt(_) | Float(_) | SymFloat(_) | Ellipsis
            | NotImplemented | DType(_) | Unbound => 0,
        }
    }

    /// Python's `is`.
    pub fn is(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (None, None) | (Ellipsis, Ellipsis) | (NotImplemented, NotImplemented) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => a.to_bits() == b.to_bits(),
            (DType(a), DType(b)) => a == b,
            _ => {
                let p = self.ptr_id();
                p != 0 && p == other.ptr_id()
            }
        }
    }

    /// The Python type name (`int`, `list`, a class name for instances).
    pub fn type_name(&self) -> Rc<str> {
        use Value::*;
        let s = match self {
            None => "NoneType",
            Bool(_) => "bool",
            Int(_) | SymInt(_) => "int",
            Float(_) | SymFloat(_) => "float",
            Str(_) => "str",
            List(_) => "list",
            Tuple(_) => "tuple",
            Size(_) => "torch.Size",
            Dict(_) => "dict",
            Set(_) => "set",
            FrozenSet(_) => "frozenset",
            Range(_) => "range",
            Slice(_) => "slice",
            Ellipsis => "ellipsis",
            NotImplemented => "NotImplementedType",
            Func(_) | Compiled(_) => "function",
            Native(_) => "builtin_function_or_method",
            BoundMethod(_) | BuiltinMethod(_) => "method",
            Class(_) => "type",
            Instance(i) => return i.class.name.clone(),
            Module(_) => "module",
            Iter(it) => match it.try_borrow().as_deref() {
                Ok(IterObj::Gen(_)) => "generator",
                _ => "iterator",
            },
            Super(_) => "super",
            Tensor(_) => "Tensor",
            Graph(_) => "Graph",
            DType(_) => "dtype",
            GradFn(g) => return g.class_name().into(),
            GradMode(g) => {
                if g.enable {
                    "enable_grad"
                } else {
                    "no_grad"
                }
            }
            Cell(_) | Unbound => "cell",
        };
        s.into()
    }
}

impl Value {
    /// A clone that copies scalars inline and calls the out-of-line `clone` only for
    /// heap objects (the derived `clone` is too big to inline on hot paths).
    #[inline(always)]
    pub fn fast_clone(&self) -> Value {
        match self {
            Value::Int(i) => Value::Int(*i),
            Value::Float(f) => Value::Float(*f),
            Value::Bool(b) => Value::Bool(*b),
            Value::None => Value::None,
            other => other.clone(),
        }
    }

    /// True when the value owns no heap object (dropping it is a no-op).
    #[inline(always)]
    pub fn is_plain(&self) -> bool {
        matches!(
            self,
            Value::None
                | Value::Bool(_)
                | Value::Int(_)
                | Value::Float(_)
                | Value::Ellipsis
                | Value::NotImplemented
                | Value::Unbound
        )
    }

    /// Stores `v` into `slot`; the old value's drop glue runs only if it owns something.
    #[inline(always)]
    pub fn set_slot(slot: &mut Value, v: Value) {
        discard(std::mem::replace(slot, v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_and_results_stay_three_words() {
        // the hot paths move `Value`s and `R<Value>`s by the million: the explicit
        // layout must keep the tag niche (no extra word for `Result`/`Option`)
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::size_of::<crate::interp::R<Value>>(), 24);
        assert_eq!(std::mem::size_of::<Option<Value>>(), 24);
        // `Flow` carries no value: a statement's result fits two registers
        assert_eq!(
            std::mem::size_of::<crate::interp::R<crate::interp::Flow>>(),
            16
        );
    }
}
