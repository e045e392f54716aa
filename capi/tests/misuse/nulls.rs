//! The NULL cases as a table: one row per (function, argument passed as NULL,
//! expected result), run by one generic runner.
//!
//! A row's closure makes the call with that one argument NULL and every other
//! argument valid; it asks `Out` for the outputs it passes (`out.plain()` for a
//! struct, integer or fd, `out.handle(destroy)` for a new handle). The call under
//! test must be the last library call of the closure: the runner reads the thread's
//! message after it. Closing fds or sockets afterwards is fine (no library call).
//!
//! The runner checks, per the header's conventions ("outputs are written only on
//! success; handle outputs are set to NULL on failure"):
//!   - the result is the row's code (`VKCUDA_ERROR_NULL_POINTER` unless `.want()`),
//!   - the message starts with the function's name and names the argument
//!     (`info must not be NULL`); a struct field (`info->memory`) may be named by
//!     its full path or by its own name (`memory`),
//!   - every plain output is byte for byte as it was (0xA5 poison), and
//!   - every handle output is NULL (a handle made anyway is destroyed, and the
//!     row fails).
//!
//! Rows register as `null:ARG` cases, which is what `every_export_has_misuse_cases`
//! looks for; NULL that is valid (`null-ok:ARG`) stays an ordinary case. A getter
//! `f(object, output)` has its two rows in one line: `Matrix::getter`.

use std::cell::Cell;
use std::ptr;
use std::rc::Rc;

use crate::env::{no_timeline, Env};
use crate::matrix::{Call, Matrix, Outcome, Outcome::*, Poison, N};
use crate::support::*;

type NullCall = Rc<dyn Fn(&Env, &mut Out) -> vkcuda_result>;

/// One NULL case; made by `null()`.
pub struct NullRow {
    f: &'static str,
    arg: &'static str,
    want: vkcuda_result,
    needs: Option<fn(&Env) -> Option<&'static str>>,
    call: NullCall,
}

/// `f` called with `arg` NULL (and every other argument valid) by `call` returns
/// `VKCUDA_ERROR_NULL_POINTER`.
pub fn null(
    f: &'static str,
    arg: &'static str,
    call: impl Fn(&Env, &mut Out) -> vkcuda_result + 'static,
) -> NullRow {
    NullRow {
        f,
        arg,
        want: N,
        needs: None,
        call: Rc::new(call),
    }
}

impl NullRow {
    /// Another expected result than `VKCUDA_ERROR_NULL_POINTER` (no row needs one yet).
    #[allow(dead_code)]
    pub fn want(mut self, r: vkcuda_result) -> Self {
        self.want = r;
        self
    }

    /// Skipped where `needs` gives a reason (an object this device cannot make).
    pub fn needs(mut self, needs: fn(&Env) -> Option<&'static str>) -> Self {
        self.needs = Some(needs);
        self
    }
}

/// What a handle output held after the call.
enum HandleSeen {
    Null,
    Untouched,
    Made,
}

/// The outputs one call is given, checked after it.
#[derive(Default)]
pub struct Out {
    /// Each says whether its output is still untouched.
    plain: Vec<Box<dyn Fn() -> bool>>,
    /// Each reads its output (destroying a handle that was made).
    handles: Vec<Box<dyn Fn() -> HandleSeen>>,
}

impl Out {
    /// A plain output (a struct, an integer, an fd): 0xA5 bytes that must stay so.
    pub fn plain<T: 'static>(&mut self) -> *mut T {
        let mut p = Poison::<T>::new();
        let ptr = p.ptr();
        self.plain.push(Box::new(move || p.is_untouched()));
        ptr
    }

    /// A handle the object lends (a CUDA array of an image): NULL after a failure.
    pub fn lent<T: 'static>(&mut self) -> *mut *mut T {
        self.handle(not_ours)
    }

    /// A handle output: not NULL before the call, NULL after a failure.
    pub fn handle<T: 'static>(&mut self, destroy: unsafe extern "C" fn(*mut T)) -> *mut *mut T {
        let h = Box::new(Cell::new(crate::matrix::poisoned::<T>()));
        let ptr = h.as_ptr();
        self.handles.push(Box::new(move || {
            let made = h.get();
            if made.is_null() {
                HandleSeen::Null
            } else if made == crate::matrix::poisoned() {
                HandleSeen::Untouched
            } else {
                unsafe { destroy(made) };
                HandleSeen::Made
            }
        }));
        ptr
    }
}

