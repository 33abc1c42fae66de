//! Build script: generates the parser from grammar/kiln.lalrpop.
fn main() {
    lalrpop::Configuration::new()
        .set_in_dir("grammar")
        .emit_rerun_directives(true)
        .process()
        .expect("lalrpop failed to process grammar/");
}
