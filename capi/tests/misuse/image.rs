//! The image group: the format query, create, wrap, the getters (CUDA arrays,
//! surface and texture objects), export; and the mutations of an image description
//! that the share group uses too.

use std::ptr;

use ash::vk;

use crate::support::*;
use crate::env::image_create_info;
use crate::matrix::*;
use crate::nulls::{get, get0, Out};

const CREATE: &str = "vkcuda_image_create";
const WRAP: &str = "vkcuda_image_wrap";
const MIP: &str = "vkcuda_image_get_cuda_mipmapped_array";
const ARRAY: &str = "vkcuda_image_get_cuda_array";
const SURF: &str = "vkcuda_image_get_surface_object";
const TEX: &str = "vkcuda_image_create_texture_object";

pub fn cases(m: &mut Matrix) {
    const FORMAT: &str = "vkcuda_format_query";
    const INFO: &str = "vkcuda_image_get_info";
    const VK_IMAGE: &str = "vkcuda_image_get_vk_image";
    const EXPORT: &str = "vkcuda_image_export_fd";
    let out = vkcuda_image_destroy;
    m.constructor(CREATE, "image", |_| image_create_info(0, 1), vkcuda_image_create, out);
    m.constructor(WRAP, "image", |e| e.image_wrap_info(), vkcuda_image_wrap, out);
    m.nulls(nulls![
        FORMAT, "info" => |_, _| unsafe { vkcuda_format_query(vk::Format::R8_UNORM.as_raw(), ptr::null_mut()) };
        WRAP, "info->image" => |e, o| unsafe {
            let mut i = e.image_wrap_info();
            i.image = vk::Image::null();
            vkcuda_image_wrap(e.ctx, &i, o.handle(out))
        };
        WRAP, "info->memory" => |e, o| unsafe {
            let mut i = e.image_wrap_info();
            i.memory = vk::DeviceMemory::null();
            vkcuda_image_wrap(e.ctx, &i, o.handle(out))
        };
        TEX, "image" => |_, o| unsafe { vkcuda_image_create_texture_object(ptr::null(), &texture_info(), o.plain()) };
        TEX, "info" => |e, o| unsafe { vkcuda_image_create_texture_object(e.image, ptr::null(), o.plain()) };
        TEX, "texture" => |e, _| unsafe {
            vkcuda_image_create_texture_object(e.image, &texture_info(), ptr::null_mut())
        };
    ]);
    m.image_getter(MIP, "array", Out::lent, get(vkcuda_image_get_cuda_mipmapped_array));
    m.image_getter(ARRAY, "array", Out::lent, get0(vkcuda_image_get_cuda_array));
    m.image_getter(SURF, "surface", Out::plain, get0(vkcuda_image_get_surface_object));
    m.getter(INFO, ["image", "info"], |e| e.image, vkcuda_image_get_info);
    m.getter(VK_IMAGE, ["image", "vk_image"], |e| e.image, vkcuda_image_get_vk_image);
    m.getter(EXPORT, ["image", "fd"], |e| e.image, vkcuda_image_export_fd);

    // -- vkcuda_format_query
    for (label, format, want) in [
        ("not-a-format:format", 12345, I),
        ("negative:format", -1, I),
        ("min:format", i32::MIN, I),
        ("max-enum:format", 0x7FFF_FFFF, I),
        ("undefined:format", 0, I),
        (
            "3-channels:format",
            vk::Format::R8G8B8_UNORM.as_raw(),
            UNSUP,
        ),
        (
            "block:format",
            vk::Format::BC1_RGB_UNORM_BLOCK.as_raw(),
            UNSUP,
        ),
        (
            "depth:format",
            vk::Format::D24_UNORM_S8_UINT.as_raw(),
            UNSUP,
        ),
        (
            "packed-422:format",
            vk::Format::G8B8G8R8_422_UNORM.as_raw(),
            UNSUP,
        ),
    ] {
        m.ran(FORMAT, label, move |c| {
            let mut i = Poison::<vkcuda_format_info>::new();
            let r = unsafe { vkcuda_format_query(format, i.ptr()) };
            c.refused(r, &[want, I, UNSUP]);
            assert_eq!(r, want, "{format}");
            i.untouched();
        });
    }

    // -- vkcuda_image_create
    type IC = vkcuda_image_create_info;
    mutations(
        m,
        CREATE,
        image_info_mutations::<IC>("info->", |i| i, Zeros::Defaults),
        |_| image_create_info(0, 1),
        |c, i, want| {
            let mut im = poisoned();
            let r = unsafe { vkcuda_image_create(c.env.ctx, i, &mut im) };
            c.refused_made(r, want, im, vkcuda_image_destroy);
            Ran
        },
    );

    // -- vkcuda_image_wrap: the shared image's own VkImage and memory, borrowed.
    type IW = vkcuda_image_wrap_info;
    let mut muts: Vec<Mutation<IW>> = muts![IW;
        "unknown-bits:info->flags" [I] => |_, i| i.flags = 1;
        "zero:info->allocation_size" [I] => |_, i| i.allocation_size = 0;
        "too-small:info->allocation_size" [I] => |_, i| i.allocation_size -= 1;
        "larger-than-memory:info->allocation_size" [I] @fd_size => |_, i| i.allocation_size *= 4;
        "zero:info->export_handle_types" [I] => |_, i| i.export_handle_types = 0;
        "no-opaque-fd:info->export_handle_types" [I] => |_, i| i.export_handle_types = vk::ExternalMemoryHandleTypeFlags::DMA_BUF_EXT.as_raw();
        "dedicated-nonzero:info->offset" [I] => |_, i| i.offset = 65536;
        "past-end:info->offset" [I] => |_, i| { i.dedicated = 0; i.offset = i.allocation_size; };
        "misaligned:info->offset" [I] => |_, i| { i.dedicated = 0; i.allocation_size += 1; i.offset = 1; };
        "overflow:info->offset" [I] => |_, i| { i.dedicated = 0; i.offset = u64::MAX - 1; };
        "bool-2:info->dedicated" [I] => |_, i| i.dedicated = 2;
    ];
    muts.extend(image_info_mutations::<IW>(
        "info->description.",
        |i| &mut i.description,
        Zeros::Usage,
    ));
    wrap_cases(m, muts);

    // -- getters
    m.vulkan_only(MIP, "vulkan-only", |c| c.refused_nulled(&[U], |a| unsafe { vkcuda_image_get_cuda_mipmapped_array(c.env.image, a) }));
    for (label, level) in [("past-last:level", 5), ("absurd:level", u32::MAX)] {
        m.case(ARRAY, label, move |c| c.refused_nulled(&[I], |a| unsafe {
                vkcuda_image_get_cuda_array(c.env.image, level, a)
            }));
    }
    m.vulkan_only(ARRAY, "vulkan-only", |c| c.refused_nulled(&[U], |a| unsafe { vkcuda_image_get_cuda_array(c.env.image, 4, a) }));
    for (label, level) in [("past-last:level", 5), ("absurd:level", u32::MAX)] {
        m.case(SURF, label, move |c| c.refused_untouched(&[I], |s| unsafe {
                vkcuda_image_get_surface_object(c.env.image, level, s)
            }));
    }
    m.case(SURF, "no-storage-usage", |c| c.refused_untouched(&[UNSUP], |s| unsafe {
            vkcuda_image_get_surface_object(c.env.image_no_storage, 0, s)
        }));
    m.vulkan_only(SURF, "vulkan-only", |c| {
        if image_info(c.env.image).usage & vk::ImageUsageFlags::STORAGE.as_raw() == 0 {
            return Skipped("the device cannot make storage images of R8G8B8A8_UNORM");
        }
        c.refused_untouched(&[U], |s| unsafe { vkcuda_image_get_surface_object(c.env.image, 0, s) })
    });

    // -- vkcuda_image_create_texture_object
    texture_cases(m, TEX, |im, t, out| unsafe {
        vkcuda_image_create_texture_object(im, t, out)
    });
    m.vulkan_only(TEX, "vulkan-only", |c| {
        let mut t = texture_info();
        t.flags = VKCUDA_TEXTURE_ALL_LEVELS_BIT;
        t.level = u32::MAX; // ignored with ALL_LEVELS
        c.refused_untouched(&[U], |out| unsafe {
            vkcuda_image_create_texture_object(c.env.image, &t, out)
        })
    });

    m.ran("vkcuda_image_destroy", "null-ok:image", |_| {
        unsafe { vkcuda_image_destroy(ptr::null_mut()) };
    });
}

