//! Shared images with arbitrary arguments on a Vulkan-only context: create info
//! (type, format, extent, levels, layers, usage, flags), and, on the shared image,
//! wrap descriptions, level getters, texture descriptions and the handoff
//! barriers with arbitrary layouts. An image that is made must describe itself
//! consistently, and its description and memory fd must import back into the
//! context. Every call: no panic, a message naming the function on failure,
//! outputs written only on success, and nothing left behind.
#![no_main]

mod common;
use common::*;

use ash::vk;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

/// Formats of the table and around it.
const FORMATS: [i32; 12] = [37, 43, 44, 9, 13, 16, 70, 76, 97, 98, 100, 109];

#[derive(Arbitrary, Debug)]
struct Desc {
    flags: u32,
    image_type: i32,
    format_sel: u8,
    format: i32,
    extent_sel: [u8; 3],
    extent: [u32; 3],
    levels_sel: u8,
    mip_levels: u32,
    layers_sel: u8,
    array_layers: u32,
    usage: u32,
    usage_raw: bool,
}

impl Desc {
    fn info(&self) -> vkcuda_image_create_info {
        vkcuda_image_create_info {
            flags: self.flags % 4,
            image_type: vkcuda_image_type_raw(if self.image_type % 8 == 7 {
                self.image_type
            } else {
                self.image_type.rem_euclid(4)
            }),
            format: if self.format_sel.is_multiple_of(4) {
                self.format
            } else {
                FORMATS[self.format_sel as usize % FORMATS.len()]
            },
            extent: vk::Extent3D {
                width: dim(self.extent_sel[0], self.extent[0]),
                height: dim(self.extent_sel[1], self.extent[1]),
                depth: dim(self.extent_sel[2], self.extent[2]) % 8,
            },
            mip_levels: dim(self.levels_sel, self.mip_levels) % 16,
            array_layers: dim(self.layers_sel, self.array_layers) % 16,
            usage: if self.usage_raw {
                self.usage
            } else {
                self.usage & 0xFF
            },
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    Create(Desc),
    Wrap {
        flags: u32,
        allocation_delta: i16,
        desc: Desc,
        real: bool,
    },
    Level {
        level: u32,
        which: u8,
    },
    Texture {
        flags: u32,
        level: u32,
        filter: i32,
        address_mode: i32,
        read_mode: i32,
    },
    Barrier {
        release: bool,
        flags: u32,
        layout: i32,
        near: bool,
    },
}

fn info_of(im: *const vkcuda_image) -> vkcuda_image_info {
    let mut i: vkcuda_image_info = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { vkcuda_image_get_info(im, &mut i) }, VKCUDA_SUCCESS);
    i
}

fn as_create_info(i: &vkcuda_image_info) -> vkcuda_image_create_info {
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

/// A made image: its resolved description agrees with what was asked, and it
/// travels: describe, export, import the description back into the context.
fn made(s: &Shared, asked: &vkcuda_image_create_info, im: *mut vkcuda_image) {
    let i = info_of(im);
    assert_eq!(i.format, asked.format);
    assert!(i.extent.width == asked.extent.width && i.extent.height >= 1 && i.extent.depth >= 1);
    assert!(i.mip_levels >= 1 && i.array_layers >= 1);
    assert!(asked.mip_levels == 0 || i.mip_levels == asked.mip_levels);
    assert!(asked.usage == 0 || i.usage == asked.usage);
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    check("vkcuda_image_describe", unsafe {
        vkcuda_image_describe(im, &mut d)
    });
    let mut fd = -1;
    check("vkcuda_image_export_fd", unsafe {
        vkcuda_image_export_fd(im, &mut fd)
    });
    let mut back = std::ptr::null_mut();
    let r = check("vkcuda_image_import_description", unsafe {
        vkcuda_image_import_description(s.ctx, &d, fd, &mut back)
    });
    assert_eq!(r, VKCUDA_SUCCESS, "an image made here does not import back");
    let b = info_of(back);
    assert_eq!(
        format!("{:?}", as_create_info(&b)),
        format!("{:?}", as_create_info(&i))
    );
    unsafe {
        vkcuda_image_destroy(back);
        vkcuda_image_destroy(im);
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let s = shared();
    let fds = fd_count();
    let real = info_of(s.image);
    for op in ops.into_iter().take(8) {
        match op {
            Op::Create(d) => {
                let info = d.info();
                let mut im = 0x5A5A as *mut vkcuda_image;
                let r = check("vkcuda_image_create", unsafe {
                    vkcuda_image_create(s.ctx, &info, &mut im)
                });
                if r == VKCUDA_SUCCESS {
                    made(s, &info, im);
                } else {
                    assert!(im.is_null());
                    assert!(
                        matches!(
                            r,
                            VKCUDA_ERROR_INVALID_ARGUMENT
                                | VKCUDA_ERROR_UNSUPPORTED
                                | VKCUDA_ERROR_OUT_OF_MEMORY
                        ),
                        "{r:?}"
                    );
                }
            }
            Op::Wrap {
                flags,
                allocation_delta,
                desc,
                real: same,
            } => {
                let info = vkcuda_image_wrap_info {
                    flags: flags % 2,
                    image: real.image,
                    memory: real.memory,
                    allocation_size: real
                        .allocation_size
                        .wrapping_add(allocation_delta as i64 as u64),
                    description: if same {
                        as_create_info(&real)
                    } else {
                        desc.info()
                    },
                    offset: 0,
                    dedicated: 1,
                    export_handle_types: 1,
                    planes: [vkcuda_image_plane_memory {
                        memory: vk::DeviceMemory::null(),
                        allocation_size: 0,
                        offset: 0,
                    }; 3],
                };
                let mut im = 0x5A5A as *mut vkcuda_image;
                let r = check("vkcuda_image_wrap", unsafe {
                    vkcuda_image_wrap(s.ctx, &info, &mut im)
                });
                if r == VKCUDA_SUCCESS {
                    // Vulkan-only: the checks ran, no CUDA view; the Vulkan objects stay ours.
                    assert_eq!(info_of(im).wrapped, 1);
                    unsafe { vkcuda_image_destroy(im) };
                    assert_eq!(info_of(s.image).image, real.image);
                } else {
                    assert!(im.is_null());
                }
            }
            Op::Level { level, which } => {
                let level = if which & 4 != 0 { level % 8 } else { level };
                let mut out = 0u64;
                let r = match which % 2 {
                    0 => check("vkcuda_image_get_cuda_array", unsafe {
                        vkcuda_image_get_cuda_array(s.image, level, (&mut out as *mut u64).cast())
                    }),
                    _ => check("vkcuda_image_get_surface_object", unsafe {
                        vkcuda_image_get_surface_object(s.image, level, &mut out)
                    }),
                };
                let want = if level >= real.mip_levels {
                    VKCUDA_ERROR_INVALID_ARGUMENT
                } else {
                    VKCUDA_ERROR_CUDA_UNAVAILABLE
                };
                assert_eq!(r, want);
                assert_eq!(out, 0, "a refused call wrote the output");
            }
            Op::Texture {
                flags,
                level,
                filter,
                address_mode,
                read_mode,
            } => {
                let t = vkcuda_texture_info {
                    flags: flags % 8,
                    level: level % 8,
                    filter: vkcuda_filter_raw(filter % 3),
                    address_mode: vkcuda_address_mode_raw(address_mode % 5),
                    read_mode: vkcuda_read_mode_raw(read_mode % 3),
                    border_color: [0.0; 4],
                };
                let mut out = 0u64;
                let r = check("vkcuda_image_create_texture_object", unsafe {
                    vkcuda_image_create_texture_object(s.image, &t, &mut out)
                });
                assert!(matches!(
                    r,
                    VKCUDA_ERROR_INVALID_ARGUMENT | VKCUDA_ERROR_CUDA_UNAVAILABLE
                ));
                assert_eq!(out, 0);
            }
            Op::Barrier {
                release,
                flags,
                layout,
                near,
            } => {
                let layout = if near { layout.rem_euclid(12) } else { layout };
                let h = vkcuda_handoff_info {
                    flags: flags % 2,
                    queue_family_index: 0,
                    stage_mask: 0,
                    access_mask: 0,
                };
                s.with_cmd(|cmd| {
                    let r = if release {
                        check("vkcuda_image_cmd_release_to_cuda", unsafe {
                            vkcuda_image_cmd_release_to_cuda(s.image, cmd, &h, layout)
                        })
                    } else {
                        check("vkcuda_image_cmd_acquire_from_cuda", unsafe {
                            vkcuda_image_cmd_acquire_from_cuda(s.image, cmd, &h, layout)
                        })
                    };
                    if r != VKCUDA_SUCCESS {
                        assert_eq!(r, VKCUDA_ERROR_INVALID_ARGUMENT);
                    }
                });
            }
        }
        s.no_leak(fds, "image_args");
    }
});
