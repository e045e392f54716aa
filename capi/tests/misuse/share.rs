//! The share group: descriptions (describe, serialize, parse, import), sockets
//! (send and receive of a description and an fd, of buffers, images and semaphores).

use std::ffi::{c_int, c_void};
use std::ptr;
use std::rc::Rc;

use ash::vk;

use crate::support::*;
use crate::env::{no_timeline, Env, Kind};
use crate::image::{image_info_mutations, Zeros};
use crate::matrix::*;

const SER: &str = "vkcuda_share_description_serialize";
const PARSE: &str = "vkcuda_share_description_parse";
const SEND: &str = "vkcuda_share_send";
const RECV: &str = "vkcuda_share_receive";
const SIZE: usize = VKCUDA_SHARE_DESCRIPTION_SIZE as usize;

unsafe extern "C" fn refuse_peer(_pid: i32, _uid: u32, _gid: u32, user: *mut c_void) -> c_int {
    if !user.is_null() {
        *user.cast::<u32>() += 1;
    }
    0
}

pub fn options() -> vkcuda_share_options {
    vkcuda_share_options {
        flags: 0,
        timeout_ns: 1_000_000,
        peer_check: None,
        peer_check_user: ptr::null_mut(),
        buffer_usage: 0,
    }
}

/// Mutations of a share description that every function taking one refuses with
/// INVALID_ARGUMENT.
fn description_mutations() -> Vec<(Kind, Mutation<vkcuda_share_description>)> {
    type D = vkcuda_share_description;
    let of = |kind: Kind, muts: Vec<Mutation<D>>| muts.into_iter().map(move |mu| (kind, mu));
    let buffer = muts![D;
        "unknown-bits:description->flags" [I] => |_, d| d.flags = 1;
        "enum-0:description->kind" [I] => |_, d| d.kind = vkcuda_share_kind_raw(0);
        "enum-4:description->kind" [I] => |_, d| d.kind = vkcuda_share_kind_raw(4);
        "enum-negative:description->kind" [I] => |_, d| d.kind = vkcuda_share_kind_raw(-1);
        "enum-2:description->buffer.allocator" [I] => |_, d| d.buffer.allocator = vkcuda_allocator_raw(2);
        "bool-2:description->buffer.dedicated" [I] => |_, d| d.buffer.dedicated = 2;
        "absurd:description->buffer.allocation_size" [I] => |_, d| d.buffer.allocation_size = u64::MAX;
        "zero:description->buffer.allocation_size" [I] => |_, d| d.buffer.allocation_size = 0;
        "past-end:description->buffer.offset" [I] => |_, d| d.buffer.offset = d.buffer.allocation_size;
        "overflow:description->buffer.offset" [I] => |_, d| d.buffer.offset = u64::MAX;
        "zero:description->buffer.size" [I] => |_, d| d.buffer.size = 0;
        "absurd:description->buffer.size" [I] => |_, d| d.buffer.size = u64::MAX;
    ];
    let semaphore = muts![D;
        "enum-2:description->semaphore.semaphore_type" [I] => |_, d| {
            d.semaphore.semaphore_type = vkcuda_semaphore_type_raw(2)
        };
        "binary-nonzero:description->semaphore.value" [I] => |_, d| {
            d.semaphore.semaphore_type = vkcuda_semaphore_type_raw(1);
            d.semaphore.value = 1;
        };
    ];
    let image = muts![D;
        "zero:description->image.allocation_size" [I] => |_, d| d.image.allocation_size = 0;
        "absurd:description->image.allocation_size" [I] => |_, d| d.image.allocation_size = u64::MAX;
        // Multi-planar images (capi/tests/misuse/planar.rs has the rest).
        "not-allocation-size:description->image.plane_allocation_sizes" [I] => |_, d| {
            d.image.plane_allocation_sizes[0] = d.image.allocation_size + 4096
        };
        "extra-plane:description->image.plane_allocation_sizes" [I] => |_, d| {
            d.image.plane_allocation_sizes[1] = 65536
        };
    ];
    let mut v: Vec<_> = of(Kind::Buffer, buffer)
        .chain(of(Kind::Semaphore, semaphore))
        .chain(of(Kind::Image, image))
        .collect();
    for mu in image_info_mutations::<D>(
        "description->image.description.",
        |d| &mut d.image.description,
        Zeros::All,
    ) {
        // A description holds resolved values: cube images are 6 layers and so on;
        // the depth-attachment usage is outside what a shared image can have.
        // A format outside the table is a malformed record there (the library never
        // describes one): INVALID_ARGUMENT, not UNSUPPORTED as for a create.
        let mut mu = mu;
        if mu.label.contains(".format") {
            mu.want = vec![I];
        }
        v.push((Kind::Image, mu));
    }
    v
}