/// vkcuda_image_wrap with each mutation of the environment's wrap info: refused
/// with the mutation's codes, no image made.
pub fn wrap_cases(m: &mut Matrix, muts: Vec<Mutation<vkcuda_image_wrap_info>>) {
    let base = |e: &crate::env::Env| e.image_wrap_info();
    mutations(m, WRAP, muts, base, |c, i, want| {
        let mut im = poisoned();
        let r = unsafe { vkcuda_image_wrap(c.env.ctx, i, &mut im) };
        c.refused_made(r, want, im, vkcuda_image_destroy);
        Ran
    });
}

/// Mutations of a `vkcuda_image_create_info` at `p` (a path prefix such as
/// "info->"), for create, wrap and share descriptions. `Zeros::Usage`: wrap, where
/// usage 0 is refused; `Zeros::All`: descriptions, which hold resolved values (no
/// 0 levels, layers or usage).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Zeros {
    Defaults,
    Usage,
    All,
}

/// Values a share description may hold although no device makes such an image:
/// only the importing device can refuse them.
pub const RECORD_OK: [&str; 5] = [
    "absurd:extent.width",
    "absurd:extent.height",
    "3d-absurd:extent.depth",
    "absurd:array_layers",
    "depth-attachment:usage",
];

pub fn image_info_mutations<T: 'static>(
    p: &str,
    field: fn(&mut T) -> &mut vkcuda_image_create_info,
    zeros: Zeros,
) -> Vec<Mutation<T>> {
    type F = fn(&mut vkcuda_image_create_info);
    let mut list: Vec<(&str, &str, &[vkcuda_result], F)> = vec![
        ("unknown-bits", "flags", &[I], |i| i.flags = 0x4),
        // A linear (single-plane) frame has one mip level.
        ("linear-with-levels", "flags", &[I], |i| {
            i.flags = 0x2;
            i.mip_levels = 2;
        }),
        ("all-bits", "flags", &[I], |i| i.flags = u32::MAX),
        ("cube-not-square", "flags", &[I], |i| {
            i.flags = 1;
            i.array_layers = 6;
            i.extent.height = 8;
        }),
        ("enum-2", "image_type", &[I], |i| {
            i.image_type = vkcuda_image_type_raw(2)
        }),
        ("enum-negative", "image_type", &[I], |i| {
            i.image_type = vkcuda_image_type_raw(-1)
        }),
        ("enum-max", "image_type", &[I], |i| {
            i.image_type = vkcuda_image_type_raw(0x7FFF_FFFF)
        }),
        ("undefined", "format", &[I, UNSUP], |i| i.format = 0),
        ("not-a-format", "format", &[I], |i| i.format = 12345),
        ("negative", "format", &[I], |i| i.format = -1),
        ("3-channels", "format", &[UNSUP], |i| {
            i.format = vk::Format::R8G8B8_UNORM.as_raw()
        }),
        ("depth", "format", &[UNSUP], |i| {
            i.format = vk::Format::D32_SFLOAT.as_raw()
        }),
        ("zero", "extent.width", &[I], |i| i.extent.width = 0),
        ("absurd", "extent.width", &[I, UNSUP], |i| {
            i.extent.width = u32::MAX
        }),
        ("zero-2d", "extent.height", &[I], |i| i.extent.height = 0),
        ("absurd", "extent.height", &[I, UNSUP], |i| {
            i.extent.height = u32::MAX
        }),
        ("1d-height-2", "extent.height", &[I], |i| {
            i.image_type = vkcuda_image_type_raw(1);
            i.extent.height = 2;
        }),
        ("2d-depth-2", "extent.depth", &[I], |i| i.extent.depth = 2),
        ("3d-absurd", "extent.depth", &[I, UNSUP], |i| {
            i.image_type = vkcuda_image_type_raw(3);
            i.extent.depth = u32::MAX;
        }),
        ("absurd", "mip_levels", &[I], |i| i.mip_levels = 100),
        ("absurd", "array_layers", &[I, UNSUP], |i| {
            i.array_layers = u32::MAX
        }),
        ("3d-layers", "array_layers", &[I], |i| {
            i.image_type = vkcuda_image_type_raw(3);
            i.extent.depth = 4;
            i.array_layers = 2;
        }),
        ("unknown-bits", "usage", &[I, UNSUP], |i| {
            i.usage = 0x8000_0000
        }),
        ("depth-attachment", "usage", &[I, UNSUP], |i| {
            i.usage = vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT.as_raw()
        }),
    ];
    if zeros != Zeros::Defaults {
        list.push(("zero", "usage", &[I], |i| i.usage = 0));
    }
    if zeros == Zeros::All {
        list.push(("zero", "mip_levels", &[I], |i| i.mip_levels = 0));
        list.push(("zero", "array_layers", &[I], |i| i.array_layers = 0));
    }
    list.into_iter()
        .map(|(kind, f, want, apply)| {
            let mut mu = mutation(&format!("{kind}:{p}{f}"), want, move |_, t: &mut T| {
                apply(field(t))
            });
            mu.record_ok = RECORD_OK.contains(&format!("{kind}:{f}").as_str());
            mu
        })
        .collect()
}

