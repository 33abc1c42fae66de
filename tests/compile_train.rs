//! Whole training steps under `@compile` (tests/compile/train_step.dl, whose outputs
//! tests/compile_diff.rs compares with eager): every step function compiles exactly
//! once for its 20 steps, replays 19 times and never falls back (no eager version, no
//! graph break), i.e. the optimizer's Python state does not change between steps.

use kiln::compile::cache::EntryKind;
use kiln::{Engine, Value};
use std::path::Path;

#[test]
fn each_training_step_compiles_once_without_fallback() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compile/train_step.dl");
    let mut e = Engine::new();
    e.set_compile(true);
    e.set_output(Box::new(|_| {}));
    let res = e.run_file(&path);
    assert!(res.is_ok(), "train_step.dl failed");
    let mut seen = 0;
    for (name, v) in e.globals() {
        let Value::Compiled(cf) = &v else { continue };
        seen += 1;
        let c = cf.cache.borrow();
        assert_eq!(c.stats.captures, 1, "{name}: {:?}", c.stats);
        assert_eq!(c.stats.hits, 19, "{name}: {:?}", c.stats);
        assert_eq!(c.stats.fallbacks, 0, "{name}: {:?}", c.stats);
        assert_eq!(c.entries.len(), 1, "{name}");
        assert!(
            c.entries
                .iter()
                .all(|x| matches!(x.kind, EntryKind::Graph(_))),
            "{name} has an eager version"
        );
    }
    assert_eq!(seen, 5, "five compiled step functions");
}
