//! Exportable and imported `VkDeviceMemory` for buffers, and fd export.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

use ash::vk;

use super::support::find_memory_type;
use super::VulkanDevice;
use crate::error::{Error, ErrorKind, Result};
use crate::fd;
use crate::stats;

pub const HANDLE_TYPE: vk::ExternalMemoryHandleTypeFlags =
    vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD;

/// A `VkBuffer` bound at offset 0 of its own `VkDeviceMemory`.
#[derive(Clone, Copy, Debug)]
pub struct BufferMemory {
    pub buffer: vk::Buffer,
    pub memory: vk::DeviceMemory,
    pub allocation_size: u64,
    pub dedicated: bool,
}

impl BufferMemory {
    /// Destroys the buffer, then frees the memory.
    pub fn destroy(&self, dev: &VulkanDevice) {
        // SAFETY: both were created on this device and the caller no longer uses them.
        unsafe {
            dev.device.destroy_buffer(self.buffer, None);
            dev.device.free_memory(self.memory, None);
        }
        stats::VK_BUFFERS.sub();
        stats::VK_MEMORIES.sub();
    }
}

/// Destroys what an unfinished creation made when it returns early.
struct Partial<'a> {
    dev: &'a VulkanDevice,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
}

impl Partial<'_> {
    fn finish(mut self, allocation_size: u64, dedicated: bool) -> BufferMemory {
        stats::VK_BUFFERS.add();
        stats::VK_MEMORIES.add();
        let out = BufferMemory {
            buffer: self.buffer,
            memory: self.memory,
            allocation_size,
            dedicated,
        };
        self.buffer = vk::Buffer::null();
        self.memory = vk::DeviceMemory::null();
        out
    }
}

impl Drop for Partial<'_> {
    fn drop(&mut self) {
        unsafe {
            if self.buffer != vk::Buffer::null() {
                self.dev.device.destroy_buffer(self.buffer, None);
            }
            if self.memory != vk::DeviceMemory::null() {
                self.dev.device.free_memory(self.memory, None);
            }
        }
    }
}

/// What the driver says about sharing buffers of `usage` as `OPAQUE_FD`.
pub fn external_buffer_properties(
    dev: &VulkanDevice,
    usage: vk::BufferUsageFlags,
) -> vk::ExternalMemoryProperties {
    external_buffer_properties_of(&dev.instance, dev.physical, usage)
}

/// The same for a physical device before any `VkDevice` exists.
pub fn external_buffer_properties_of(
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
    usage: vk::BufferUsageFlags,
) -> vk::ExternalMemoryProperties {
    let info = vk::PhysicalDeviceExternalBufferInfo::default()
        .usage(usage)
        .handle_type(HANDLE_TYPE);
    let mut out = vk::ExternalBufferProperties::default();
    // SAFETY: valid physical device; structs owned here.
    unsafe { instance.get_physical_device_external_buffer_properties(physical, &info, &mut out) };
    out.external_memory_properties
}

/// Checks a buffer's size and its memory's size before any driver call.
///
/// `maxMemoryAllocationSize` is not checked: the Vulkan spec makes it advice (for
/// a larger `allocationSize` "the error VK_ERROR_OUT_OF_DEVICE_MEMORY may be
/// returned"; no valid-usage rule forbids it, and the validation layer's `UNASSIGNED-vkAllocateMemory-maxMemoryAllocationSize`
/// message has no VUID for that reason), and NVIDIA's driver, which advertises
/// 4,292,870,144 bytes on the H200, shares 4.5 to 48 GiB buffers both ways
/// (docs/GUIDE.md, "Large buffers"). What the spec does bound is checked:
/// `maxBufferSize` (`VUID-VkBufferCreateInfo-size-06409`) and the heap
/// (`VUID-vkAllocateMemory-pAllocateInfo-01713`). When the driver then refuses
/// an allocation past the advice, [`over_advice`] says so.
fn check_size(dev: &VulkanDevice, buffer_size: u64, allocation_size: u64) -> Result<()> {
    let heaps = &dev.props.memory.memory_heaps[..dev.props.memory.memory_heap_count as usize];
    let largest_heap = heaps.iter().map(|h| h.size).max().unwrap_or(0);
    match size_problem(
        buffer_size,
        allocation_size,
        dev.props.max_buffer_size,
        largest_heap,
    ) {
        Some(problem) => Err(Error::invalid(problem)),
        None => Ok(()),
    }
}

