//! The timeline value book-keeping (`vkcuda::semaphore::Book`) under arbitrary
//! sequences of frame stages, signals and binary signal/wait notes, against a
//! model of the contract: a signal is accepted exactly when it is greater than
//! every value signalled before and than the current value, within the maximum
//! difference, and is not a stage value that was already signalled; stages chain
//! (each waits for the previous signal); a refused call changes nothing; nothing
//! panics, whatever the values (UINT64_MAX included).
//! Also `vkcuda_semaphore_create` with arbitrary create info on the Vulkan-only
//! context (lavapipe has no VK_KHR_external_semaphore_fd: it must refuse cleanly).
#![no_main]

mod common;
use common::*;

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use vkcuda::semaphore::Book;

#[derive(Arbitrary, Debug)]
enum Op {
    NextStage,
    Signal {
        value: u64,
        near: bool,
    },
    /// The GPU reaches a value the library handed out or signalled.
    Advance {
        by: u8,
    },
    BinarySignal,
    BinaryWait,
    Create {
        flags: u32,
        ty: i32,
        initial: u64,
        spin: u64,
    },
}

#[derive(Arbitrary, Debug)]
struct In {
    initial: u64,
    small_initial: bool,
    max_difference: u64,
    ops: Vec<Op>,
}

fuzz_target!(|input: In| {
    let initial = if input.small_initial {
        input.initial % 16
    } else {
        input.initial
    };
    let max = match input.max_difference % 4 {
        0 => u64::MAX,
        1 => 1 + input.max_difference % 64,
        2 => i32::MAX as u64,
        _ => input.max_difference.max(1),
    };
    let mut book = Book::new(initial);
    // The model: the highest value signalled through the library, the highest
    // handed out, the stages handed out and not yet signalled through the library,
    // the GPU's current value, and the binary state.
    let mut last_signal = initial;
    let mut reserved = initial;
    let mut current = initial;
    let mut pending = false;
    let mut outstanding: Vec<u64> = Vec::new();
    for op in input.ops.into_iter().take(64) {
        let before = format!("{book:?}");
        match op {
            Op::NextStage => {
                let r = book.next_stage(current, max);
                let want_ok =
                    reserved != u64::MAX && reserved + 1 - current.min(reserved + 1) <= max;
                assert_eq!(
                    r.is_ok(),
                    want_ok,
                    "next_stage at {reserved} (current {current}, max {max}): {r:?}"
                );
                match r {
                    Ok(st) => {
                        assert_eq!(st.wait, reserved, "a stage waits for the previous signal");
                        assert_eq!(st.signal, st.wait + 1);
                        reserved = st.signal;
                        outstanding.retain(|&v| v > current);
                        outstanding.push(st.signal);
                    }
                    Err(e) => {
                        assert_eq!(
                            format!("{book:?}"),
                            before,
                            "a refused stage changed the book"
                        );
                        assert!(!e.message.is_empty());
                    }
                }
            }
            Op::Signal { value, near } => {
                let value = if near {
                    last_signal.saturating_add(value % 4).saturating_sub(1)
                } else {
                    value
                };
                let want_ok = value > last_signal
                    && value > current
                    && value - current <= max
                    && (value > reserved || outstanding.contains(&value));
                let r = book.signal(value, current, max);
                assert_eq!(
                    r.is_ok(),
                    want_ok,
                    "signal {value}: last {last_signal}, current {current}, reserved {reserved}, max {max}: {r:?}"
                );
                match r {
                    Ok(()) => {
                        last_signal = value;
                        reserved = reserved.max(value);
                        outstanding.retain(|&v| v != value);
                    }
                    Err(e) => {
                        assert_eq!(
                            format!("{book:?}"),
                            before,
                            "a refused signal changed the book"
                        );
                        assert!(!e.message.is_empty());
                    }
                }
            }
            Op::Advance { by } => {
                // The GPU completes work: the value moves up, never past what was signalled.
                current = current
                    .saturating_add(by as u64)
                    .min(last_signal.max(current));
            }
            Op::BinarySignal => {
                let r = book.binary_signal();
                assert_eq!(r.is_ok(), !pending, "one signal at a time");
                pending = true;
            }
            Op::BinaryWait => {
                let r = book.binary_wait();
                assert_eq!(r.is_ok(), pending, "one wait per signal");
                pending = false;
            }
            Op::Create {
                flags,
                ty,
                initial,
                spin,
            } => {
                let s = shared();
                let fds = fd_count();
                let info = vkcuda_semaphore_create_info {
                    flags,
                    semaphore_type: vkcuda_semaphore_type_raw(ty % 4),
                    initial_value: initial,
                    host_wait_spin_ns: spin,
                };
                let mut sem = 0x5A5A as *mut vkcuda_semaphore;
                let r = check("vkcuda_semaphore_create", unsafe {
                    vkcuda_semaphore_create(s.ctx, &info, &mut sem)
                });
                if r == VKCUDA_SUCCESS {
                    unsafe { vkcuda_semaphore_destroy(sem) };
                } else {
                    assert!(sem.is_null());
                    assert!(matches!(
                        r,
                        VKCUDA_ERROR_INVALID_ARGUMENT
                            | VKCUDA_ERROR_EXTENSION_NOT_PRESENT
                            | VKCUDA_ERROR_UNSUPPORTED
                    ));
                }
                s.no_leak(fds, "vkcuda_semaphore_create");
            }
        }
    }
});