/// Mutations of `vkcuda_share_options` for the functions that take them; the call
/// runs on a connected socket pair.
fn options_mutations(receive: bool) -> Vec<Mutation<vkcuda_share_options>> {
    type O = vkcuda_share_options;
    let mut v = muts![O;
        "unknown-bits:options->flags" [I] => |_, o| o.flags = 1;
        "all-bits:options->flags" [I] => |_, o| o.flags = u32::MAX;
        "refuses:options->peer_check" [DENIED] => |_, o| o.peer_check = Some(refuse_peer);
    ];
    if receive {
        // Nothing is sent: the receive times out (send: the socket buffer takes it).
        v.push(mutation(
            "1ns:options->timeout_ns",
            &[VKCUDA_ERROR_TIMEOUT],
            |_, o: &mut O| o.timeout_ns = 1,
        ));
    }
    v
}

/// Cases for a function that sends on a socket: bad sockets, NULL options, and
/// options mutations. `send` makes the call with (socket, options).
pub fn socket_cases(
    m: &mut Matrix,
    f: &'static str,
    receive: bool,
    ready: impl Fn(&Env) -> Option<&'static str> + 'static,
    send: impl Fn(&Call, i32, *const vkcuda_share_options, &[vkcuda_result]) + 'static,
) {
    let send = Rc::new(send);
    let ready = Rc::new(ready);
    // Each makes (the socket_fd to pass, the fds to close afterwards).
    type Make = fn() -> (i32, Vec<i32>);
    let bad: Vec<(&str, Make)> = vec![
        ("negative:socket_fd", || (-1, vec![])),
        ("closed:socket_fd", || (closed_fd(), vec![])),
        ("absurd:socket_fd", || (i32::MAX, vec![])),
        ("pipe:socket_fd", || {
            let (r, w) = pipe();
            (r, vec![r, w])
        }),
        ("memory-fd:socket_fd", || {
            let fd = unsafe { libc::memfd_create(c"vkcuda-misuse".as_ptr(), libc::MFD_CLOEXEC) };
            (fd, vec![fd])
        }),
        ("udp:socket_fd", || {
            let fd =
                unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
            (fd, vec![fd])
        }),
        ("unconnected:socket_fd", || {
            let fd =
                unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
            (fd, vec![fd])
        }),
        ("datagram:socket_fd", || {
            let mut p = [0; 2];
            unsafe {
                libc::socketpair(
                    libc::AF_UNIX,
                    libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                    0,
                    p.as_mut_ptr(),
                )
            };
            (p[0], p.to_vec())
        }),
    ];
    for (label, make) in bad {
        let (send, ready) = (send.clone(), ready.clone());
        m.case(f, label, move |c| {
            if let Some(why) = ready(c.env) {
                return Skipped(why);
            }
            let (fd, close_after) = make();
            let o = options();
            send(c, fd, &o, &[I]);
            close_after.into_iter().for_each(close);
            Ran
        });
    }
    {
        let (send, ready) = (send.clone(), ready.clone());
        m.case(f, "null-ok:options", move |c| {
            if let Some(why) = ready(c.env) {
                return Skipped(why);
            }
            // NULL options: same user (accepted), a 10 s timeout. The peer end is
            // closed first, so the call fails without waiting: the defaults were taken.
            let (a, b) = socketpair();
            close(b);
            send(
                c,
                a,
                ptr::null(),
                &[VKCUDA_ERROR_INVALID_STATE, VKCUDA_ERROR_INVALID_ARGUMENT],
            );
            close(a);
            Ran
        });
    }
    for mu in options_mutations(receive) {
        let (send, ready) = (send.clone(), ready.clone());
        m.case(f, &mu.label, move |c| {
            if let Some(why) = ready(c.env) {
                return Skipped(why);
            }
            let (a, b) = socketpair();
            let mut o = options();
            (mu.apply)(c.env, &mut o);
            send(c, a, &o, &mu.want);
            close(a);
            close(b);
            Ran
        });
    }
    {
        let (send, ready) = (send.clone(), ready.clone());
        m.case(f, "null-ok:options->peer_check", move |c| {
            if let Some(why) = ready(c.env) {
                return Skipped(why);
            }
            // No check: the same user is accepted; the closed peer ends the call.
            let (a, b) = socketpair();
            close(b);
            send(
                c,
                a,
                &options(),
                &[VKCUDA_ERROR_INVALID_STATE, VKCUDA_ERROR_INVALID_ARGUMENT],
            );
            close(a);
            Ran
        });
    }
    {
        let (send, ready) = (send.clone(), ready.clone());
        m.case(f, "null-ok:options->peer_check_user", move |c| {
            if let Some(why) = ready(c.env) {
                return Skipped(why);
            }
            let (a, b) = socketpair();
            let mut o = options();
            o.peer_check = Some(refuse_peer);
            send(c, a, &o, &[DENIED]);
            close(a);
            close(b);
            Ran
        });
    }
    if !receive {
        m.any(
            f,
            "options->timeout_ns",
            "every timeout is valid; a send only waits while the socket buffer is full",
        );
    }
    {
        let (send, ready) = (send.clone(), ready.clone());
        m.case(f, "passed-through:options->peer_check_user", move |c| {
            if let Some(why) = ready(c.env) {
                return Skipped(why);
            }
            let (a, b) = socketpair();
            let mut calls = 0u32;
            let mut o = options();
            o.peer_check = Some(refuse_peer);
            o.peer_check_user = (&mut calls as *mut u32).cast();
            send(c, a, &o, &[DENIED]);
            assert!(calls >= 1, "peer_check was called with peer_check_user");
            close(a);
            close(b);
            Ran
        });
    }
    m.any(
        f,
        "options->buffer_usage",
        "read by vkcuda_buffer_receive only (its own cases check it)",
    );
}