/// `f`'s cases for every bad texture description: `create(image, info, output)`
/// refused, the output untouched; the border colour takes any value.
pub fn texture_cases(
    m: &mut Matrix,
    f: &'static str,
    create: fn(*const vkcuda_image, *const vkcuda_texture_info, *mut u64) -> vkcuda_result,
) {
    mutations(m, f, texture_mutations(), |_| texture_info(), move |c, t, want| {
        c.refused_untouched(want, |out| create(c.env.image, t, out))
    });
    let why = "every float is a colour (used with the BORDER mode only)";
    m.any(f, "info->border_color", why);
}

/// Bad texture descriptions: every field (the border colour aside: any float).
fn texture_mutations() -> Vec<Mutation<vkcuda_texture_info>> {
    type T = vkcuda_texture_info;
    muts![T;
        "unknown-bits:info->flags" [I] => |_, t| t.flags = 4;
        "all-bits:info->flags" [I] => |_, t| t.flags = u32::MAX;
        "past-last:info->level" [I] => |_, t| t.level = 5;
        "absurd:info->level" [I] => |_, t| t.level = u32::MAX;
        "enum-2:info->filter" [I] => |_, t| t.filter = vkcuda_filter_raw(2);
        "enum-negative:info->filter" [I] => |_, t| t.filter = vkcuda_filter_raw(-1);
        "linear-integers:info->filter" [I] says "linear filtering needs float results" => |_, t| t.filter = vkcuda_filter_raw(1);
        "enum-4:info->address_mode" [I] => |_, t| t.address_mode = vkcuda_address_mode_raw(4);
        "wrap-unnormalized:info->address_mode" [I] => |_, t| t.address_mode = vkcuda_address_mode_raw(1);
        "enum-2:info->read_mode" [I] => |_, t| t.read_mode = vkcuda_read_mode_raw(2);
        "enum-max:info->read_mode" [I] => |_, t| t.read_mode = vkcuda_read_mode_raw(0x7FFF_FFFF);
    ]
}