/// What is wrong with a buffer of `buffer_size` bytes in memory of
/// `allocation_size` bytes on a device of `max_buffer_size` (0: unknown) and a
/// largest heap of `largest_heap` bytes, if anything.
fn size_problem(
    buffer_size: u64,
    allocation_size: u64,
    max_buffer_size: u64,
    largest_heap: u64,
) -> Option<String> {
    if max_buffer_size != 0 && buffer_size > max_buffer_size {
        return Some(format!(
            "size {buffer_size} is larger than the device's maxBufferSize {max_buffer_size}"
        ));
    }
    if allocation_size > largest_heap {
        return Some(format!(
            "size {allocation_size} is larger than the device's largest memory heap ({largest_heap} bytes)"
        ));
    }
    None
}

/// A failed `vkAllocateMemory` of `allocation_size` bytes: past the device's
/// advertised `maxMemoryAllocationSize`, the message says that this is the likely
/// cause (see [`check_size`]).
fn over_advice(dev: &VulkanDevice, allocation_size: u64, e: Error) -> Error {
    let max = dev.props.max_allocation_size;
    if max == 0 || allocation_size <= max {
        return e;
    }
    Error::new(
        e.kind,
        format!(
            "{}: the size {allocation_size} exceeds the device's advertised \
             maxMemoryAllocationSize {max}, which the library does not enforce (the Vulkan spec \
             makes it advice, and NVIDIA's driver takes larger sizes), and this driver refused \
             it: on this device use buffers of at most {max} bytes",
            e.message
        ),
    )
}

fn create_external_buffer<'a>(
    dev: &'a VulkanDevice,
    size: u64,
    usage: vk::BufferUsageFlags,
) -> Result<Partial<'a>> {
    let mut ext = vk::ExternalMemoryBufferCreateInfo::default().handle_types(HANDLE_TYPE);
    let info = vk::BufferCreateInfo::default()
        .size(size)
        .usage(usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .push_next(&mut ext);
    let buffer = unsafe { dev.device.create_buffer(&info, None) }
        .map_err(|r| dev.error("vkCreateBuffer", r))?;
    Ok(Partial {
        dev,
        buffer,
        memory: vk::DeviceMemory::null(),
    })
}

fn requirements(dev: &VulkanDevice, buffer: vk::Buffer) -> (vk::MemoryRequirements, bool) {
    let info = vk::BufferMemoryRequirementsInfo2::default().buffer(buffer);
    let mut ded = vk::MemoryDedicatedRequirements::default();
    let mut req = vk::MemoryRequirements2::default().push_next(&mut ded);
    unsafe { dev.device.get_buffer_memory_requirements2(&info, &mut req) };
    let reqs = req.memory_requirements;
    let dedicated = ded.requires_dedicated_allocation == vk::TRUE
        || ded.prefers_dedicated_allocation == vk::TRUE;
    (reqs, dedicated)
}

fn device_local_type(dev: &VulkanDevice, bits: u32) -> Result<u32> {
    find_memory_type(
        &dev.props.memory,
        bits,
        vk::MemoryPropertyFlags::DEVICE_LOCAL,
        vk::MemoryPropertyFlags::empty(),
    )
    .ok_or_else(|| {
        Error::unsupported(format!(
            "no DEVICE_LOCAL memory type is allowed for an exportable buffer (memoryTypeBits {bits:#x})"
        ))
    })
}

/// A `VkBuffer` with exportable memory of its own (dedicated when the driver
/// requires or prefers it).
pub fn create_exportable_buffer(
    dev: &VulkanDevice,
    size: u64,
    usage: vk::BufferUsageFlags,
) -> Result<BufferMemory> {
    dev.memory_fd()?;
    check_size(dev, size, size)?;
    let props = external_buffer_properties(dev, usage);
    if !props
        .external_memory_features
        .contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE)
    {
        return Err(Error::unsupported(format!(
            "the device cannot export OPAQUE_FD memory for buffers with usage {usage:?}"
        )));
    }
    let dedicated_only = props
        .external_memory_features
        .contains(vk::ExternalMemoryFeatureFlags::DEDICATED_ONLY);
    let mut partial = create_external_buffer(dev, size, usage)?;
    let (req, prefers_dedicated) = requirements(dev, partial.buffer);
    let dedicated = dedicated_only || prefers_dedicated;
    let type_index = device_local_type(dev, req.memory_type_bits)?;
    let mut export = vk::ExportMemoryAllocateInfo::default().handle_types(HANDLE_TYPE);
    let mut ded = vk::MemoryDedicatedAllocateInfo::default().buffer(partial.buffer);
    let mut alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(req.size)
        .memory_type_index(type_index)
        .push_next(&mut export);
    if dedicated {
        alloc = alloc.push_next(&mut ded);
    }
    partial.memory = unsafe { dev.device.allocate_memory(&alloc, None) }
        .map_err(|r| over_advice(dev, req.size, dev.error("vkAllocateMemory", r)))?;
    unsafe {
        dev.device
            .bind_buffer_memory(partial.buffer, partial.memory, 0)
    }
    .map_err(|r| dev.error("vkBindBufferMemory", r))?;
    Ok(partial.finish(req.size, dedicated))
}

