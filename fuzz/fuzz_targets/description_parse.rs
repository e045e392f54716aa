//! The cross-process description parser, on arbitrary bytes: the Rust parser
//! (`vkcuda::ipc::Description::parse`) and the C entry point
//! (`vkcuda_share_description_parse`) must agree; a record either takes is
//! canonical (serializing it again gives the same bytes), and a refused one
//! leaves the output as it was.
#![no_main]

mod common;
use common::*;

use std::mem::{size_of, MaybeUninit};

use libfuzzer_sys::fuzz_target;
use vkcuda::ipc::Description;

const SIZE: usize = VKCUDA_SHARE_DESCRIPTION_SIZE as usize;

fn bytes_of<T>(t: &MaybeUninit<T>) -> &[u8] {
    unsafe { std::slice::from_raw_parts(t.as_ptr().cast::<u8>(), size_of::<T>()) }
}

fuzz_target!(|bytes: &[u8]| {
    let rust = Description::parse(bytes);
    let mut c = MaybeUninit::<vkcuda_share_description>::uninit();
    unsafe {
        std::ptr::write_bytes(
            c.as_mut_ptr().cast::<u8>(),
            0xA5,
            size_of::<vkcuda_share_description>(),
        )
    };
    let r = check("vkcuda_share_description_parse", unsafe {
        vkcuda_share_description_parse(bytes.as_ptr(), bytes.len(), c.as_mut_ptr())
    });
    match &rust {
        Ok(d) => {
            assert_eq!(
                r, VKCUDA_SUCCESS,
                "the C parser refused what Rust took: {d:?}"
            );
            assert_eq!(bytes.len(), SIZE);
            assert_eq!(d.to_bytes().unwrap().as_slice(), bytes, "not canonical");
            let mut again = [0u8; SIZE];
            let r = check("vkcuda_share_description_serialize", unsafe {
                vkcuda_share_description_serialize(c.as_ptr(), again.as_mut_ptr(), SIZE)
            });
            assert_eq!(r, VKCUDA_SUCCESS);
            assert_eq!(again.as_slice(), bytes, "the C round trip differs");
        }
        Err(e) => {
            // The documented code for any record the library refuses (the header
            // of vkcuda_share_description_parse): never another one.
            assert_eq!(
                r, VKCUDA_ERROR_INVALID_ARGUMENT,
                "Rust refused ({}), C returned {r:?}",
                e.message
            );
            assert!(
                bytes_of(&c).iter().all(|&b| b == 0xA5),
                "a refused record wrote the output"
            );
        }
    }
});
