//! Tab-completion candidates: globals, builtins, keywords, `obj.attr` chains, commands.

use super::highlight::KEYWORDS;
use kiln::Engine;

/// The REPL's `:` commands, for completion and `:help`.
pub const COMMANDS: &[&str] = &[
    ":graph", ":help", ":load", ":quit", ":reset", ":time", ":vars",
];

/// Indentation inserted by TAB at the start of a line.
pub const INDENT: &str = "    ";

/// Completes the word before byte `pos` of `line`: returns where the replaced text starts
/// and the sorted candidates.
pub fn complete(engine: &Engine, line: &str, pos: usize) -> (usize, Vec<String>) {
    let Some(before) = line.get(..pos) else {
        return (pos, Vec::new());
    };
    if before.trim().is_empty() {
        return (pos, vec![INDENT.to_string()]);
    }
    if before.starts_with(':') && !before.contains(char::is_whitespace) {
        return (0, filter(COMMANDS.iter().map(|c| c.to_string()), before));
    }
    let start = before
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .map_or(0, |i| {
            i + before[i..].chars().next().map_or(1, char::len_utf8)
        });
    let word = &before[start..];
    match word.rsplit_once('.') {
        Some((path, partial)) => {
            let names = resolve(engine, path)
                .map(|v| engine.attr_names(&v))
                .unwrap_or_default();
            (pos - partial.len(), filter(names.into_iter(), partial))
        }
        None if word.starts_with(|c: char| c.is_ascii_digit()) => (pos, Vec::new()),
        None => (start, filter(names(engine).into_iter(), word)),
    }
}

/// Every name visible at the top level: keywords, builtins and globals.
fn names(engine: &Engine) -> Vec<String> {
    let mut all: Vec<String> = KEYWORDS.iter().map(|k| k.to_string()).collect();
    all.extend(engine.builtin_names());
    all.extend(engine.globals().into_iter().map(|(k, _)| k));
    all
}

/// The value of a dotted name path (`a`, `m.sub.obj`), found without running code.
pub(crate) fn resolve(engine: &Engine, path: &str) -> Option<kiln::Value> {
    let mut parts = path.split('.');
    let first = parts.next().filter(|p| !p.is_empty())?;
    let mut v = engine.get_global(first)?;
    for p in parts {
        v = engine.peek_attr(&v, p)?;
    }
    Some(v)
}

/// The names starting with `prefix`, sorted, deduplicated; names starting with `_` only
/// when the prefix does.
fn filter(names: impl Iterator<Item = String>, prefix: &str) -> Vec<String> {
    let mut out: Vec<String> = names
        .filter(|n| n.starts_with(prefix) && (prefix.starts_with('_') || !n.starts_with('_')))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(src: &str) -> Engine {
        let mut e = Engine::new();
        if let Err(err) = e.eval(src) {
            panic!("setup failed: {}", e.render_error(&err));
        }
        e
    }

    #[test]
    fn globals_builtins_and_keywords() {
        // (prefixes no builtin shares: `count_nonzero` and `unique` are globals)
        let e = engine("my_counter = 1\nmy_count_all = 2\n");
        assert_eq!(
            complete(&e, "x = my_coun", 11),
            (4, vec!["my_count_all".into(), "my_counter".into()])
        );
        assert_eq!(complete(&e, "pri", 3), (0, vec!["print".into()]));
        assert_eq!(complete(&e, "whi", 3), (0, vec!["while".into()]));
    }

    #[test]
    fn attributes_of_instances_classes_and_builtin_values() {
        let src = "class P:\n    k = 0\n    def norm(self): return 1\nclass Q(P):\n    def __init__(self): self.nx = 2\nq = Q()\nxs = [1]\n";
        let e = engine(src);
        assert_eq!(
            complete(&e, "q.n", 3),
            (2, vec!["norm".into(), "nx".into()])
        );
        assert_eq!(complete(&e, "Q.k", 3), (2, vec!["k".into()]));
        assert_eq!(complete(&e, "q.__in", 6).1, vec!["__init__".to_string()]);
        assert_eq!(complete(&e, "xs.app", 6), (3, vec!["append".into()]));
        assert!(complete(&e, "q.", 2).1.iter().all(|n| !n.starts_with('_')));
        assert_eq!(complete(&e, "nothere.x", 9).1, Vec::<String>::new());
    }

    #[test]
    fn module_members_commands_and_indent() {
        let e = engine("import math\n");
        assert!(complete(&e, "math.sq", 7).1.contains(&"sqrt".to_string()));
        assert_eq!(complete(&e, ":ti", 3), (0, vec![":time".into()]));
        assert_eq!(complete(&e, "    ", 4), (4, vec![INDENT.to_string()]));
        assert_eq!(complete(&e, "1.", 2).1, Vec::<String>::new());
    }
}