/// Refuses a dedicated import whose `allocation_size` is not the resource's memory
/// requirement `required` (`vkGet*MemoryRequirements2` of the new `VkBuffer` or
/// `VkImage`): Vulkan requires them equal (`vuid`), and an export of the same
/// resource always matches, so a different size is a description of something
/// else. Checked before the fd reaches the driver.
pub fn check_dedicated_size(
    allocation_size: u64,
    required: u64,
    what: &str,
    vuid: &str,
) -> Result<()> {
    if allocation_size == required {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "allocation_size {allocation_size} differs from the {required} bytes {what} needs: the \
         memory is a dedicated allocation, whose size must be exactly the resource's memory \
         requirement ({vuid}); an export of the same description always has that size"
    )))
}

/// A `VkBuffer` of `size` bytes bound at `offset` to memory imported from `handle`,
/// an `OPAQUE_FD` of `allocation_size` bytes. The fd is consumed on success and
/// closed on failure.
pub fn import_buffer(
    dev: &VulkanDevice,
    handle: OwnedFd,
    size: u64,
    offset: u64,
    allocation_size: u64,
    usage: vk::BufferUsageFlags,
    dedicated: bool,
) -> Result<BufferMemory> {
    dev.memory_fd()?;
    check_size(dev, size, allocation_size)?;
    let props = external_buffer_properties(dev, usage);
    if !props
        .external_memory_features
        .contains(vk::ExternalMemoryFeatureFlags::IMPORTABLE)
    {
        return Err(Error::unsupported(format!(
            "the device cannot import OPAQUE_FD memory for buffers with usage {usage:?}"
        )));
    }
    let dedicated = dedicated
        || props
            .external_memory_features
            .contains(vk::ExternalMemoryFeatureFlags::DEDICATED_ONLY);
    let mut partial = create_external_buffer(dev, size, usage)?;
    let (req, _) = requirements(dev, partial.buffer);
    if offset % req.alignment.max(1) != 0 {
        return Err(Error::invalid(format!(
            "offset {offset} is not a multiple of the buffer's required alignment {}",
            req.alignment
        )));
    }
    if offset
        .checked_add(req.size)
        .map_or(true, |end| end > allocation_size)
    {
        return Err(Error::invalid(format!(
            "a buffer of {size} bytes at offset {offset} needs {} bytes of memory, past the allocation size {allocation_size}",
            req.size
        )));
    }
    if dedicated {
        if offset != 0 {
            return Err(Error::invalid(format!(
                "offset is {offset} but the memory is a dedicated allocation, which the buffer is \
                 bound to at offset 0"
            )));
        }
        check_dedicated_size(
            allocation_size,
            req.size,
            &format!("a buffer of {size} bytes"),
            "VUID-VkMemoryDedicatedAllocateInfo-buffer-01435",
        )?;
    }
    let type_index = device_local_type(dev, req.memory_type_bits)?;
    let handle = fd::Handoff::new(handle);
    let mut import = vk::ImportMemoryFdInfoKHR::default()
        .handle_type(HANDLE_TYPE)
        .fd(handle.raw());
    let mut ded = vk::MemoryDedicatedAllocateInfo::default().buffer(partial.buffer);
    let mut alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(allocation_size)
        .memory_type_index(type_index)
        .push_next(&mut import);
    if dedicated {
        alloc = alloc.push_next(&mut ded);
    }
    partial.memory = unsafe { dev.device.allocate_memory(&alloc, None) }.map_err(|r| {
        over_advice(
            dev,
            allocation_size,
            dev.error("vkAllocateMemory (importing an OPAQUE_FD)", r),
        )
    })?;
    // Vulkan owns the descriptor from the successful import on.
    handle.taken();
    unsafe {
        dev.device
            .bind_buffer_memory(partial.buffer, partial.memory, offset)
    }
    .map_err(|r| dev.error("vkBindBufferMemory", r))?;
    Ok(partial.finish(allocation_size, dedicated))
}

