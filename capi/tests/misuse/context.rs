//! The context group: device queries, context creation, the context's getters and
//! the CUDA driver version.

use std::ffi::c_char;
use std::ptr;

use ash::vk;

use crate::support::*;
use crate::env::{Driver, Env};
use crate::matrix::*;

const VULKAN_ONLY: u32 = VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT;

fn gipa(e: &Env) -> PFN_vkGetInstanceProcAddr {
    Some(e.engine.entry.static_fn().get_instance_proc_addr)
}

/// A create info for the environment's engine-style device, `change`d.
fn create_info(e: &Env, change: fn(&mut vkcuda_context_create_info)) -> vkcuda_context_create_info {
    let mut i = e.engine.create_info(VULKAN_ONLY);
    change(&mut i);
    i
}

/// A context paired with the CUDA device of the Vulkan device: made with a real
/// driver (and destroyed here), refused without one (CUDA_UNAVAILABLE) or with the
/// fake one, whose device matches none (DEVICE_MISMATCH).
fn paired_or_refused(c: &Call, r: vkcuda_result, ctx: *mut vkcuda_context) {
    match c.env.driver {
        Driver::None => c.refused_made(r, &[U], ctx, vkcuda_context_destroy),
        Driver::Fake => c.refused_made(r, &[MISMATCH], ctx, vkcuda_context_destroy),
        Driver::Real => {
            c.succeeded(r);
            unsafe { vkcuda_context_destroy(ctx) };
        }
    }
}

/// The engine-context constructors: `vkcuda_context_create`, and
/// `vkcuda_context_create_with_device_info` with a valid device create info (the
/// environment's device enables no feature the barriers depend on).
type Create = unsafe fn(*const vkcuda_context_create_info, *mut *mut vkcuda_context) -> vkcuda_result;

unsafe fn create_plain(i: *const vkcuda_context_create_info, o: *mut *mut vkcuda_context) -> vkcuda_result {
    vkcuda_context_create(i, o)
}

unsafe fn create_told(i: *const vkcuda_context_create_info, o: *mut *mut vkcuda_context) -> vkcuda_result {
    let exts = [ash::khr::external_memory_fd::NAME.as_ptr()];
    let d = vk::DeviceCreateInfo::default().enabled_extension_names(&exts);
    // (The C prototype's VkDeviceCreateInfo is ash's with a 'static lifetime.)
    vkcuda_context_create_with_device_info(i, (&d as *const vk::DeviceCreateInfo).cast(), o)
}

const CREATES: [(&str, Create); 2] = [
    ("vkcuda_context_create", create_plain),
    ("vkcuda_context_create_with_device_info", create_told),
];

