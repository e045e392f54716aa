//! The boxes behind the C API's opaque handles. Each starts with a tag naming its
//! kind; the boundary checks it on every call and destroy overwrites it, so a
//! handle of the wrong kind (a buffer passed as an image) or one already destroyed
//! is refused with `VKCUDA_ERROR_INVALID_ARGUMENT` and a message instead of being
//! used. This is best effort: it costs one load per call, and it cannot see a
//! pointer into memory that was freed and reused since, or one that points
//! nowhere (docs/GUIDE.md, "Errors").

use std::ptr;

use vkcuda::error::{Error, Result};

/// A handle's contents: the kind tag, then the object. `repr(C)` fixes the tag's
/// place; each handle type holds one of these as its only field, at offset 0
/// (checked at compile time by `handle_kind!`). The tag is not the first word:
/// allocators keep their free-list links in the first two words of a freed block
/// (glibc's tcache does), which would wipe the "destroyed" mark at once.
#[repr(C)]
pub struct Tagged<T> {
    allocator_scratch: [u64; 2],
    tag: u64,
    pub(crate) inner: T,
}

/// Where the tag is, in u64 words from the start of a handle.
const TAG_WORD: usize = 2;

const fn tag(name: &[u8; 8]) -> u64 {
    u64::from_be_bytes(*name)
}

pub(crate) const CONTEXT: u64 = tag(b"vkcudaCX");
pub(crate) const BUFFER: u64 = tag(b"vkcudaBF");
pub(crate) const IMAGE: u64 = tag(b"vkcudaIM");
pub(crate) const SEMAPHORE: u64 = tag(b"vkcudaSM");
pub(crate) const DOCTOR_REPORT: u64 = tag(b"vkcudaDR");
pub(crate) const BATCH: u64 = tag(b"vkcudaBT");
pub(crate) const PRESENT_RING: u64 = tag(b"vkcudaPR");
pub(crate) const HOST_BUFFER: u64 = tag(b"vkcudaHB");
/// What destroy leaves in the tag.
const DESTROYED: u64 = tag(b"vkcuda--");

/// The kinds the boundary can name in a message.
const KINDS: [(u64, &str); 8] = [
    (CONTEXT, "a vkcuda_context"),
    (BUFFER, "a vkcuda_buffer"),
    (IMAGE, "a vkcuda_image"),
    (SEMAPHORE, "a vkcuda_semaphore"),
    (DOCTOR_REPORT, "a vkcuda_doctor_report"),
    (BATCH, "a vkcuda_batch"),
    (PRESENT_RING, "a vkcuda_present_ring"),
    (HOST_BUFFER, "a vkcuda_host_buffer"),
];

/// A C handle type: a struct whose only field is a `Tagged<Inner>`.
pub(crate) trait Handle: Sized {
    type Inner;
    const TAG: u64;
    /// The C type's name, for messages.
    const NAME: &'static str;
    fn tagged(&self) -> &Tagged<Self::Inner>;
    fn from_tagged(t: Tagged<Self::Inner>) -> Self;
    /// The context the object belongs to, whose loss (`vkcuda::context::any_lost`) refuses
    /// every call on the object.
    fn owner(_inner: &Self::Inner) -> Option<&vkcuda::context::Context> {
        None
    }
}

/// Implements [`Handle`] for a C handle struct `$ty { h: Tagged<$inner> }`.
macro_rules! handle_kind {
    ($ty:ident, $inner:ty, $tag:expr) => {
        $crate::handle::handle_kind!($ty, $inner, $tag, |_i| None);
    };
    ($ty:ident, $inner:ty, $tag:expr, $owner:expr) => {
        impl $crate::handle::Handle for $ty {
            type Inner = $inner;
            const TAG: u64 = $tag;
            const NAME: &'static str = stringify!($ty);
            fn tagged(&self) -> &$crate::handle::Tagged<$inner> {
                &self.h
            }
            fn from_tagged(h: $crate::handle::Tagged<$inner>) -> Self {
                $ty { h }
            }
            #[inline]
            fn owner(inner: &$inner) -> Option<&vkcuda::context::Context> {
                let owner: fn(&$inner) -> Option<&vkcuda::context::Context> = $owner;
                owner(inner)
            }
        }
        const _: () = assert!(std::mem::offset_of!($ty, h) == 0);
    };
}
pub(crate) use handle_kind;