/// The kind of file an fd refers to: its file type and, for device files, the
/// device's major number (NVIDIA's opaque fds are character devices of major 195;
/// lavapipe's are memfds, regular files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FdKind {
    file_type: u32,
    rdev_major: u32,
}

impl FdKind {
    pub fn of(fd: std::os::fd::RawFd) -> Option<FdKind> {
        // SAFETY: fstat writes into a zeroed struct we own.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return None;
        }
        let file_type = st.st_mode & libc::S_IFMT;
        let is_device = file_type == libc::S_IFCHR || file_type == libc::S_IFBLK;
        Some(FdKind {
            file_type,
            rdev_major: if is_device {
                libc::major(st.st_rdev)
            } else {
                0
            },
        })
    }

    fn describe(&self) -> String {
        match self.file_type {
            libc::S_IFCHR => format!("a character device of major {}", self.rdev_major),
            libc::S_IFBLK => format!("a block device of major {}", self.rdev_major),
            libc::S_IFREG => "a regular file (memfd)".into(),
            libc::S_IFIFO => "a pipe".into(),
            libc::S_IFSOCK => "a socket".into(),
            libc::S_IFDIR => "a directory".into(),
            t => format!("a file of type {t:#o}"),
        }
    }
}

/// What this device's exported memory fds look like, learned once from a probe
/// export (see [`check_importable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportFormat {
    kind: FdKind,
    /// The exports are memfds that start with Mesa's memory header (lavapipe):
    /// the header's mapping size equals the file size.
    memfd_header: bool,
    /// The exports are sealed against shrinking (`F_SEAL_SHRINK`).
    sealed: bool,
    /// For memfd-header exports: the bytes the header's payload (`size - offset`)
    /// has beyond the allocation, learned from the probe export (Mesa's
    /// `os_malloc_aligned_fd` makes the file `allocation + alignment + 40` bytes and
    /// starts the payload at `alignment`: 40, its header and a `size_t`).
    payload_slack: u64,
}

/// The start of a memfd export of Mesa's CPU drivers (util/os_memory_fd.c,
/// `struct memory_header { size_t size; size_t offset; uint8_t uuid[16]; }`):
/// the importer maps `size` bytes of the file and uses the data from `offset` on.
#[derive(Clone, Copy, Debug)]
struct MemfdHeader {
    size: u64,
    offset: u64,
}

/// Reads the header without moving the descriptor's offset (pread).
fn memfd_header(fd: RawFd) -> Option<MemfdHeader> {
    let mut b = [0u8; 16];
    // SAFETY: pread into a buffer we own; a bad descriptor gives -1.
    let n = unsafe { libc::pread(fd, b.as_mut_ptr().cast(), b.len(), 0) };
    (n == 16).then(|| MemfdHeader {
        size: u64::from_ne_bytes(b[..8].try_into().unwrap_or_default()),
        offset: u64::from_ne_bytes(b[8..].try_into().unwrap_or_default()),
    })
}

fn file_size(fd: RawFd) -> Option<u64> {
    // SAFETY: fstat writes into a zeroed struct we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some(st.st_size as u64)
}

fn shrink_sealed(fd: RawFd) -> bool {
    // SAFETY: fcntl reads the seals of a descriptor; a non-memfd gives -1.
    let seals = unsafe { libc::fcntl(fd, libc::F_GET_SEALS) };
    seals >= 0 && seals & libc::F_SEAL_SHRINK != 0
}

impl ExportFormat {
    /// The format of `fd`, an export of an allocation of `allocation_size` bytes.
    fn of(fd: RawFd, allocation_size: u64) -> Option<ExportFormat> {
        let kind = FdKind::of(fd)?;
        let header = valid_memfd_header(fd).filter(|_| kind.file_type == libc::S_IFREG);
        Some(ExportFormat {
            kind,
            memfd_header: header.is_some(),
            sealed: shrink_sealed(fd),
            payload_slack: header.map_or(0, |h| h.payload().saturating_sub(allocation_size)),
        })
    }
}

impl MemfdHeader {
    /// The bytes from the payload's offset to the end of the mapping.
    fn payload(&self) -> u64 {
        self.size.saturating_sub(self.offset)
    }
}