/// The cases of `info` of one engine-context constructor.
fn create_cases(m: &mut Matrix, f: &'static str, create: Create) {
    let create_fails = move |c: &Call, info: *const vkcuda_context_create_info, want: &[vkcuda_result]| {
        let mut ctx = poisoned();
        let r = unsafe { create(info, &mut ctx) };
        c.refused_made(r, want, ctx, vkcuda_context_destroy);
    };
    type CI = vkcuda_context_create_info;
    let muts: Vec<Mutation<CI>> = muts![CI;
        "unknown-bits:info->flags" [I] => |_, i| i.flags |= 0x8000_0000;
        "standalone-bit:info->flags" [I] => |_, i| i.flags |= VKCUDA_CONTEXT_CREATE_PHYSICAL_DEVICE_INDEX_BIT;
        "with-vulkan-only:info->cuda_context" [I] => |_, i| i.cuda_context = 0x1000 as *mut CUctx_st;
    ];
    mutations(
        m,
        f,
        muts,
        |e| e.engine.create_info(VULKAN_ONLY),
        move |c, i, want| {
            create_fails(c, i, want);
            Ran
        },
    );
    m.ran(f, "null-ok:info->get_device_proc_addr", move |c| {
        // Valid: loaded from the instance. NULL cuda_context: the primary context.
        let info = c.env.engine.create_info(VULKAN_ONLY);
        assert!(info.get_device_proc_addr.is_none());
        let mut ctx = ptr::null_mut();
        c.succeeded(unsafe { create(&info, &mut ctx) });
        unsafe { vkcuda_context_destroy(ctx) };
    });
    m.ran(f, "null-ok:info->cuda_context", move |c| {
        // The primary context of the matching CUDA device.
        let info = c.env.engine.create_info(0);
        let mut ctx = poisoned();
        let r = unsafe { create(&info, &mut ctx) };
        paired_or_refused(c, r, ctx);
    });
    m.ran(f, "wrong-gdpa:info->get_device_proc_addr", move |c| {
        unsafe extern "system" fn nothing(
            _: vk::Device,
            _: *const std::ffi::c_char,
        ) -> vk::PFN_vkVoidFunction {
            None
        }
        let mut info = c.env.engine.create_info(VULKAN_ONLY);
        info.get_device_proc_addr = Some(nothing);
        create_fails(c, &info, &[I]);
    });

    m.case(f, "vulkan-1.0:info->instance", move |c| {
        // An engine instance of apiVersion 1.0 with what a 1.0 engine enables for
        // external memory: refused at create, not aborted at the first buffer.
        let old = EngineDevice::with_version(
            vk::API_VERSION_1_0,
            &[
                ash::khr::get_physical_device_properties2::NAME,
                ash::khr::external_memory_capabilities::NAME,
                ash::khr::external_semaphore_capabilities::NAME,
            ],
            &[
                ash::khr::external_memory::NAME,
                ash::khr::external_memory_fd::NAME,
            ],
            |i, p| unsafe { i.get_physical_device_properties(p) }.api_version >= vk::API_VERSION_1_2,
        );
        if !old.hides_1_1_commands() {
            return Skipped(
                "this driver resolves Vulkan 1.1 commands for an apiVersion 1.0 instance (NVIDIA's \
                 does): nothing is missing, so nothing is refused (tests/context.rs checks it works)",
            );
        }
        create_fails(c, &old.create_info(VULKAN_ONLY), &[I]);
        assert!(last_error().contains("apiVersion 1.0"), "{}", last_error());
        Ran
    });
}

/// `device_create_info`: NULL is valid (what every device has), a structure of
/// another type and NULL extension names with a count are refused.
fn device_info_cases(m: &mut Matrix) {
    const F: &str = "vkcuda_context_create_with_device_info";
    m.ran(F, "null-ok:device_create_info", |c| {
        let info = c.env.engine.create_info(VULKAN_ONLY);
        let mut ctx = poisoned();
        c.succeeded(unsafe { vkcuda_context_create_with_device_info(&info, ptr::null(), &mut ctx) });
        unsafe { vkcuda_context_destroy(ctx) };
    });
    m.ran(F, "wrong-stype:device_create_info", |c| {
        let info = c.env.engine.create_info(VULKAN_ONLY);
        let d = vk::DeviceCreateInfo {
            s_type: vk::StructureType::INSTANCE_CREATE_INFO,
            ..Default::default()
        };
        let mut ctx = poisoned();
        let r = unsafe { vkcuda_context_create_with_device_info(&info, &d, &mut ctx) };
        c.refused_made(r, &[I], ctx, vkcuda_context_destroy);
    });
    m.ran(F, "null-names:device_create_info", |c| {
        let info = c.env.engine.create_info(VULKAN_ONLY);
        let d = vk::DeviceCreateInfo {
            enabled_extension_count: 1,
            ..Default::default()
        };
        let mut ctx = poisoned();
        let r = unsafe { vkcuda_context_create_with_device_info(&info, &d, &mut ctx) };
        c.refused_made(r, &[N], ctx, vkcuda_context_destroy);
    });
}

