//! A small team of helper threads for the medium-sized parallel work of a training step
//! (gemm products of ~1-15M multiply-adds, fused kernels of ~64k-1M elements), where a
//! rayon region's cost is mostly synchronisation: the calling thread is not a rayon
//! worker, so every region wakes a worker and puts the caller to sleep on a latch.
//!
//! Here the calling thread runs tasks itself, next to the helpers (one per further
//! thread of rayon's pool size), which claim tasks from an atomic counter. An idle
//! helper spins (with a yield now and then) for `SPIN` before it parks, longer
//! (`BUSY_SPIN`) while a [`Busy`] guard is alive (a compiled run: its parallel regions
//! follow each other within microseconds), so a region costs a cache-line exchange, not
//! a wake-up. A descheduled helper holds up only the task it claimed; the caller claims
//! the rest. Calls from several threads at once, or from inside a task, run inline.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// How long an idle helper spins (outside a [`Busy`] run) before it parks.
const SPIN: Duration = Duration::from_micros(200);

/// How long an idle helper spins during a [`Busy`] run before it parks (a run's
/// parallel regions follow each other closer than this; a run without any, such as a
/// recurrent network's small steps, does not keep a helper spinning).
const BUSY_SPIN: Duration = Duration::from_millis(2);

/// Spin iterations between two `yield_now` calls of a waiting thread (be fair to the
/// other processes of a shared machine).
const YIELD_EVERY: u32 = 256;

/// One parallel region: `tasks` calls of `f`, claimed through `next`.
struct Job<'a> {
    f: &'a (dyn Fn(usize) + Sync),
    tasks: usize,
    next: AtomicUsize,
    done: AtomicUsize,
    panic: AtomicBool,
}

impl Job<'_> {
    /// Claims and runs tasks until none is left (a panicking task counts as done).
    fn work(&self) {
        loop {
            let t = self.next.fetch_add(1, Ordering::Relaxed);
            if t >= self.tasks {
                return;
            }
            if catch_unwind(AssertUnwindSafe(|| (self.f)(t))).is_err() {
                self.panic.store(true, Ordering::Relaxed);
            }
            self.done.fetch_add(1, Ordering::Release);
        }
    }
}

struct Team {
    /// The current job (null when none); valid while `inside` counts a helper in it.
    job: AtomicPtr<Job<'static>>,
    /// Bumped at each published job: a helper compares it with the last one it saw.
    epoch: AtomicU64,
    /// Helpers between reading `job` and leaving it.
    inside: AtomicUsize,
    /// Helpers parked or about to park.
    sleeping: AtomicUsize,
    /// Held by the thread whose job is published (others run inline).
    owner: AtomicBool,
    /// Open [`Busy`] guards: helpers keep spinning.
    busy: AtomicUsize,
    helpers: Vec<Thread>,
}

static TEAM: OnceLock<Team> = OnceLock::new();

