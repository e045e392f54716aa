//! The table and the checks every case uses: `Matrix::case` registers a case,
//! `Call::refused` checks a failure, `Poison`/`poisoned` are outputs that must not be
//! written, and `mutations` makes one case per changed field of an input struct.

use std::collections::BTreeMap;
use std::mem::{size_of, MaybeUninit};
use std::ptr;
use std::rc::Rc;

use crate::env::Env;
use crate::support::*;

pub const N: vkcuda_result = VKCUDA_ERROR_NULL_POINTER;
pub const I: vkcuda_result = VKCUDA_ERROR_INVALID_ARGUMENT;
pub const U: vkcuda_result = VKCUDA_ERROR_CUDA_UNAVAILABLE;
pub const UNSUP: vkcuda_result = VKCUDA_ERROR_UNSUPPORTED;
pub const EXT: vkcuda_result = VKCUDA_ERROR_EXTENSION_NOT_PRESENT;
pub const MISMATCH: vkcuda_result = VKCUDA_ERROR_DEVICE_MISMATCH;
pub const DENIED: vkcuda_result = VKCUDA_ERROR_PERMISSION_DENIED;

/// An output the library must not write on failure: filled with 0xA5 bytes.
pub struct Poison<T> {
    v: Box<MaybeUninit<T>>,
}

impl<T> Poison<T> {
    pub fn new() -> Self {
        let mut v = Box::new(MaybeUninit::<T>::uninit());
        unsafe { ptr::write_bytes(v.as_mut_ptr().cast::<u8>(), 0xA5, size_of::<T>()) };
        Poison { v }
    }

    pub fn ptr(&mut self) -> *mut T {
        self.v.as_mut_ptr()
    }

    pub fn is_untouched(&self) -> bool {
        let bytes =
            unsafe { std::slice::from_raw_parts(self.v.as_ptr().cast::<u8>(), size_of::<T>()) };
        bytes.iter().all(|&b| b == 0xA5)
    }

    #[track_caller]
    pub fn untouched(&self) {
        assert!(
            self.is_untouched(),
            "the output was written by a call that failed"
        );
    }
}

impl<T> Poison<*mut T> {
    /// A handle output after a failure: set to NULL.
    #[track_caller]
    pub fn nulled(&self) {
        let v = unsafe { self.v.assume_init_read() };
        assert!(
            v.is_null(),
            "the handle output was not set to NULL by a call that failed ({v:?})"
        );
    }
}

/// A handle output before the call: not NULL, so that "set to NULL" is seen.
pub fn poisoned<T>() -> *mut T {
    0xA5A5_A5A5_A5A5usize as *mut T
}

pub const NO_FD_SIZE: &str =
    "this driver's fds do not tell their size: the library cannot check it (documented)";

/// What one case saw.
pub enum Outcome {
    Ran,
    Skipped(&'static str),
}
pub use Outcome::*;

/// What a case gets: the environment, the function under test, and words its
/// refusal's message must contain (a mutation's `says`).
pub struct Call<'a> {
    pub env: &'a Env,
    pub name: &'static str,
    pub says: Option<&'static str>,
}