pub fn cases(m: &mut Matrix) {
    const EXTS: &str = "vkcuda_device_extensions_enumerate";
    const QUERY: &str = "vkcuda_physical_device_query";
    const ENUM: &str = "vkcuda_physical_devices_enumerate";
    const STANDALONE: &str = "vkcuda_context_create_standalone";
    const HANDLES: &str = "vkcuda_context_get_vulkan_handles";
    const CUDA_INFO: &str = "vkcuda_context_get_cuda_info";
    const DRIVER: &str = "vkcuda_cuda_driver_get_version";
    m.nulls(nulls![
        EXTS, "count" => |_, o| unsafe {
            vkcuda_device_extensions_enumerate(
                ptr::null_mut(),
                o.plain::<[*const c_char; 8]>().cast(),
            )
        };
        QUERY, "instance" => |e, o| unsafe {
            vkcuda_physical_device_query(
                vk::Instance::null(),
                e.engine.physical,
                gipa(e),
                o.plain(),
            )
        };
        QUERY, "physical_device" => |e, o| unsafe {
            let instance = e.engine.instance.handle();
            vkcuda_physical_device_query(instance, vk::PhysicalDevice::null(), gipa(e), o.plain())
        };
        QUERY, "get_instance_proc_addr" => |e, o| unsafe {
            let instance = e.engine.instance.handle();
            vkcuda_physical_device_query(instance, e.engine.physical, None, o.plain())
        };
        QUERY, "support" => |e, _| unsafe {
            let instance = e.engine.instance.handle();
            vkcuda_physical_device_query(instance, e.engine.physical, gipa(e), ptr::null_mut())
        };
        ENUM, "count" => |_, o| unsafe {
            let supports = o.plain::<[vkcuda_physical_device_support; 1]>();
            vkcuda_physical_devices_enumerate(ptr::null_mut(), supports.cast())
        };
        STANDALONE, "context" => |_, _| unsafe { vkcuda_context_create_standalone(ptr::null(), ptr::null_mut()) };
        DRIVER, "version" => |_, _| unsafe { vkcuda_cuda_driver_get_version(ptr::null_mut()) };
    ]);
    for (f, create) in CREATES {
        m.nulls(nulls![
            f, "info" => |_, o| unsafe { create(ptr::null(), o.handle(vkcuda_context_destroy)) };
            f, "context" => |e, _| unsafe { create(&create_info(e, |_| ()), ptr::null_mut()) };
            f, "info->instance" => |e, o| unsafe {
                let i = create_info(e, |i| i.instance = vk::Instance::null());
                create(&i, o.handle(vkcuda_context_destroy))
            };
            f, "info->physical_device" => |e, o| unsafe {
                let i = create_info(e, |i| i.physical_device = vk::PhysicalDevice::null());
                create(&i, o.handle(vkcuda_context_destroy))
            };
            f, "info->device" => |e, o| unsafe {
                let i = create_info(e, |i| i.device = vk::Device::null());
                create(&i, o.handle(vkcuda_context_destroy))
            };
            f, "info->get_instance_proc_addr" => |e, o| unsafe {
                let i = create_info(e, |i| i.get_instance_proc_addr = None);
                create(&i, o.handle(vkcuda_context_destroy))
            };
        ]);
    }
    m.getter(HANDLES, ["context", "handles"], |e| e.ctx, vkcuda_context_get_vulkan_handles);
    m.getter(CUDA_INFO, ["context", "cuda_info"], |e| e.ctx, vkcuda_context_get_cuda_info);

    // -- vkcuda_device_extensions_enumerate
    m.ran(EXTS, "null-ok:names", |c| {
        let mut n = 0;
        c.succeeded(unsafe { vkcuda_device_extensions_enumerate(&mut n, ptr::null_mut()) });
        assert!(n >= 2);
    });
    m.ran(EXTS, "too-small:count", |c| {
        // Vulkan-style: the first *count names are written, *count says how many.
        let mut names = [ptr::null(); 8];
        let mut n = 1;
        let r = unsafe { vkcuda_device_extensions_enumerate(&mut n, names.as_mut_ptr()) };
        c.refused(r, &[I]);
        assert_eq!(n, 1);
        assert!(!names[0].is_null() && names[1].is_null());
        let mut n = 0;
        let r = unsafe { vkcuda_device_extensions_enumerate(&mut n, names.as_mut_ptr()) };
        c.refused(r, &[I]);
        assert_eq!(n, 0);
    });
    m.ran(EXTS, "absurd:count", |c| {
        let mut names = [ptr::null(); 8];
        let mut n = u32::MAX;
        c.succeeded(unsafe { vkcuda_device_extensions_enumerate(&mut n, names.as_mut_ptr()) });
        assert!(n >= 2 && (n as usize) < names.len());
    });

    // -- vkcuda_physical_device_query
    fn query(
        c: &Call,
        instance: vk::Instance,
        physical: vk::PhysicalDevice,
        gipa: PFN_vkGetInstanceProcAddr,
        want: &[vkcuda_result],
    ) {
        let mut s = Poison::<vkcuda_physical_device_support>::new();
        let r = unsafe { vkcuda_physical_device_query(instance, physical, gipa, s.ptr()) };
        c.refused(r, want);
        s.untouched();
    }
    m.ran(QUERY, "fake-gipa:get_instance_proc_addr", |c| {
        // An entry point that knows nothing: the instance is not usable through it.
        unsafe extern "system" fn nothing(
            _: vk::Instance,
            _: *const std::ffi::c_char,
        ) -> vk::PFN_vkVoidFunction {
            None
        }
        let e = &c.env.engine;
        query(c, e.instance.handle(), e.physical, Some(nothing), &[I]);
    });

    // -- vkcuda_physical_devices_enumerate
    m.ran(ENUM, "null-ok:supports", |c| {
        let mut n = 0;
        c.succeeded(unsafe { vkcuda_physical_devices_enumerate(&mut n, ptr::null_mut()) });
        assert!(n >= 1);
    });
    m.ran(ENUM, "zero:count", |c| {
        let mut s = Poison::<[vkcuda_physical_device_support; 1]>::new();
        let mut n = 0;
        c.succeeded(unsafe { vkcuda_physical_devices_enumerate(&mut n, s.ptr().cast()) });
        assert_eq!(n, 0);
        s.untouched();
    });

    // -- vkcuda_context_create and vkcuda_context_create_with_device_info, on the
    // engine-style device of the environment
    for (f, create) in CREATES {
        create_cases(m, f, create);
    }
    device_info_cases(m);

    // -- vkcuda_context_create_standalone
    m.ran(STANDALONE, "null-ok:info", |c| {
        let mut ctx = poisoned();
        let r = unsafe { vkcuda_context_create_standalone(ptr::null(), &mut ctx) };
        paired_or_refused(c, r, ctx);
    });
    for (label, flags, index) in [
        ("unknown-bits:info->flags", 0x4, 0),
        ("all-bits:info->flags", u32::MAX, 0),
        ("absurd:info->physical_device_index", 0x3, u32::MAX),
        ("past-last:info->physical_device_index", 0x3, 64),
    ] {
        m.ran(STANDALONE, label, move |c| {
            let info = vkcuda_standalone_create_info {
                flags,
                physical_device_index: index,
            };
            let mut ctx = poisoned();
            let r = unsafe { vkcuda_context_create_standalone(&info, &mut ctx) };
            c.refused_made(r, &[I], ctx, vkcuda_context_destroy);
        });
    }

    // -- getters and the rest
    m.vulkan_only(CUDA_INFO, "vulkan-only", |c| c.refused_untouched(&[U], |h| unsafe { vkcuda_context_get_cuda_info(c.env.ctx, h) }));
    m.case(DRIVER, "no-driver", |c| {
        if c.env.driver != Driver::None {
            return Skipped("a CUDA driver is loaded");
        }
        let mut v = Poison::<i32>::new();
        c.refused(unsafe { vkcuda_cuda_driver_get_version(v.ptr()) }, &[U]);
        v.untouched();
        Ran
    });
    m.ran("vkcuda_context_destroy", "null-ok:context", |_| {
        unsafe { vkcuda_context_destroy(ptr::null_mut()) };
    });
}
