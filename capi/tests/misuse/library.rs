//! The library group: versions, result names, the thread's message, live objects.

use std::ffi::CStr;
use std::ptr;

use ash::vk;

use crate::support::*;
use crate::matrix::*;

pub fn cases(m: &mut Matrix) {
    m.nulls(nulls![
        "vkcuda_live_objects_get", "counts" => |_, _| unsafe { vkcuda_live_objects_get(ptr::null_mut()) };
    ]);

    m.ran("vkcuda_version", "call", |_| {
        let v = vkcuda_version();
        let want: Vec<u32> = env!("CARGO_PKG_VERSION")
            .split('.')
            .map(|p| p.parse().unwrap())
            .collect();
        assert_eq!(v, pack_version(want[0], want[1], want[2]));
    });
    m.ran("vkcuda_version_string", "call", |_| {
        let s = unsafe { CStr::from_ptr(vkcuda_version_string()) };
        assert_eq!(s.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    });
    m.ran("vkcuda_result_to_string", "enum:result", |_| {
        for v in [1, 2, -16, -100, 12345, i32::MAX, i32::MIN, -0x7FFF_FFFF] {
            let s = unsafe { CStr::from_ptr(vkcuda_result_to_string(vkcuda_result_raw(v))) };
            assert_eq!(s.to_str().unwrap(), "VKCUDA_UNKNOWN_RESULT", "{v}");
        }
    });
    m.ran("vkcuda_last_error_message", "call", |_| {
        let mut i = Poison::<vkcuda_format_info>::new();
        let _ = unsafe { vkcuda_format_query(12345, i.ptr()) };
        assert!(!last_error().is_empty());
        // Another thread has its own message.
        let other = std::thread::spawn(last_error).join().unwrap();
        assert_eq!(other, "");
        ok(unsafe { vkcuda_format_query(vk::Format::R8_UNORM.as_raw(), i.ptr()) });
        assert_eq!(last_error(), "", "a success clears the message");
    });
}