/// The header of `fd` when it is one a driver could have written: its mapping size
/// is the file's size and its payload starts inside it.
fn valid_memfd_header(fd: RawFd) -> Option<MemfdHeader> {
    match (memfd_header(fd), file_size(fd)) {
        (Some(h), Some(len)) if h.size == len && h.offset < h.size => Some(h),
        _ => None,
    }
}

/// The size of the allocation behind a memory fd, as far as this process can tell:
/// for a driver whose exports are memfds with a header (lavapipe), the header's
/// payload less the driver's own bytes after it (learned from the probe export):
/// the allocation's size exactly, as an import must state it
/// (VUID-VkMemoryAllocateInfo-allocationSize-01742); otherwise the size the kernel
/// knows ([`fd::known_size`]: a memfd, a dma-buf, a file), or None (NVIDIA's
/// opaque fds say nothing). The wraps and the imports compare the allocation size
/// they are given with it.
pub fn real_size(dev: &VulkanDevice, fd: BorrowedFd<'_>) -> Option<u64> {
    let raw = fd.as_raw_fd();
    if let Some(f) = export_format(dev).filter(|f| f.memfd_header) {
        if FdKind::of(raw) == Some(f.kind) {
            if let Some(h) = valid_memfd_header(raw) {
                return Some(h.payload().saturating_sub(f.payload_slack));
            }
        }
    }
    fd::known_size(fd)
}

/// The format of this device's exported memory fds, found once by exporting a small
/// probe allocation; None if that is impossible (no check is then made).
fn export_format(dev: &VulkanDevice) -> Option<ExportFormat> {
    *dev.export_format.get_or_init(|| {
        let usage = vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST;
        let probe = create_exportable_buffer(dev, 4096, usage).ok()?;
        let format = export_memory_fd(dev, probe.memory)
            .ok()
            .and_then(|fd| ExportFormat::of(fd.as_raw_fd(), probe.allocation_size));
        probe.destroy(dev);
        format
    })
}

/// Refuses an fd that this driver could not have exported, before the driver sees
/// it:
/// - not the kind of file the driver exports: on the H200, after NVIDIA's
///   vkAllocateMemory was handed /dev/null as an OPAQUE_FD, later imports of the
///   process failed with VK_ERROR_OUT_OF_DEVICE_MEMORY;
/// - for drivers whose exports are memfds with a header (lavapipe): a header whose
///   mapping is larger than the file or whose data starts past it, or holds fewer
///   than `needed` bytes (the driver maps what the header says, and the first
///   access past the end of the file kills the process with SIGBUS), and a memfd
///   not sealed against shrinking where the driver's are (the sender could
///   truncate it after the import).
///
/// What can be checked depends on the driver: NVIDIA's opaque fds carry nothing a
/// process can read, so only their kind is checked.
pub fn check_importable(dev: &VulkanDevice, fd: BorrowedFd<'_>, needed: u64) -> Result<()> {
    let Some(want) = export_format(dev) else {
        return Ok(());
    };
    let raw = fd.as_raw_fd();
    match FdKind::of(raw) {
        Some(got) if got == want.kind => {}
        got => {
            return Err(Error::invalid(format!(
                "the fd is {}, not a memory handle of this Vulkan driver (its OPAQUE_FDs are {}): refused before the import",
                got.map_or("unreadable".to_string(), |g| g.describe()),
                want.kind.describe()
            )))
        }
    }
    if want.sealed && !shrink_sealed(raw) {
        return Err(Error::invalid(
            "the memfd is not sealed against shrinking (F_SEAL_SHRINK), as this driver's exports are: \
             its sender could truncate it after the import; refused before the import",
        ));
    }
    if want.memfd_header {
        let len = file_size(raw).unwrap_or(0);
        let Some(h) = memfd_header(raw) else {
            return Err(Error::invalid(format!(
                "the memfd ({len} bytes) is too short for this driver's memory header; refused before the import"
            )));
        };
        // The payload holds the allocation and the driver's own bytes after it.
        let data = h.payload().saturating_sub(want.payload_slack);
        if h.size > len || h.offset > h.size || data < needed {
            return Err(Error::invalid(format!(
                "the memfd's header describes a {data}-byte allocation at offset {} of a \
                 {}-byte mapping, but the file has {len} bytes and the import needs {needed}: a \
                 forged or damaged payload, or an allocation smaller than the import states (the \
                 driver would fault on it); refused before the import",
                h.offset, h.size
            )));
        }
    }
    Ok(())
}