/// `f(object, output)` as the getters take it.
pub fn get<H, T>(
    f: unsafe extern "C" fn(*const H, *mut T) -> vkcuda_result,
) -> impl Fn(*const H, *mut T) -> vkcuda_result + Copy {
    move |h, o| unsafe { f(h, o) }
}

/// `f(object, 0, output)`: plane or level 0.
pub fn get0<H, T>(
    f: unsafe extern "C" fn(*const H, u32, *mut T) -> vkcuda_result,
) -> impl Fn(*const H, *mut T) -> vkcuda_result + Copy {
    move |h, o| unsafe { f(h, 0, o) }
}

/// `f(object, 0, 0, output)`: plane 0, level 0.
pub fn get00<H, T>(
    f: unsafe extern "C" fn(*const H, u32, u32, *mut T) -> vkcuda_result,
) -> impl Fn(*const H, *mut T) -> vkcuda_result + Copy {
    move |h, o| unsafe { f(h, 0, 0, o) }
}

/// The "destroy" of a handle output the library lends (a CUDA array of an image,
/// a graph node owned by its graph): nothing to release.
pub unsafe extern "C" fn not_ours<T>(_: *mut T) {}

/// The message names `arg`: as a whole word after "function: ", or for a field
/// (`info->memory`, `description->image.format`) by its own name.
fn names(msg: &str, f: &str, arg: &str) -> bool {
    let text = msg
        .strip_prefix(f)
        .and_then(|m| m.strip_prefix(": "))
        .unwrap_or("");
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || "_->.".contains(c)))
        .map(|w| w.trim_end_matches('.'))
        .collect();
    let field = arg.rsplit(['>', '.']).next().unwrap_or(arg);
    words.contains(&arg) || (field != arg && words.contains(&field))
}

fn run_row(row: &NullRow, c: &Call) -> Outcome {
    if let Some(why) = row.needs.and_then(|needs| needs(c.env)) {
        return Skipped(why);
    }
    let mut out = Out::default();
    let r = (row.call)(c.env, &mut out);
    let msg = last_error();
    let seen: Vec<HandleSeen> = out.handles.iter().map(|h| h()).collect();
    if seen.iter().any(|s| matches!(s, HandleSeen::Made)) {
        panic!(
            "{} made a handle with {} NULL and returned {r:?} (expected {:?})",
            row.f, row.arg, row.want
        );
    }
    c.refused_with(r, &[row.want], &msg);
    assert!(
        names(&msg, row.f, row.arg),
        "{}: the message should name the NULL argument `{}`: {msg:?}",
        row.f,
        row.arg
    );
    assert!(
        seen.iter().all(|s| matches!(s, HandleSeen::Null)),
        "{} with {} NULL: a handle output was not set to NULL",
        row.f,
        row.arg
    );
    for (i, untouched) in out.plain.iter().enumerate() {
        assert!(
            untouched(),
            "{} with {} NULL: output {i} was written by a call that failed",
            row.f,
            row.arg
        );
    }
    Ran
}

impl Matrix {
    /// Registers each row as the case `null:ARG` of its function.
    pub fn nulls(&mut self, rows: Vec<NullRow>) {
        for row in rows {
            let label = format!("null:{}", row.arg);
            let f = row.f;
            self.case(f, &label, move |c| run_row(&row, c));
        }
    }