impl Call<'_> {
    /// `r` is one of `want` (all failures), and the message names the function.
    #[track_caller]
    pub fn refused(&self, r: vkcuda_result, want: &[vkcuda_result]) {
        self.refused_with(r, want, &last_error());
    }

    /// `refused` with the message read earlier.
    #[track_caller]
    pub fn refused_with(&self, r: vkcuda_result, want: &[vkcuda_result], msg: &str) {
        if verbose() {
            println!(
                "    {r:?} (expected one of {want:?}, saying {:?}): {msg}",
                self.says
            );
        }
        assert!(
            r != VKCUDA_SUCCESS && want.contains(&r),
            "{} returned {r:?}, expected {want:?}; message: {msg:?}",
            self.name
        );
        assert!(
            msg.len() > self.name.len() + 2 && msg.starts_with(&format!("{}: ", self.name)),
            "{}: the message should name the function and say what went wrong: {msg:?}",
            self.name
        );
        if let Some(words) = self.says {
            assert!(
                msg.contains(words),
                "{}: the message should say {words:?}: {msg:?}",
                self.name
            );
        }
    }

    /// A refused call that had a handle output: it must be NULL now. A handle that
    /// was made anyway is destroyed before the assertion fails.
    #[track_caller]
    pub fn refused_made<T>(
        &self,
        r: vkcuda_result,
        want: &[vkcuda_result],
        made: *mut T,
        destroy: unsafe extern "C" fn(*mut T),
    ) {
        if !made.is_null() && made != poisoned() {
            unsafe { destroy(made) };
            panic!(
                "{} made a handle and returned {r:?} (expected {want:?})",
                self.name
            );
        }
        self.refused(r, want);
        assert!(
            made.is_null(),
            "{}: the handle output was not set to NULL",
            self.name
        );
    }

    /// `call(output)`, given a poisoned plain output, is refused with one of `want`
    /// and leaves the output untouched.
    #[track_caller]
    pub fn refused_untouched<T>(
        &self,
        want: &[vkcuda_result],
        call: impl FnOnce(*mut T) -> vkcuda_result,
    ) -> Outcome {
        let mut out = Poison::<T>::new();
        self.refused(call(out.ptr()), want);
        out.untouched();
        Ran
    }

    /// `call(output)`, given a poisoned handle output, is refused with one of `want`
    /// and sets the output to NULL.
    #[track_caller]
    pub fn refused_nulled<T>(
        &self,
        want: &[vkcuda_result],
        call: impl FnOnce(*mut *mut T) -> vkcuda_result,
    ) -> Outcome {
        let mut out = Poison::<*mut T>::new();
        self.refused(call(out.ptr()), want);
        out.nulled();
        Ran
    }

    /// The call succeeded; its message is empty.
    #[track_caller]
    pub fn succeeded(&self, r: vkcuda_result) {
        let msg = last_error();
        if verbose() {
            println!("    {r:?}");
        }
        assert_eq!(r, VKCUDA_SUCCESS, "{}: {msg}", self.name);
        assert!(msg.is_empty(), "{}: a success leaves \"{msg}\"", self.name);
    }
}

pub fn verbose() -> bool {
    std::env::var_os("VKCUDA_MISUSE_VERBOSE").is_some()
}

pub fn close(fd: i32) {
    assert_eq!(unsafe { libc::close(fd) }, 0, "close({fd})");
}

/// A closed descriptor number: opened and closed here.
pub fn closed_fd() -> i32 {
    let fd = unsafe { libc::dup(0) };
    assert!(fd >= 0);
    close(fd);
    fd
}

pub fn pipe() -> (i32, i32) {
    let mut p = [0; 2];
    assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    (p[0], p[1])
}

pub fn socketpair() -> (i32, i32) {
    let mut p = [0; 2];
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            p.as_mut_ptr(),
        )
    };
    assert_eq!(r, 0);
    (p[0], p[1])
}

/// `call` with one end of a connected socket pair; both ends closed afterwards.
pub fn with_socket(call: impl FnOnce(i32) -> vkcuda_result) -> vkcuda_result {
    let (a, b) = socketpair();
    let r = call(a);
    close(a);
    close(b);
    r
}

// ---------------------------------------------------------------------------------
// The table.

pub type Run = Rc<dyn Fn(&Call) -> Outcome>;

pub struct Case {
    pub label: String,
    pub run: Run,
}

#[derive(Default)]
pub struct Entry {
    pub cases: Vec<Case>,
    /// Paths any value of which is valid, with the reason.
    pub any: BTreeMap<String, &'static str>,
}

#[derive(Default)]
pub struct Matrix {
    pub entries: BTreeMap<&'static str, Entry>,
}

impl Matrix {
    pub fn case(&mut self, f: &'static str, label: &str, run: impl Fn(&Call) -> Outcome + 'static) {
        self.entries.entry(f).or_default().cases.push(Case {
            label: label.to_string(),
            run: Rc::new(run),
        });
    }

    /// A case that always runs: `run` checks and returns nothing.
    pub fn ran(&mut self, f: &'static str, label: &str, run: impl Fn(&Call) + 'static) {
        self.case(f, label, move |c| {
            run(c);
            Ran
        });
    }

    /// A case for a Vulkan-only context, skipped on a CUDA-paired one.
    pub fn vulkan_only(
        &mut self,
        f: &'static str,
        label: &str,
        run: impl Fn(&Call) -> Outcome + 'static,
    ) {
        self.case(f, label, move |c| {
            if c.env.cuda {
                return Skipped("the context has CUDA");
            }
            run(c)
        });
    }