/// Checks what the engine says its memory was allocated with
/// (`VkExportMemoryAllocateInfo::handleTypes`), before any call that exports it.
/// The library cannot ask Vulkan how a `VkDeviceMemory` was allocated, and
/// `vkGetMemoryFdKHR` on memory allocated without `OPAQUE_FD` in its export info is
/// invalid usage (VUID-VkMemoryGetFdInfoKHR-handleType-00671), undefined behaviour
/// rather than an error: so the engine states it, and a statement without
/// `OPAQUE_FD` is refused here. `what` names the value in the message (the
/// field or parameter the caller took it from).
pub fn check_export_types(types: vk::ExternalMemoryHandleTypeFlags, what: &str) -> Result<()> {
    let how = "allocate the memory with VkExportMemoryAllocateInfo::handleTypes including \
               VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT (with VMA: a custom pool whose \
               VmaPoolCreateInfo::pMemoryAllocateNext points to that VkExportMemoryAllocateInfo) and set";
    if types.is_empty() {
        return Err(Error::invalid(format!(
            "{what} is 0: the memory must have been allocated with export info (VkExportMemoryAllocateInfo), \
             and the library cannot see whether it was (vkGetMemoryFdKHR on memory without it is invalid \
             usage, VUID-VkMemoryGetFdInfoKHR-handleType-00671, so it is not tried): {how} {what} to those \
             handle types"
        )));
    }
    if !types.contains(HANDLE_TYPE) {
        let types = types.as_raw();
        return Err(Error::invalid(format!(
            "{what} is {types:#x}, without VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT (0x1): the memory's \
             export info (VkExportMemoryAllocateInfo) does not allow the OPAQUE_FD export CUDA imports: {how} \
             {what} to those handle types"
        )));
    }
    Ok(())
}

/// A new `OPAQUE_FD` for `memory` (which must have been allocated exportable).
pub fn export_memory_fd(dev: &VulkanDevice, memory: vk::DeviceMemory) -> Result<OwnedFd> {
    let f = dev.memory_fd()?;
    let info = vk::MemoryGetFdInfoKHR::default()
        .memory(memory)
        .handle_type(HANDLE_TYPE);
    let mut raw = -1;
    dev.check("vkGetMemoryFdKHR", unsafe {
        (f.get_memory_fd_khr)(dev.device.handle(), &info, &mut raw)
    })?;
    if raw < 0 {
        return Err(Error::new(
            ErrorKind::Vulkan,
            "vkGetMemoryFdKHR returned no descriptor",
        ));
    }
    // SAFETY: each vkGetMemoryFdKHR call creates a new descriptor owned by the caller.
    Ok(unsafe { fd::adopt(raw) })
}

#[cfg(test)]
mod size_tests {
    use super::size_problem;

    /// The H200's figures (docs/GUIDE.md): maxMemoryAllocationSize 4,292,870,144,
    /// maxBufferSize 1 TiB, heap 0 of 140 GiB.
    const TIB: u64 = 1 << 40;
    const GIB: u64 = 1 << 30;
    const HEAP: u64 = 140 * GIB;

    #[test]
    fn sizes_past_max_memory_allocation_size_are_allowed() {
        for size in [
            4_292_870_145,
            9 * GIB / 2,
            8 * GIB,
            16 * GIB,
            48 * GIB,
            HEAP,
        ] {
            assert_eq!(size_problem(size, size, TIB, HEAP), None, "{size}");
        }
    }

    #[test]
    fn sizes_past_the_buffer_limit_or_the_heap_are_refused() {
        let p = size_problem(HEAP + 1, HEAP + 1, TIB, HEAP).unwrap();
        assert!(p.contains("largest memory heap"), "{p}");
        let p = size_problem(TIB + 1, TIB + 1, TIB, 2 * TIB).unwrap();
        assert!(p.contains("maxBufferSize 1099511627776"), "{p}");
        // A device that does not say its maxBufferSize: only the heap bounds it.
        assert_eq!(size_problem(48 * GIB, 48 * GIB, 0, HEAP), None);
        // An import: the buffer within the limit, its allocation past the heap.
        let p = size_problem(GIB, HEAP + 1, TIB, HEAP).unwrap();
        assert!(p.contains(&format!("size {}", HEAP + 1)), "{p}");
    }
}
