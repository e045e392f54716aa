//! Running the table: every case on one environment, with the fd and live-object
//! counts checked around each, and a summary line.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Mutex;

use crate::env::Env;
use crate::matrix::*;
use crate::support::watchdog;
use crate::support::*;

struct Summary {
    ran: usize,
    skipped: usize,
    failures: Vec<String>,
}

/// Where the last panic of a case happened (the default hook's backtraces would be
/// slow and long; failures are listed at the end instead).
static PANIC_AT: Mutex<String> = Mutex::new(String::new());

fn run(env: &Env, m: &Matrix) -> Summary {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        *PANIC_AT.lock().unwrap_or_else(|p| p.into_inner()) = at;
    }));
    let s = run_cases(env, m);
    std::panic::set_hook(hook);
    s
}

fn run_cases(env: &Env, m: &Matrix) -> Summary {
    let mut s = Summary {
        ran: 0,
        skipped: 0,
        failures: Vec::new(),
    };
    for (&name, entry) in &m.entries {
        for case in &entry.cases {
            if verbose() {
                println!("  {name} [{}]", case.label);
            }
            watchdog::note(format!(
                "misuse case {name} [{}] on a {}",
                case.label,
                env.name()
            ));
            env.fresh_commands();
            let (fds, objects) = (fd_count(), live_counts());
            let call = Call {
                env,
                name,
                says: None,
            };
            match catch_unwind(AssertUnwindSafe(|| (case.run)(&call))) {
                Ok(Ran) => s.ran += 1,
                Ok(Skipped(why)) => {
                    s.skipped += 1;
                    if verbose() {
                        println!("    skipped: {why}");
                    }
                }
                Err(p) => {
                    let what = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    let at = PANIC_AT.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    s.failures
                        .push(format!("{name} [{}] ({at}): {what}", case.label));
                    continue;
                }
            }
            let (fds_after, objects_after) = (fd_count(), live_counts());
            if fds_after != fds || objects_after != objects {
                s.failures.push(format!(
                    "{name} [{}]: leaked: fds {fds} -> {fds_after}, live objects {objects:?} -> {objects_after:?}",
                    case.label
                ));
            }
        }
    }
    s
}

pub fn run_and_report(env: &Env, m: &Matrix) {
    // A CUDA primary context made (and under compute-sanitizer, each one made
    // again after its last release) opens driver files: one CUDA-paired context
    // stays alive over the whole run, so the cases' fd counts see the library alone.
    let mut warm = ptr::null_mut();
    if unsafe { vkcuda_context_create_standalone(ptr::null(), &mut warm) }
        != vkcuda_result::VKCUDA_SUCCESS
    {
        warm = ptr::null_mut();
    }
    let (fds, objects) = (fd_count(), live_counts());
    let s = run(env, m);
    println!(
        "misuse matrix on a {}: {} cases for {} functions: {} ran, {} skipped (no such object here), {} failed",
        env.name(),
        m.count(),
        m.entries.len(),
        s.ran,
        s.skipped,
        s.failures.len()
    );
    let mut s = s;
    if (fd_count(), live_counts()) != (fds, objects) {
        s.failures.push(format!(
            "the matrix as a whole leaked: fds {fds} -> {}, live objects {objects:?} -> {:?}",
            fd_count(),
            live_counts()
        ));
    }
    unsafe { vkcuda_context_destroy(warm) };
    assert!(
        s.failures.is_empty(),
        "{} misuse cases failed:\n  {}",
        s.failures.len(),
        s.failures.join("\n  ")
    );
}
