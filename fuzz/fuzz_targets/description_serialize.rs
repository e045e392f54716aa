//! `vkcuda_share_description_serialize` on arbitrary C structs: a struct it
//! takes parses back (with `vkcuda_share_description_parse`) to the same
//! description, and the record is accepted by the Rust parser; a struct it refuses
//! leaves the output buffer untouched.
#![no_main]

mod common;
use common::*;

use ash::vk;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

const SIZE: usize = VKCUDA_SHARE_DESCRIPTION_SIZE as usize;

#[derive(Arbitrary, Debug)]
struct In {
    flags: u32,
    kind: i32,
    uuid: [u8; 16],
    allocator: i32,
    dedicated: u32,
    allocation_size: u64,
    offset: u64,
    size: u64,
    semaphore_type: i32,
    value: u64,
    image_flags: u32,
    image_type: i32,
    format: i32,
    extent: [u32; 3],
    mip_levels: u32,
    array_layers: u32,
    usage: u32,
    image_allocation_size: u64,
    image_plane_sizes: [u64; 3],
    small: bool,
}

fuzz_target!(|i: In| {
    // Small values most of the time, so that valid records are found.
    let k = |v: u64| if i.small { v % 8 } else { v };
    let k32 = |v: u32| if i.small { v % 8 } else { v };
    let d = vkcuda_share_description {
        flags: i.flags & if i.small { 1 } else { u32::MAX },
        kind: vkcuda_share_kind_raw(if i.small {
            i.kind.rem_euclid(5)
        } else {
            i.kind
        }),
        device_uuid: i.uuid,
        buffer: vkcuda_share_buffer_description {
            allocator: vkcuda_allocator_raw(if i.small {
                i.allocator.rem_euclid(3)
            } else {
                i.allocator
            }),
            dedicated: k32(i.dedicated),
            allocation_size: k(i.allocation_size),
            offset: k(i.offset),
            size: k(i.size),
        },
        semaphore: vkcuda_share_semaphore_description {
            semaphore_type: vkcuda_semaphore_type_raw(if i.small {
                i.semaphore_type.rem_euclid(3)
            } else {
                i.semaphore_type
            }),
            value: k(i.value),
        },
        image: vkcuda_share_image_description {
            description: vkcuda_image_create_info {
                flags: k32(i.image_flags),
                image_type: vkcuda_image_type_raw(if i.small {
                    i.image_type.rem_euclid(4)
                } else {
                    i.image_type
                }),
                // Single-plane formats, and NV12 and I420 (one fd and size per plane).
                format: if i.small {
                    [37, 43, 9, 100, 109, 97, 44, 1_000_156_003, 1_000_156_002]
                        [i.format.rem_euclid(9) as usize]
                } else {
                    i.format
                },
                extent: vk::Extent3D {
                    width: k32(i.extent[0]),
                    height: k32(i.extent[1]),
                    depth: k32(i.extent[2]),
                },
                mip_levels: k32(i.mip_levels),
                array_layers: k32(i.array_layers),
                usage: if i.small { i.usage & 0xFF } else { i.usage },
            },
            allocation_size: k(i.image_allocation_size),
            plane_allocation_sizes: i.image_plane_sizes.map(k),
        },
    };
    let mut bytes = [0xA5u8; SIZE];
    let r = check("vkcuda_share_description_serialize", unsafe {
        vkcuda_share_description_serialize(&d, bytes.as_mut_ptr(), SIZE)
    });
    if r != VKCUDA_SUCCESS {
        // The documented code for a description the library refuses.
        assert_eq!(r, VKCUDA_ERROR_INVALID_ARGUMENT, "{r:?}");
        assert!(
            bytes.iter().all(|&b| b == 0xA5),
            "a refused struct wrote the buffer"
        );
        return;
    }
    let parsed = vkcuda::ipc::Description::parse(&bytes).expect("the Rust parser takes it");
    let mut back: vkcuda_share_description = unsafe { std::mem::zeroed() };
    let r = check("vkcuda_share_description_parse", unsafe {
        vkcuda_share_description_parse(bytes.as_ptr(), SIZE, &mut back)
    });
    assert_eq!(r, VKCUDA_SUCCESS);
    // The member of the kind round-trips; the other members come back as zeros.
    assert_eq!(back.kind.0, d.kind.0);
    assert_eq!(back.device_uuid, d.device_uuid);
    match d.kind.0 {
        1 => {
            let (a, b) = (&d.buffer, &back.buffer);
            assert_eq!(
                (a.allocator.0, a.dedicated, a.allocation_size, a.offset, a.size),
                (b.allocator.0, b.dedicated, b.allocation_size, b.offset, b.size)
            );
        }
        2 => {
            assert_eq!(
                d.semaphore.semaphore_type.0,
                back.semaphore.semaphore_type.0
            );
            assert_eq!(d.semaphore.value, back.semaphore.value);
        }
        3 => {
            let (a, b) = (&d.image.description, &back.image.description);
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
            // Plane 0's size is `allocation_size` where plane_allocation_sizes[0] is 0.
            let mut sizes = d.image.plane_allocation_sizes;
            if sizes[0] == 0 {
                sizes[0] = d.image.allocation_size;
            }
            assert_eq!(back.image.allocation_size, sizes[0]);
            assert_eq!(back.image.plane_allocation_sizes, sizes);
        }
        k => panic!("serialized a description of kind {k}: {parsed:?}"),
    }
});