/// A new handle for `inner`, to hand out with `write_handle`.
pub(crate) fn boxed<H: Handle>(inner: H::Inner) -> Box<H> {
    Box::new(H::from_tagged(Tagged {
        allocator_scratch: [0; 2],
        tag: H::TAG,
        inner,
    }))
}

/// What the tag at `p` says, if it is not `H`'s.
///
/// # Safety
/// `p` is not NULL and points to readable memory (what a caller passed as a handle).
unsafe fn refuse<H: Handle>(found: u64, what: &str) -> Error {
    if found == DESTROYED {
        return Error::invalid(format!(
            "{what} is a {} that was already destroyed",
            H::NAME
        ));
    }
    match KINDS.iter().find(|(t, _)| *t == found) {
        Some((_, kind)) => Error::invalid(format!("{what} is {kind}, not a {}", H::NAME)),
        None => Error::invalid(format!(
            "{what} is not a {} (not made by vkcuda, or destroyed and its memory reused)",
            H::NAME
        )),
    }
}

/// Reads the kind tag of a handle pointer from C.
///
/// # Safety
/// `p` is not NULL and points to readable memory.
unsafe fn tag_at<H>(p: *const H) -> Option<u64> {
    if (p as usize) % std::mem::align_of::<u64>() != 0 {
        return None;
    }
    // Volatile: the tag may have been overwritten by destroy in another call.
    Some(ptr::read_volatile(p.cast::<u64>().add(TAG_WORD)))
}

/// The object behind a handle from C: NULL is `VKCUDA_ERROR_NULL_POINTER`; a
/// handle of another kind or a destroyed one is `VKCUDA_ERROR_INVALID_ARGUMENT`;
/// an object whose context is lost (`Context::check_lost`) is `VKCUDA_ERROR_DEVICE_LOST`.
///
/// # Safety
/// `p` is NULL or points to readable memory of at least 24 bytes.
pub(crate) unsafe fn get<'a, H: Handle + 'a>(p: *const H, what: &str) -> Result<&'a H::Inner> {
    get_named(p, || what.to_string())
}

/// [`get`], with the argument's name made only when the handle is refused (for
/// names built at run time, such as `resources[3].buffer`).
///
/// # Safety
/// As for [`get`].
pub(crate) unsafe fn get_named<'a, H: Handle + 'a>(
    p: *const H,
    what: impl FnOnce() -> String,
) -> Result<&'a H::Inner> {
    if p.is_null() {
        return Err(Error::null(&what()));
    }
    match tag_at(p) {
        Some(t) if t == H::TAG => {
            let inner = &(*p).tagged().inner;
            if vkcuda::context::any_lost() {
                if let Some(ctx) = H::owner(inner) {
                    ctx.check_lost()?;
                }
            }
            Ok(inner)
        }
        Some(t) => Err(refuse::<H>(t, &what())),
        None => Err(Error::invalid(format!(
            "{} is not a {} (a misaligned pointer)",
            what(),
            H::NAME
        ))),
    }
}

/// The object behind a handle when it is one of kind `H`, else None (no message:
/// for fast paths that fall back to [`get`] to say what is wrong).
///
/// # Safety
/// As for [`get`].
#[inline]
pub(crate) unsafe fn peek<'a, H: Handle + 'a>(p: *const H) -> Option<&'a H::Inner> {
    if p.is_null() {
        return None;
    }
    match tag_at(p) {
        // After a loss the slow path (`get`) says so.
        Some(t) if t == H::TAG && !vkcuda::context::any_lost() => Some(&(*p).tagged().inner),
        _ => None,
    }
}

/// Destroys a handle: NULL does nothing; a handle of another kind or one already
/// destroyed is left alone (the thread's last-error message says why).
///
/// # Safety
/// `p` is NULL or a pointer the caller got from the library; no other call uses it.
pub(crate) unsafe fn destroy<H: Handle>(p: *mut H, name: &str) {
    if p.is_null() {
        return;
    }
    match tag_at(p) {
        Some(t) if t == H::TAG => {
            ptr::write_volatile(p.cast::<u64>().add(TAG_WORD), DESTROYED);
            drop(Box::from_raw(p));
        }
        Some(t) => {
            super::set_last_error(&format!("{name}: {}", refuse::<H>(t, "the handle").message))
        }
        None => super::set_last_error(&format!(
            "{name}: the handle is not a {} (a misaligned pointer)",
            H::NAME
        )),
    }
}
