//! A host-visible staging buffer: the library's one helper for moving host bytes
//! to and from device resources with Vulkan transfers (`vkCmdCopyBuffer`,
//! `vkCmdCopyBufferToImage`, `vkCmdCopyImageToBuffer` record from and into it).
//! The doctor's deep self-test copies through it, and the public
//! [`crate::HostBuffer`] (the C API's `vkcuda_host_buffer`) is one of these with
//! its context.

use ash::vk;

use super::support::find_memory_type;
use super::VulkanDevice;
use crate::error::{Error, Result};
use crate::stats;

const REQUIRED: vk::MemoryPropertyFlags = vk::MemoryPropertyFlags::from_raw(
    vk::MemoryPropertyFlags::HOST_VISIBLE.as_raw()
        | vk::MemoryPropertyFlags::HOST_COHERENT.as_raw(),
);

/// A `TRANSFER_SRC | TRANSFER_DST` buffer in host-visible, host-coherent memory
/// (host-cached where the device has such a type: every byte copied back is read
/// on the host, and uncached, write-combined memory is slow to read), mapped for
/// its whole life. Counted in [`crate::live_objects`] (one `VkBuffer`, one
/// `VkDeviceMemory`). It has no `Drop`: [`HostBuffer::destroy`] frees it, and a
/// buffer a pending submit may still use is leaked by not calling it.
pub struct HostBuffer {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    ptr: *mut u8,
    size: usize,
}

/// The largest heap that has a host-visible, coherent memory type (0: none).
fn largest_host_heap(m: &vk::PhysicalDeviceMemoryProperties) -> u64 {
    m.memory_types[..m.memory_type_count as usize]
        .iter()
        .filter(|t| t.property_flags.contains(REQUIRED))
        .map(|t| m.memory_heaps[t.heap_index as usize].size)
        .max()
        .unwrap_or(0)
}

/// What is wrong with a staging buffer of `size` bytes on a device of
/// `max_buffer_size` (0: unknown) whose largest host-visible heap is `heap`
/// bytes, if anything.
fn size_problem(size: u64, max_buffer_size: u64, heap: u64) -> Option<Error> {
    if size == 0 {
        return Some(Error::invalid("size must not be 0"));
    }
    if size > isize::MAX as u64 {
        return Some(Error::invalid(format!(
            "size {size} is absurd (more than the address space can map)"
        )));
    }
    if max_buffer_size != 0 && size > max_buffer_size {
        return Some(Error::invalid(format!(
            "size {size} is larger than the device's maxBufferSize {max_buffer_size}"
        )));
    }
    if heap == 0 {
        return Some(Error::unsupported("no host-visible coherent memory type"));
    }
    if size > heap {
        return Some(Error::invalid(format!(
            "size {size} is larger than the device's largest host-visible memory heap ({heap} bytes)"
        )));
    }
    None
}

impl HostBuffer {
    /// A mapped buffer of `size` bytes on `dev`. A size of 0, one past the
    /// address space, the device's `maxBufferSize` or its largest host-visible
    /// heap is refused (`InvalidArgument`) before any driver call.
    pub fn create(dev: &VulkanDevice, size: u64) -> Result<HostBuffer> {
        let memory_props = &dev.props.memory;
        if let Some(e) = size_problem(
            size,
            dev.props.max_buffer_size,
            largest_host_heap(memory_props),
        ) {
            return Err(e);
        }
        let d = &dev.device;
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST);
        // SAFETY: plain object creation on a live device; released on error.
        unsafe {
            let buffer = d
                .create_buffer(&info, None)
                .map_err(|e| dev.error("vkCreateBuffer", e))?;
            let req = d.get_buffer_memory_requirements(buffer);
            let Some(index) = find_memory_type(
                memory_props,
                req.memory_type_bits,
                REQUIRED,
                vk::MemoryPropertyFlags::HOST_CACHED,
            ) else {
                d.destroy_buffer(buffer, None);
                return Err(Error::unsupported("no host-visible coherent memory type"));
            };
            let heap = memory_props.memory_heaps
                [memory_props.memory_types[index as usize].heap_index as usize]
                .size;
            if req.size > heap {
                d.destroy_buffer(buffer, None);
                return Err(Error::invalid(format!(
                    "size {size} needs {} bytes of memory type {index}, more than its heap ({heap} bytes)",
                    req.size
                )));
            }
            let alloc = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(index);
            let memory = match d.allocate_memory(&alloc, None) {
                Ok(m) => m,
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    return Err(dev.error("vkAllocateMemory", e));
                }
            };
            let mapped = d
                .bind_buffer_memory(buffer, memory, 0)
                .map_err(|e| dev.error("vkBindBufferMemory", e))
                .and_then(|_| {
                    d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
                        .map_err(|e| dev.error("vkMapMemory", e))
                });
            match mapped {
                Ok(p) => {
                    stats::VK_BUFFERS.add();
                    stats::VK_MEMORIES.add();
                    Ok(HostBuffer {
                        buffer,
                        memory,
                        ptr: p.cast(),
                        // Fits: checked against isize::MAX above.
                        size: size as usize,
                    })
                }
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    d.free_memory(memory, None);
                    Err(e)
                }
            }
        }
    }

    /// The buffer, to record copies with.
    pub fn buffer(&self) -> vk::Buffer {
        self.buffer
    }

    /// Its size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The start of the mapping (`size` bytes, valid until [`HostBuffer::destroy`]).
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The mapped bytes. The memory is host-coherent: what the host writes here
    /// is seen by a submit made afterwards, and what a waited-for submit wrote is
    /// seen here.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `size` bytes and lives as long as `self`; the
        // caller records no transfer that writes it while it holds this borrow
        // (each submit is waited for before the bytes are read).
        unsafe { std::slice::from_raw_parts(self.ptr, self.size) }
    }

    /// The mapped bytes, to write (see [`HostBuffer::bytes`]).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes this the only borrow.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.size) }
    }

    /// Frees the buffer and its memory.
    ///
    /// # Safety
    /// `dev` is the device it was made on, and no pending submit uses it.
    pub unsafe fn destroy(self, dev: &VulkanDevice) {
        dev.device.destroy_buffer(self.buffer, None);
        dev.device.free_memory(self.memory, None);
        stats::VK_BUFFERS.sub();
        stats::VK_MEMORIES.sub();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn sizes_are_checked_before_the_driver() {
        let heap = 1u64 << 34;
        let refused = |size, max| size_problem(size, max, heap).map(|e| (e.kind, e.message));
        assert_eq!(refused(1, 0), None);
        assert_eq!(refused(heap, 0), None);
        let (kind, msg) = refused(0, 0).unwrap();
        assert_eq!(
            (kind, msg.as_str()),
            (ErrorKind::InvalidArgument, "size must not be 0")
        );
        let (kind, msg) = refused(u64::MAX, 0).unwrap();
        assert!(
            kind == ErrorKind::InvalidArgument && msg.contains("absurd"),
            "{msg}"
        );
        let (kind, msg) = refused(heap + 1, 0).unwrap();
        assert!(
            kind == ErrorKind::InvalidArgument && msg.contains("host-visible memory heap"),
            "{msg}"
        );
        let (kind, msg) = refused(4097, 4096).unwrap();
        assert!(
            kind == ErrorKind::InvalidArgument && msg.contains("maxBufferSize 4096"),
            "{msg}"
        );
        let e = size_problem(16, 0, 0).unwrap();
        assert_eq!(e.kind, ErrorKind::Unsupported);
    }
}