    pub fn any(&mut self, f: &'static str, path: &str, why: &'static str) {
        self.entries
            .entry(f)
            .or_default()
            .any
            .insert(path.to_string(), why);
    }

    pub fn count(&self) -> usize {
        self.entries.values().map(|e| e.cases.len()).sum()
    }
}

pub type Apply<T> = Rc<dyn Fn(&Env, &mut T)>;

/// One changed field of an input struct and what the call must return.
pub struct Mutation<T> {
    pub label: String,
    pub apply: Apply<T>,
    pub want: Vec<vkcuda_result>,
    /// A share description with this change is still a possible record (the
    /// device decides at import): serialize and send take it.
    pub record_ok: bool,
    /// Only the kernel's size of the fd shows the change is wrong (lavapipe's
    /// memfds: yes; NVIDIA's opaque fds: no, and the library documents that it
    /// cannot check there): skipped where fds do not tell their size.
    pub needs_fd_size: bool,
    /// Words the refusal's message must contain.
    pub says: Option<&'static str>,
}

pub fn mutation<T>(
    label: &str,
    want: &[vkcuda_result],
    apply: impl Fn(&Env, &mut T) + 'static,
) -> Mutation<T> {
    Mutation {
        label: label.to_string(),
        apply: Rc::new(apply),
        want: want.to_vec(),
        record_ok: false,
        needs_fd_size: false,
        says: None,
    }
}

/// `m`, whose refusal's message must contain `words`.
pub fn says<T>(words: &'static str, mut m: Mutation<T>) -> Mutation<T> {
    m.says = Some(words);
    m
}

pub fn fd_size<T>(mut m: Mutation<T>) -> Mutation<T> {
    m.needs_fd_size = true;
    m
}

/// One case per mutation: `base` made fresh, changed, then `call` makes the call
/// and checks it is refused with the mutation's codes.
pub fn mutations<T: 'static>(
    m: &mut Matrix,
    f: &'static str,
    muts: Vec<Mutation<T>>,
    base: impl Fn(&Env) -> T + 'static,
    call: impl Fn(&Call, &T, &[vkcuda_result]) -> Outcome + 'static,
) {
    let base = Rc::new(base);
    let call = Rc::new(call);
    for mu in muts {
        let (base, call) = (base.clone(), call.clone());
        m.case(f, &mu.label, move |c| {
            if mu.needs_fd_size && !c.env.fd_sizes_known {
                return Skipped(NO_FD_SIZE);
            }
            let mut t = base(c.env);
            (mu.apply)(c.env, &mut t);
            let c = Call {
                says: mu.says,
                ..*c
            };
            call(&c, &t, &mu.want)
        });
    }
}

/// A table of mutations of `T`, one a line: `"KIND:PATH" [CODES] => |ENV, VALUE|
/// CHANGE;`, with `says "WORDS"` (the refusal's message must contain them) and/or
/// `@fd_size` (skipped where fds do not tell their size) before the `=>`.
macro_rules! muts {
    ($t:ty; $($label:literal [$($want:expr),+] $(says $words:literal)? $(@$fd:ident)?
        => |$e:tt, $x:ident| $change:expr;)*) => {
        vec![$({
            #[allow(unused_mut)]
            let mut mu = crate::matrix::mutation::<$t>($label, &[$($want),+], |$e, $x: &mut $t| {
                $change;
            });
            $(mu.says = Some($words);)?
            $(mu = crate::matrix::$fd(mu);)?
            mu
        }),*]
    };
}
pub(crate) use muts;

/// NULL rows (`nulls::null`), one a line: `FUNCTION, "ARG" => |ENV, OUT| CALL;`
/// (`@needs(SKIP)` before the `=>`: `NullRow::needs`).
macro_rules! nulls {
    ($($f:expr, $arg:tt $(@needs($needs:expr))? => |$e:tt, $o:tt| $call:expr;)*) => {
        vec![$(crate::nulls::null($f, $arg, move |$e, $o| $call)$(.needs($needs))?),*]
    };
}
pub(crate) use nulls;

/// An array of functions with their names, one a line: `FUNCTION, MORE...;` makes
/// `("FUNCTION", FUNCTION, MORE...)` (the array's type says the function type).
macro_rules! named {
    ($($f:ident $(, $x:expr)*;)*) => {
        [$((stringify!($f), $f as _ $(, $x)*)),*]
    };
}
pub(crate) use named;
