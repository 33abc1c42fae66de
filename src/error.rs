//! The one error type of Kiln: `Error { kind, message, span, traceback }`.

use crate::source::Span;
use std::fmt;
use std::rc::Rc;

/// The class of an error, named as the Python exception a script sees.
///
/// ```
/// let e = kiln::Engine::new().eval("{}['k']").unwrap_err();
/// assert_eq!(e.kind, kiln::ErrorKind::KeyError);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    SyntaxError,
    IndentationError,
    MemoryError,
    NameError,
    TypeError,
    ValueError,
    IndexError,
    KeyError,
    AttributeError,
    ZeroDivisionError,
    OverflowError,
    AssertionError,
    RuntimeError,
    /// torch.linalg.LinAlgError (a RuntimeError): a singular or not positive-definite
    /// matrix.
    LinAlgError,
    RecursionError,
    ShapeError,
    NotImplementedError,
    ImportError,
    StopIteration,
    /// Raised inside a generator by `close()`.
    GeneratorExit,
    /// A file-system or operating-system failure (open, read, write, rename).
    OSError,
    /// OSError subclasses raised by the Python-library file functions.
    FileNotFoundError,
    FileExistsError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
    /// `input()` at the end of its input.
    EOFError,
    /// `exit()` / `sys.exit()`.
    SystemExit,
    /// Ctrl-C or a host's interrupt handle.
    KeyboardInterrupt,
    /// A safety limit set by the embedding host was exceeded (operations, time, memory).
    LimitExceeded,
    /// A user-defined exception class (its name is in `Error::type_name`), or `Exception`.
    Exception,
}

impl ErrorKind {
    /// The Python-visible name of the class.
    ///
    /// ```
    /// assert_eq!(kiln::ErrorKind::ZeroDivisionError.name(), "ZeroDivisionError");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::SyntaxError => "SyntaxError",
            ErrorKind::IndentationError => "IndentationError",
            ErrorKind::MemoryError => "MemoryError",
            ErrorKind::NameError => "NameError",
            ErrorKind::TypeError => "TypeError",
            ErrorKind::ValueError => "ValueError",
            ErrorKind::IndexError => "IndexError",
            ErrorKind::KeyError => "KeyError",
            ErrorKind::AttributeError => "AttributeError",
            ErrorKind::ZeroDivisionError => "ZeroDivisionError",
            ErrorKind::OverflowError => "OverflowError",
            ErrorKind::AssertionError => "AssertionError",
            ErrorKind::RuntimeError => "RuntimeError",
            ErrorKind::LinAlgError => "LinAlgError",
            ErrorKind::RecursionError => "RecursionError",
            ErrorKind::ShapeError => "ShapeError",
            ErrorKind::NotImplementedError => "NotImplementedError",
            ErrorKind::ImportError => "ImportError",
            ErrorKind::StopIteration => "StopIteration",
            ErrorKind::GeneratorExit => "GeneratorExit",
            ErrorKind::OSError => "OSError",
            ErrorKind::FileNotFoundError => "FileNotFoundError",
            ErrorKind::FileExistsError => "FileExistsError",
            ErrorKind::PermissionError => "PermissionError",
            ErrorKind::IsADirectoryError => "IsADirectoryError",
            ErrorKind::NotADirectoryError => "NotADirectoryError",
            ErrorKind::EOFError => "EOFError",
            ErrorKind::SystemExit => "SystemExit",
            ErrorKind::KeyboardInterrupt => "KeyboardInterrupt",
            ErrorKind::LimitExceeded => "LimitExceeded",
            ErrorKind::Exception => "Exception",
        }
    }
}

/// One frame of a traceback: the function's name and the span being executed in it.
///
/// ```
/// let mut engine = kiln::Engine::new();
/// let e = engine.eval("def f():\n    return 1 / 0\nf()").unwrap_err();
/// let names: Vec<&str> = e.traceback.iter().map(|t| &*t.func).collect();
/// assert_eq!(names, ["<module>", "f"]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TraceFrame {
    pub func: Rc<str>,
    pub span: Span,
}

/// An error with its source location. Runtime errors also carry the traceback
/// (outermost frame first, innermost last, as Python prints it).
///
/// ```
/// let e = kiln::Engine::new().eval("raise ValueError('bad lr')").unwrap_err();
/// assert_eq!(e.kind, kiln::ErrorKind::ValueError);
/// assert_eq!(e.message, "bad lr");
/// assert_eq!(e.to_string(), "ValueError: bad lr");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub kind: ErrorKind,
    /// The class name shown to the user: `kind.name()` except for user-defined classes.
    pub type_name: Rc<str>,
    pub message: String,
    pub span: Option<Span>,
    pub traceback: Vec<TraceFrame>,
}

impl Error {
    /// An error of class `kind` (what a host function returns to raise it in the script).
    ///
    /// ```
    /// use kiln::{Error, ErrorKind};
    /// let e = Error::new(ErrorKind::ValueError, "negative input", None);
    /// assert_eq!(e.to_string(), "ValueError: negative input");
    /// ```
    pub fn new(kind: ErrorKind, message: impl Into<String>, span: Option<Span>) -> Error {
        Error {
            kind,
            type_name: kind.name().into(),
            message: message.into(),
            span,
            traceback: Vec::new(),
        }
    }

    /// A `SyntaxError` at `span`.
    ///
    /// ```
    /// let span = kiln::Span::new(kiln::FileId(0), 0, 1);
    /// assert_eq!(kiln::Error::syntax("bad", span).kind, kiln::ErrorKind::SyntaxError);
    /// ```
    pub fn syntax(message: impl Into<String>, span: Span) -> Error {
        Error::new(ErrorKind::SyntaxError, message, Some(span))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "{}", self.type_name)
        } else {
            write!(f, "{}: {}", self.type_name, self.message)
        }
    }
}

impl std::error::Error for Error {}

/// The result of every fallible embedding call.
///
/// ```
/// fn area(engine: &mut kiln::Engine) -> kiln::Result<f64> {
///     engine.eval_as("3.0 * 2.0 ** 2")
/// }
/// assert_eq!(area(&mut kiln::Engine::new()).unwrap(), 12.0);
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;