    /// The two rows of a getter `f(object, output)` with a plain output: the object
    /// NULL (`args[0]` names it), then the output NULL (`args[1]`) with the
    /// environment's object `of(env)`.
    pub fn getter<H: 'static, T: 'static>(
        &mut self,
        f: &'static str,
        args: [&'static str; 2],
        of: fn(&Env) -> *const H,
        call: unsafe extern "C" fn(*const H, *mut T) -> vkcuda_result,
    ) {
        self.getter_with(f, args, of, Out::plain, get(call));
    }

    /// `getter` of a call with more arguments (`call` passes them: `get0`, `get00`)
    /// whose output `out` makes: `Out::plain`, or `Out::lent` for a handle the
    /// object lends.
    pub fn getter_with<H: 'static, T: 'static>(
        &mut self,
        f: &'static str,
        args: [&'static str; 2],
        of: fn(&Env) -> *const H,
        out: fn(&mut Out) -> *mut T,
        call: impl Fn(*const H, *mut T) -> vkcuda_result + Copy + 'static,
    ) {
        self.nulls(vec![
            null(f, args[0], move |_, o| call(ptr::null(), out(o))),
            null(f, args[1], move |e, _| call(of(e), ptr::null_mut())),
        ]);
    }

    /// The three NULL rows of a constructor `call(context, info, output)` (`output`
    /// names its handle output, `destroy` frees one made anyway), with the valid
    /// info `info(env)`.
    pub fn constructor<I: 'static, T: 'static>(
        &mut self,
        f: &'static str,
        output: &'static str,
        info: fn(&Env) -> I,
        call: unsafe extern "C" fn(*const vkcuda_context, *const I, *mut *mut T) -> vkcuda_result,
        destroy: unsafe extern "C" fn(*mut T),
    ) {
        self.nulls(vec![
            null(f, "context", move |e, o| unsafe {
                call(ptr::null(), &info(e), o.handle(destroy))
            }),
            null(f, "info", move |e, o| unsafe {
                call(e.ctx, ptr::null(), o.handle(destroy))
            }),
            null(f, output, move |e, _| unsafe {
                call(e.ctx, &info(e), ptr::null_mut())
            }),
        ]);
    }

    /// `getter_with` of the environment's image (the argument `image`).
    pub fn image_getter<T: 'static>(
        &mut self,
        f: &'static str,
        output: &'static str,
        out: fn(&mut Out) -> *mut T,
        call: impl Fn(*const vkcuda_image, *mut T) -> vkcuda_result + Copy + 'static,
    ) {
        self.getter_with(f, ["image", output], |e| e.image, out, call);
    }

    /// `getter` of the environment's timeline semaphore: the output row is skipped
    /// where the device makes none (`no_timeline`); the NULL-object row runs everywhere.
    pub fn timeline_getter<T: 'static>(
        &mut self,
        f: &'static str,
        args: [&'static str; 2],
        call: unsafe extern "C" fn(*const vkcuda_semaphore, *mut T) -> vkcuda_result,
    ) {
        self.nulls(vec![
            null(f, args[0], move |_, o| unsafe {
                call(ptr::null(), o.plain())
            }),
            null(f, args[1], move |e, _| unsafe {
                call(e.timeline.unwrap(), ptr::null_mut())
            })
            .needs(no_timeline),
        ]);
    }
}

#[test]
fn names_reads_arguments_and_fields() {
    let f = "vkcuda_x";
    assert!(names("vkcuda_x: info must not be NULL", f, "info"));
    assert!(names(
        "vkcuda_x: info->instance must not be NULL",
        f,
        "info->instance"
    ));
    assert!(names(
        "vkcuda_x: memory must not be NULL",
        f,
        "info->memory"
    ));
    // Another argument, a field of the same name, or the function's own name do not count.
    assert!(!names(
        "vkcuda_x: info->buffer must not be NULL",
        f,
        "buffer"
    ));
    assert!(!names("vkcuda_x: context must not be NULL", f, "info"));
    assert!(!names("vkcuda_info: something", "vkcuda_info", "info"));
    assert!(!names("vkcuda_y: info must not be NULL", f, "info"));
}
