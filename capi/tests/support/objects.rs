//! The library's objects as a C caller makes them: a Vulkan-only context, the
//! create infos with the defaults, the getters of buffers and images, and a share
//! description's bytes (`record`).

use std::ptr;

use ash::vk;
use vkcuda_c::*;

use super::ok;

pub fn vulkan_only_context() -> *mut vkcuda_context {
    let info = vkcuda_standalone_create_info {
        flags: VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT,
        physical_device_index: 0,
    };
    let mut ctx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create_standalone(&info, &mut ctx) });
    assert!(!ctx.is_null());
    ctx
}

pub fn buffer_info(b: *const vkcuda_buffer) -> vkcuda_buffer_info {
    let mut info: vkcuda_buffer_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_buffer_get_info(b, &mut info) });
    info
}

/// `allocator`: 0 Vulkan, 1 CUDA (as `vkcuda_allocator`); no flags, the default usage.
pub fn buffer_create_info(size: u64, allocator: i32) -> vkcuda_buffer_create_info {
    vkcuda_buffer_create_info {
        flags: 0,
        allocator: vkcuda_allocator_raw(allocator),
        size,
        usage: 0,
    }
}

pub fn create_buffer(ctx: *const vkcuda_context, size: u64, allocator: i32) -> *mut vkcuda_buffer {
    let mut b = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_create(ctx, &buffer_create_info(size, allocator), &mut b) });
    b
}

/// What importing a buffer's memory fd needs, from the buffer's info.
pub fn buffer_import_info(i: &vkcuda_buffer_info) -> vkcuda_buffer_import_info {
    vkcuda_buffer_import_info {
        flags: 0,
        allocator: vkcuda_allocator_raw(i.allocator as i32),
        allocation_size: i.allocation_size,
        offset: i.offset,
        size: i.size,
        dedicated: i.dedicated,
        usage: 0,
    }
}

/// An image description with every optional field 0 (the defaults: a full mip
/// chain, one layer, the default usage). `image_type`: 0 2D, 1 1D, 3 3D.
pub fn image_desc(
    image_type: i32,
    format: vk::Format,
    width: u32,
    height: u32,
    depth: u32,
) -> vkcuda_image_create_info {
    vkcuda_image_create_info {
        flags: 0,
        image_type: vkcuda_image_type_raw(image_type),
        format: format.as_raw(),
        extent: vk::Extent3D {
            width,
            height,
            depth,
        },
        mip_levels: 0,
        array_layers: 0,
        usage: 0,
    }
}

/// The description an image's info holds (resolved: levels, layers and usage as
/// made), as wrap and import take it.
pub fn image_desc_of(i: &vkcuda_image_info) -> vkcuda_image_create_info {
    vkcuda_image_create_info {
        flags: i.flags,
        image_type: vkcuda_image_type_raw(i.image_type as i32),
        format: i.format,
        extent: i.extent,
        mip_levels: i.mip_levels,
        array_layers: i.array_layers,
        usage: i.usage,
    }
}

/// A wrap of `image`, bound at offset 0 to `memory` (`allocation_size` bytes, a
/// dedicated OPAQUE_FD allocation), described by `description`; no per-plane memory.
pub fn image_wrap_info(
    image: vk::Image,
    memory: vk::DeviceMemory,
    allocation_size: u64,
    description: vkcuda_image_create_info,
) -> vkcuda_image_wrap_info {
    let no_plane = vkcuda_image_plane_memory {
        memory: vk::DeviceMemory::null(),
        allocation_size: 0,
        offset: 0,
    };
    vkcuda_image_wrap_info {
        flags: 0,
        image,
        memory,
        allocation_size,
        description,
        offset: 0,
        dedicated: 1,
        export_handle_types: vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD.as_raw(),
        planes: [no_plane; 3],
    }
}

/// BT.709 colour as video carries it: narrow range, chroma cosited with the even
/// columns and midway between the rows.
pub fn bt709() -> vkcuda_video_color {
    vkcuda_video_color {
        flags: 0,
        matrix_coefficients: 1,
        transfer_characteristics: 1,
        colour_primaries: 1,
        full_range: 0,
        x_chroma_offset: 0,
        y_chroma_offset: 1,
    }
}

/// A texture of level 0: point filtering, clamped, element-type reads, no flags.
pub fn texture_info() -> vkcuda_texture_info {
    vkcuda_texture_info {
        flags: 0,
        level: 0,
        filter: vkcuda_filter_raw(0),
        address_mode: vkcuda_address_mode_raw(0),
        read_mode: vkcuda_read_mode_raw(0),
        border_color: [0.0; 4],
    }
}

pub fn image_info(im: *const vkcuda_image) -> vkcuda_image_info {
    let mut i: vkcuda_image_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_image_get_info(im, &mut i) });
    i
}

/// `semaphore_type`: 0 timeline, 1 binary.
pub fn semaphore_create_info(
    semaphore_type: i32,
    initial_value: u64,
) -> vkcuda_semaphore_create_info {
    vkcuda_semaphore_create_info {
        flags: 0,
        semaphore_type: vkcuda_semaphore_type_raw(semaphore_type),
        initial_value,
        host_wait_spin_ns: 0,
    }
}

pub fn create_semaphore(
    ctx: *const vkcuda_context,
    semaphore_type: i32,
    initial_value: u64,
) -> *mut vkcuda_semaphore {
    let mut s = ptr::null_mut();
    let info = semaphore_create_info(semaphore_type, initial_value);
    ok(unsafe { vkcuda_semaphore_create(ctx, &info, &mut s) });
    s
}

/// A handoff to or from `queue_family_index` with the default stages and accesses.
pub fn handoff_info(queue_family_index: u32) -> vkcuda_handoff_info {
    vkcuda_handoff_info {
        flags: 0,
        queue_family_index,
        stage_mask: 0,
        access_mask: 0,
    }
}

/// The 128 bytes of a share description, as they go over a socket.
pub fn record(d: &vkcuda_share_description) -> [u8; 128] {
    let mut b = [0u8; 128];
    ok(unsafe { vkcuda_share_description_serialize(d, b.as_mut_ptr(), b.len()) });
    b
}
