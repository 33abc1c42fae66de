//! The matching engine behind `re`: the linear-time `regex` crate for every pattern it
//! accepts, `fancy-regex` (backtracking, with a step limit) only for patterns that need
//! backreferences or lookaround. A match is reported as byte spans per group.

use regex::RegexBuilder;

/// The flags a pattern is compiled with.
#[derive(Clone, Copy)]
pub struct Flags {
    pub ignore_case: bool,
    pub multi_line: bool,
    pub dot_all: bool,
    pub verbose: bool,
    pub unicode: bool,
}

/// Backtracking steps one `fancy-regex` search may take before it gives up (a
/// catastrophic pattern raises instead of hanging).
const BACKTRACK_LIMIT: usize = 1_000_000;

/// The byte span of each group (`None`: the group did not take part).
pub type Spans = Vec<Option<(usize, usize)>>;

/// A compiled pattern.
pub enum Engine {
    Linear(regex::Regex),
    Backtracking(fancy_regex::Regex),
}

/// Why a search failed: the backtracking engine hit its limit.
#[derive(Debug)]
pub struct Exhausted(pub String);

impl Engine {
    /// Compiles `src`: with `regex`, or with `fancy-regex` when `regex` refuses the
    /// pattern (backreferences, `(?P=name)`, lookaround). The error is `regex`'s
    /// message when both refuse.
    pub fn new(src: &str, f: Flags) -> Result<Engine, String> {
        let linear = RegexBuilder::new(src)
            .case_insensitive(f.ignore_case)
            .multi_line(f.multi_line)
            .dot_matches_new_line(f.dot_all)
            .ignore_whitespace(f.verbose)
            .unicode(f.unicode)
            .build();
        let first = match linear {
            Ok(r) => return Ok(Engine::Linear(r)),
            Err(e) => e.to_string(),
        };
        fancy_regex::RegexBuilder::new(src)
            .case_insensitive(f.ignore_case)
            .multi_line(f.multi_line)
            .dot_matches_new_line(f.dot_all)
            .ignore_whitespace(f.verbose)
            .unicode_mode(f.unicode)
            .backtrack_limit(BACKTRACK_LIMIT)
            .build()
            .map(Engine::Backtracking)
            .map_err(|_| first)
    }

    /// Group names, group 0 first.
    pub fn names(&self) -> Vec<Option<String>> {
        match self {
            Engine::Linear(r) => r.capture_names().map(|n| n.map(String::from)).collect(),
            Engine::Backtracking(r) => r.capture_names().map(|n| n.map(String::from)).collect(),
        }
    }

    /// The number of groups, group 0 included.
    pub fn captures_len(&self) -> usize {
        match self {
            Engine::Linear(r) => r.captures_len(),
            Engine::Backtracking(r) => r.captures_len(),
        }
    }

    /// The first match at or after byte `start` of `hay`.
    pub fn captures_at(&self, hay: &str, start: usize) -> Result<Option<Spans>, Exhausted> {
        match self {
            Engine::Linear(r) => Ok(r.captures_at(hay, start).map(|c| {
                (0..c.len())
                    .map(|i| c.get(i).map(|m| (m.start(), m.end())))
                    .collect()
            })),
            Engine::Backtracking(r) => match r.captures_from_pos(hay, start) {
                Ok(c) => Ok(c.map(|c| {
                    (0..c.len())
                        .map(|i| c.get(i).map(|m| (m.start(), m.end())))
                        .collect()
                })),
                Err(e) => Err(Exhausted(e.to_string())),
            },
        }
    }

    /// Every non-overlapping match, left to right.
    pub fn captures_all(&self, hay: &str) -> Result<Vec<Spans>, Exhausted> {
        match self {
            Engine::Linear(r) => Ok(r
                .captures_iter(hay)
                .map(|c| {
                    (0..c.len())
                        .map(|i| c.get(i).map(|m| (m.start(), m.end())))
                        .collect()
                })
                .collect()),
            Engine::Backtracking(r) => {
                let mut out = Vec::new();
                for c in r.captures_iter(hay) {
                    let c = c.map_err(|e| Exhausted(e.to_string()))?;
                    out.push(
                        (0..c.len())
                            .map(|i| c.get(i).map(|m| (m.start(), m.end())))
                            .collect(),
                    );
                }
                Ok(out)
            }
        }
    }
}