/// vkcuda_share_receive on `socket` is refused with one of `want`; its outputs
/// stay untouched.
pub fn receive_refused(
    c: &Call,
    socket: i32,
    o: *const vkcuda_share_options,
    want: &[vkcuda_result],
) {
    let mut d = Poison::<vkcuda_share_description>::new();
    let mut fd = Poison::<i32>::new();
    c.refused(unsafe { vkcuda_share_receive(socket, o, d.ptr(), fd.ptr()) }, want);
    d.untouched();
    fd.untouched();
}

/// The send function `f`'s cases, `send` calling it with one fd: any device's
/// description may be sent; every description mutation; every bad socket and option.
pub fn send_cases(
    m: &mut Matrix,
    f: &'static str,
    send: fn(i32, *const vkcuda_share_description, i32, *const vkcuda_share_options) -> vkcuda_result,
) {
    m.any(f, "description->device_uuid", "any device's description may be sent");
    description_cases(m, f, move |c, d, want| {
        let (a, b) = socketpair();
        let fd = c.env.buffer_fd();
        let r = send(a, d, fd, &options());
        [a, b, fd].into_iter().for_each(close);
        if want.is_empty() {
            c.succeeded(r);
        } else {
            c.refused(r, want);
        }
    });
    socket_cases(m, f, false, |_| None, move |c, socket, o, want| {
        let d = c.env.describe(Kind::Buffer);
        let fd = c.env.buffer_fd();
        c.refused(send(socket, &d, fd, o), want);
        close(fd);
    });
}

