//! Images through the C ABI for capi/tests/planes.rs and bench/: a 2D
//! description and creation. The test's own Vulkan work on images (the two kinds
//! of image a helper works on, an engine's own image, writing a pattern and
//! reading it back) is the Rust API's suites' (tests/support/images.rs).

use ash::vk;
use vkcuda_c::vkcuda_result::*;
use vkcuda_c::*;

use super::{image_desc, last_error};

/// A 2D image description with the defaults (a full mip chain, one layer, the
/// default usage).
pub fn d2(format: vk::Format, w: u32, h: u32) -> vkcuda_image_create_info {
    image_desc(0, format, w, h, 0)
}

/// Creation; on failure the result and the message, after checking the handle
/// was set to NULL.
pub fn try_create(
    ctx: *const vkcuda_context,
    info: &vkcuda_image_create_info,
) -> Result<*mut vkcuda_image, (vkcuda_result, String)> {
    let mut im = 0x10 as *mut vkcuda_image;
    let r = unsafe { vkcuda_image_create(ctx, info, &mut im) };
    if r == VKCUDA_SUCCESS {
        assert!(!im.is_null());
        Ok(im)
    } else {
        assert!(im.is_null(), "the handle is set to NULL on failure");
        Err((r, last_error()))
    }
}

pub fn create(ctx: *const vkcuda_context, info: &vkcuda_image_create_info) -> *mut vkcuda_image {
    try_create(ctx, info).unwrap_or_else(|(r, m)| panic!("{r:?}: {m}"))
}