thread_local! {
    /// Set on helper threads: a task never starts a nested region.
    static IS_HELPER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Set on a caller while it runs the tasks of the region it shares with the helpers.
    static SHARING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread runs a task of a shared region (a nested region then runs
/// inline, one task after another: worth splitting work for only outside one).
pub fn in_task() -> bool {
    IS_HELPER.with(|h| h.get()) || SHARING.with(|s| s.get())
}

fn team() -> &'static Team {
    TEAM.get_or_init(|| {
        let want = rayon::current_num_threads().saturating_sub(1);
        let mut helpers = Vec::new();
        for k in 0..want {
            let spawned = thread::Builder::new()
                .name(format!("kiln-team-{k}"))
                .spawn(helper_loop);
            match spawned {
                Ok(h) => helpers.push(h.thread().clone()),
                Err(_) => break,
            }
        }
        Team {
            job: AtomicPtr::new(std::ptr::null_mut()),
            epoch: AtomicU64::new(0),
            inside: AtomicUsize::new(0),
            sleeping: AtomicUsize::new(0),
            owner: AtomicBool::new(false),
            busy: AtomicUsize::new(0),
            helpers,
        }
    })
}

/// The number of threads a region runs on: the caller and the helpers.
pub fn threads() -> usize {
    team().helpers.len() + 1
}

fn helper_loop() {
    IS_HELPER.with(|h| h.set(true));
    let t = team();
    // Epoch 0: the team's state before any job (a job published before this thread got
    // here is still seen, and joined if it is still running).
    let mut seen = 0;
    let mut idle_since = Instant::now();
    let mut spins = 0u32;
    loop {
        let now = t.epoch.load(Ordering::Acquire);
        if now != seen {
            seen = now;
            t.inside.fetch_add(1, Ordering::SeqCst);
            let p = t.job.load(Ordering::SeqCst);
            // SAFETY: a non-null job stays alive until `inside` drops to zero (the
            // publisher clears `job` and then waits for `inside` before returning).
            if let Some(job) = unsafe { p.as_ref() } {
                job.work();
            }
            t.inside.fetch_sub(1, Ordering::Release);
            idle_since = Instant::now();
            continue;
        }
        spins = spins.wrapping_add(1);
        if !spins.is_multiple_of(YIELD_EVERY) {
            std::hint::spin_loop();
            continue;
        }
        let busy = t.busy.load(Ordering::Relaxed) > 0;
        if idle_since.elapsed() < if busy { BUSY_SPIN } else { SPIN } {
            thread::yield_now();
            continue;
        }
        // Parked until the next job: its publisher unparks every helper when it sees
        // `sleeping` (both sides use SeqCst, so one of them sees the other's write).
        t.sleeping.fetch_add(1, Ordering::SeqCst);
        while t.epoch.load(Ordering::SeqCst) == seen {
            thread::park();
        }
        t.sleeping.fetch_sub(1, Ordering::SeqCst);
        idle_since = Instant::now();
    }
}

fn wake(t: &Team) {
    if t.sleeping.load(Ordering::SeqCst) > 0 {
        t.helpers.iter().for_each(Thread::unpark);
    }
}

/// Runs `f(0), ..., f(tasks - 1)` on the caller and the helpers; returns when all
/// have run. A task's panic is resumed on the caller after every task finished.
pub fn for_each(tasks: usize, f: &(dyn Fn(usize) + Sync)) {
    if !try_shared(tasks, f) {
        let job = Job::new(tasks, f);
        job.work();
        job.finish();
    }
}

impl<'a> Job<'a> {
    fn new(tasks: usize, f: &'a (dyn Fn(usize) + Sync)) -> Job<'a> {
        Job {
            f,
            tasks,
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            panic: AtomicBool::new(false),
        }
    }

    /// Resumes a task's panic on the caller.
    fn finish(&self) {
        if self.panic.load(Ordering::Relaxed) {
            resume_unwind(Box::new("a parallel task panicked"));
        }
    }
}

/// Runs the region with the helpers; false (nothing run) when it must run inline: a
/// single task, no helpers, a call from a task, or another thread's region running.
fn try_shared(tasks: usize, f: &(dyn Fn(usize) + Sync)) -> bool {
    let t = team();
    let inline = tasks < 2
        || t.helpers.is_empty()
        || IS_HELPER.with(|h| h.get())
        || t.owner
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err();
    if inline {
        return false;
    }
    let job = Job::new(tasks, f);
    let ptr = (&job as *const Job).cast_mut().cast::<Job<'static>>();
    t.job.store(ptr, Ordering::SeqCst);
    t.epoch.fetch_add(1, Ordering::SeqCst);
    wake(t);
    SHARING.with(|s| s.set(true));
    job.work();
    SHARING.with(|s| s.set(false));
    let mut spins = 0u32;
    while job.done.load(Ordering::Acquire) < tasks {
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(YIELD_EVERY) {
            thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
    // No helper may still read `job` once this returns: clear it, then wait for those
    // that loaded it.
    t.job.store(std::ptr::null_mut(), Ordering::SeqCst);
    while t.inside.load(Ordering::SeqCst) > 0 {
        std::hint::spin_loop();
    }
    t.owner.store(false, Ordering::Release);
    job.finish();
    true
}

/// While alive, idle helpers spin longer before parking: for a run of many parallel
/// regions in a row (a compiled training step). Parked helpers stay parked
/// until the next region (a run without parallel work costs one atomic add).
pub struct Busy(());

impl Busy {
    pub fn new() -> Busy {
        team().busy.fetch_add(1, Ordering::SeqCst);
        Busy(())
    }
}

impl Default for Busy {
    fn default() -> Self {
        Busy::new()
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        team().busy.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn every_task_runs_once_from_several_callers() {
        let callers: Vec<_> = (0..3)
            .map(|_| {
                thread::spawn(|| {
                    for tasks in [0usize, 1, 2, 3, 17, 64] {
                        let counts: Vec<AtomicU32> =
                            (0..tasks).map(|_| AtomicU32::new(0)).collect();
                        for_each(tasks, &|t| {
                            counts[t].fetch_add(1, Ordering::Relaxed);
                        });
                        assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
                    }
                })
            })
            .collect();
        for c in callers {
            assert!(c.join().is_ok());
        }
    }

    /// Task 0 waits for task 1: only a region that really runs on two threads finishes
    /// it (inline, task 0 would time out first).
    #[test]
    fn a_region_runs_on_two_threads() {
        if threads() < 2 {
            return;
        }
        let _busy = Busy::new();
        let other_ran = AtomicBool::new(false);
        let waited_ok = AtomicBool::new(false);
        let region = |t: usize| {
            if t == 1 {
                other_ran.store(true, Ordering::Release);
                return;
            }
            let t0 = Instant::now();
            while !other_ran.load(Ordering::Acquire) && t0.elapsed() < Duration::from_secs(20) {
                thread::yield_now();
            }
            waited_ok.store(other_ran.load(Ordering::Acquire), Ordering::Relaxed);
        };
        // Another test's region may hold the team for a moment.
        let t0 = Instant::now();
        while !try_shared(2, &region) {
            assert!(t0.elapsed() < Duration::from_secs(20));
            thread::sleep(Duration::from_millis(1));
        }
        assert!(waited_ok.load(Ordering::Relaxed));
    }

    #[test]
    fn a_panicking_task_reaches_the_caller_and_the_team_goes_on() {
        let ran = AtomicU32::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            for_each(8, &|t| {
                ran.fetch_add(1, Ordering::Relaxed);
                if t == 5 {
                    panic!("task 5");
                }
            })
        }));
        assert!(r.is_err());
        assert_eq!(ran.load(Ordering::Relaxed), 8);
        let after = AtomicU32::new(0);
        for_each(8, &|_| {
            after.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(after.load(Ordering::Relaxed), 8);
    }
}