/// The description mutations of every kind, for a function taking a description:
/// `call` makes the call and checks it is refused with the given codes.
/// `want` is empty for a change that leaves a possible record (see `RECORD_OK`),
/// which serialize and send take and imports refuse.
pub fn description_cases(
    m: &mut Matrix,
    f: &'static str,
    call: impl Fn(&Call, &vkcuda_share_description, &[vkcuda_result]) + 'static,
) {
    let call = Rc::new(call);
    for (kind, mu) in description_mutations() {
        let call = call.clone();
        m.ran(f, &mu.label, move |c| {
            let mut d = c.env.describe(kind);
            (mu.apply)(c.env, &mut d);
            let want = if mu.record_ok { &[][..] } else { &mu.want[..] };
            call(c, &d, want);
        });
    }
}

/// A serialized description of the environment's buffer.
fn buffer_record(e: &Env) -> [u8; SIZE] {
    record(&e.describe(Kind::Buffer))
}

pub fn cases(m: &mut Matrix) {
    m.nulls(nulls![
        SER, "description" => |_, o| unsafe {
            vkcuda_share_description_serialize(ptr::null(), o.plain::<[u8; SIZE]>().cast(), SIZE)
        };
        SER, "bytes" => |e, _| unsafe {
            let d = e.describe(Kind::Buffer);
            vkcuda_share_description_serialize(&d, ptr::null_mut(), SIZE)
        };
        PARSE, "bytes" => |_, o| unsafe { vkcuda_share_description_parse(ptr::null(), SIZE, o.plain()) };
        PARSE, "description" => |e, _| unsafe {
            let b = buffer_record(e);
            vkcuda_share_description_parse(b.as_ptr(), SIZE, ptr::null_mut())
        };
        SEND, "description" => |e, _| {
            e.with_fd(Kind::Buffer, |fd| {
                with_socket(|s| unsafe { vkcuda_share_send(s, ptr::null(), fd, &options()) })
            })
        };
        RECV, "description" => |_, o| {
            with_socket(|s| unsafe {
                vkcuda_share_receive(s, &options(), ptr::null_mut(), o.plain())
            })
        };
        RECV, "fd" => |_, o| {
            with_socket(|s| unsafe {
                vkcuda_share_receive(s, &options(), o.plain(), ptr::null_mut())
            })
        };
        "vkcuda_buffer_send", "buffer" => |_, _| {
            with_socket(|s| unsafe { vkcuda_buffer_send(ptr::null(), s, &options()) })
        };
        "vkcuda_image_send", "image" => |_, _| {
            with_socket(|s| unsafe { vkcuda_image_send(ptr::null(), s, &options()) })
        };
        "vkcuda_semaphore_send", "semaphore" => |_, _| {
            with_socket(|s| unsafe { vkcuda_semaphore_send(ptr::null(), s, &options()) })
        };
    ]);
    m.getter(
        "vkcuda_buffer_describe",
        ["buffer", "description"],
        |e| e.buffer,
        vkcuda_buffer_describe,
    );
    m.getter("vkcuda_image_describe", ["image", "description"], |e| e.image, vkcuda_image_describe);
    m.timeline_getter(
        "vkcuda_semaphore_describe",
        ["semaphore", "description"],
        vkcuda_semaphore_describe,
    );

    // -- serialize / parse
    for (label, size) in [("zero:size", 0), ("one-short:size", SIZE - 1)] {
        m.case(SER, label, move |c| {
            let d = c.env.describe(Kind::Buffer);
            c.refused_untouched(&[I], |b: *mut [u8; SIZE]| unsafe {
                vkcuda_share_description_serialize(&d, b.cast(), size)
            })
        });
    }
    m.ran(SER, "larger:size", |c| {
        // Room for more: exactly one record is written, the rest is left alone.
        let d = c.env.describe(Kind::Buffer);
        let mut b = [0xA5u8; 2 * SIZE];
        c.succeeded(unsafe { vkcuda_share_description_serialize(&d, b.as_mut_ptr(), b.len()) });
        assert_eq!(&b[..8], b"VKCUDASH");
        assert!(b[SIZE..].iter().all(|&x| x == 0xA5));
    });
    m.any(
        SER,
        "description->device_uuid",
        "any 16 bytes serialize; importers compare them",
    );
    description_cases(m, SER, |c, d, want| {
        let mut b = Poison::<[u8; SIZE]>::new();
        let r = unsafe { vkcuda_share_description_serialize(d, b.ptr().cast(), SIZE) };
        if want.is_empty() {
            c.succeeded(r);
            return;
        }
        c.refused(r, want);
        b.untouched();
    });

    for (label, size) in [
        ("zero:size", 0),
        ("one-short:size", SIZE - 1),
        ("one-long:size", SIZE + 1),
        ("absurd:size", usize::MAX),
        ("isize-max:size", isize::MAX as usize),
    ] {
        m.case(PARSE, label, move |c| {
            // The buffer is twice a record: a size past it would be the caller lying,
            // but the library must not read past SIZE + 1 bytes to find that out.
            let mut b = [0u8; 2 * SIZE];
            b[..SIZE].copy_from_slice(&buffer_record(c.env));
            c.refused_untouched(&[I], |d| unsafe {
                vkcuda_share_description_parse(b.as_ptr(), size, d)
            })
        });
    }
    m.case(PARSE, "corrupt-magic", |c| {
        let mut b = buffer_record(c.env);
        b[0] ^= 1;
        c.refused_untouched(&[I], |d| unsafe {
            vkcuda_share_description_parse(b.as_ptr(), SIZE, d)
        })
    });

    // -- import from a description
    type ImportFn<T> = fn(
        *const vkcuda_context,
        *const vkcuda_share_description,
        i32,
        *mut *mut T,
    ) -> vkcuda_result;
    fn import_cases<T: 'static>(
        m: &mut Matrix,
        f: &'static str,
        kind: Kind,
        import: ImportFn<T>,
        destroy: unsafe extern "C" fn(*mut T),
    ) {
        let fails =
            move |c: &Call, d: *const vkcuda_share_description, fd: i32, want: &[vkcuda_result]| {
                let mut out = poisoned();
                let r = import(c.env.ctx, d, fd, &mut out);
                c.refused_made(r, want, out, destroy);
            };
        let out_name = match kind {
            Kind::Buffer => "buffer",
            Kind::Semaphore => "semaphore",
            Kind::Image => "image",
        };
        m.nulls(nulls![
            f, "context" => |e, o| {
                let d = e.describe(kind);
                e.with_fd(kind, |fd| import(ptr::null(), &d, fd, o.handle(destroy)))
            };
            f, "description" => |e, o| e.with_fd(kind, |fd| import(e.ctx, ptr::null(), fd, o.handle(destroy)));
            f, out_name => |e, _| {
                let d = e.describe(kind);
                e.with_fd(kind, |fd| import(e.ctx, &d, fd, ptr::null_mut()))
            };
        ]);
        for (label, bad) in [
            ("negative:fd", -1),
            ("absurd:fd", i32::MAX),
            ("closed:fd", -2),
        ] {
            m.ran(f, label, move |c| {
                let d = c.env.describe(kind);
                let fd = if bad == -2 { closed_fd() } else { bad };
                let want: &[vkcuda_result] = if kind == Kind::Semaphore && c.env.timeline.is_none()
                {
                    &[I, EXT]
                } else {
                    &[I]
                };
                fails(c, &d, fd, want);
            });
        }
        m.ran(f, "pipe:fd", move |c| {
            let d = c.env.describe(kind);
            let (r, w) = pipe();
            let want: &[vkcuda_result] = if kind == Kind::Semaphore && c.env.timeline.is_none() {
                &[I, EXT, VKCUDA_ERROR_VULKAN]
            } else {
                &[I, VKCUDA_ERROR_VULKAN]
            };
            fails(c, &d, r, want);
            assert!(fd_is_open(r));
            close(r);
            close(w);
        });
        m.ran(f, "other-device:description->device_uuid", move |c| {
            let mut d = c.env.describe(kind);
            d.device_uuid[0] ^= 0xFF;
            let fd = c.env.memory_fd(kind);
            fails(c, &d, fd, &[MISMATCH]);
            assert!(fd_is_open(fd));
            close(fd);
        });
        for other in [Kind::Buffer, Kind::Semaphore, Kind::Image] {
            if other == kind {
                continue;
            }
            m.case(
                f,
                &format!("wrong-kind-{other:?}:description->kind"),
                move |c| {
                    let d = c.env.describe(other);
                    let fd = c.env.memory_fd(kind);
                    fails(c, &d, fd, &[I]);
                    assert!(fd_is_open(fd));
                    close(fd);
                    Ran
                },
            );
        }
        description_cases(m, f, move |c, d, want| {
            let fd = c.env.memory_fd(kind);
            // A possible record of an impossible image: the device refuses it.
            let device: &[vkcuda_result] = &[I, UNSUP, VKCUDA_ERROR_VULKAN, EXT];
            fails(c, d, fd, if want.is_empty() { device } else { want });
            assert!(fd_is_open(fd));
            close(fd);
        });
    }
    import_cases::<vkcuda_buffer>(
        m,
        "vkcuda_buffer_import_description",
        Kind::Buffer,
        |ctx, d, fd, out| unsafe { vkcuda_buffer_import_description(ctx, d, fd, 0, out) },
        vkcuda_buffer_destroy,
    );
    for (label, usage, want) in [
        ("unknown-bits:usage", 0x4000_0000u32, I),
        (
            "device-address:usage",
            vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS.as_raw(),
            UNSUP,
        ),
    ] {
        m.ran("vkcuda_buffer_import_description", label, move |c| {
            let d = c.env.describe(Kind::Buffer);
            let fd = c.env.buffer_fd();
            let mut b = poisoned();
            let r = unsafe { vkcuda_buffer_import_description(c.env.ctx, &d, fd, usage, &mut b) };
            c.refused_made(r, &[want], b, vkcuda_buffer_destroy);
            assert!(fd_is_open(fd));
            close(fd);
        });
    }
    import_cases::<vkcuda_semaphore>(
        m,
        "vkcuda_semaphore_import_description",
        Kind::Semaphore,
        |ctx, d, fd, out| unsafe { vkcuda_semaphore_import_description(ctx, d, fd, out) },
        vkcuda_semaphore_destroy,
    );
    import_cases::<vkcuda_image>(
        m,
        "vkcuda_image_import_description",
        Kind::Image,
        |ctx, d, fd, out| unsafe { vkcuda_image_import_description(ctx, d, fd, out) },
        vkcuda_image_destroy,
    );

    // -- send / receive
    for (label, bad) in [
        ("negative:fd", -1),
        ("closed:fd", -2),
        ("absurd:fd", i32::MAX),
    ] {
        m.ran(SEND, label, move |c| {
            let (a, b) = socketpair();
            let d = c.env.describe(Kind::Buffer);
            let fd = if bad == -2 { closed_fd() } else { bad };
            c.refused(unsafe { vkcuda_share_send(a, &d, fd, &options()) }, &[I]);
            [a, b].into_iter().for_each(close);
        });
    }
    send_cases(m, SEND, |s, d, fd, o| unsafe { vkcuda_share_send(s, d, fd, o) });

    m.ran(RECV, "garbage-record", |c| {
        // The peer sends 128 bytes that are not a record, with an fd: refused, fd closed.
        let (a, b) = socketpair();
        let junk = [0x5Au8; SIZE];
        assert_eq!(
            unsafe { libc::write(b, junk.as_ptr().cast(), SIZE) },
            SIZE as isize
        );
        receive_refused(c, a, &options(), &[I]);
        [a, b].into_iter().for_each(close);
    });
    socket_cases(m, RECV, true, |_| None, receive_refused);

    // -- object sends
    socket_cases(
        m,
        "vkcuda_buffer_send",
        false,
        |_| None,
        |c, s, o, want| {
            c.refused(unsafe { vkcuda_buffer_send(c.env.buffer, s, o) }, want);
        },
    );
    socket_cases(
        m,
        "vkcuda_image_send",
        false,
        |_| None,
        |c, s, o, want| {
            c.refused(unsafe { vkcuda_image_send(c.env.image, s, o) }, want);
        },
    );
    socket_cases(
        m,
        "vkcuda_semaphore_send",
        false,
        no_timeline,
        |c, s, o, want| {
            let sem = c.env.timeline.unwrap();
            c.refused(unsafe { vkcuda_semaphore_send(sem, s, o) }, want);
        },
    );

    // -- object receives
    type Receive<T> = unsafe extern "C" fn(
        *const vkcuda_context,
        i32,
        *const vkcuda_share_options,
        *mut *mut T,
    ) -> vkcuda_result;
    fn receive_cases<T: 'static>(
        m: &mut Matrix,
        f: &'static str,
        out_name: &'static str,
        receive: Receive<T>,
        destroy: unsafe extern "C" fn(*mut T),
    ) {
        m.nulls(nulls![
            f, "context" => |_, o| {
                with_socket(|s| unsafe { receive(ptr::null(), s, &options(), o.handle(destroy)) })
            };
            f, out_name => |e, _| with_socket(|s| unsafe { receive(e.ctx, s, &options(), ptr::null_mut()) });
        ]);
        m.ran(f, "peer-closed", move |c| {
            let (a, b) = socketpair();
            close(b);
            let mut out = poisoned();
            let r = unsafe { receive(c.env.ctx, a, &options(), &mut out) };
            c.refused_made(r, &[VKCUDA_ERROR_INVALID_STATE], out, destroy);
            close(a);
        });
        socket_cases(
            m,
            f,
            true,
            |_| None,
            move |c, s, o, want| {
                let mut out = poisoned();
                let r = unsafe { receive(c.env.ctx, s, o, &mut out) };
                c.refused_made(r, want, out, destroy);
            },
        );
    }
    receive_cases(
        m,
        "vkcuda_buffer_receive",
        "buffer",
        vkcuda_buffer_receive,
        vkcuda_buffer_destroy,
    );
    receive_cases(
        m,
        "vkcuda_image_receive",
        "image",
        vkcuda_image_receive,
        vkcuda_image_destroy,
    );
    receive_cases(
        m,
        "vkcuda_semaphore_receive",
        "semaphore",
        vkcuda_semaphore_receive,
        vkcuda_semaphore_destroy,
    );
    // vkcuda_buffer_receive reads buffer_usage: checked before anything is received.
    let e = m.entries.get_mut("vkcuda_buffer_receive").unwrap();
    e.any.remove("options->buffer_usage");
    for (label, usage, want) in [
        ("unknown-bits:options->buffer_usage", 0x4000_0000u32, I),
        (
            "device-address:options->buffer_usage",
            vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS.as_raw(),
            UNSUP,
        ),
    ] {
        m.ran("vkcuda_buffer_receive", label, move |c| {
            let (a, b) = socketpair();
            let mut o = options();
            o.buffer_usage = usage;
            let mut out = poisoned();
            let r = unsafe { vkcuda_buffer_receive(c.env.ctx, a, &o, &mut out) };
            c.refused_made(r, &[want], out, vkcuda_buffer_destroy);
            [a, b].into_iter().for_each(close);
        });
    }
}
