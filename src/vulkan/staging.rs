//! A host-visible staging buffer: the library's one helper for moving host bytes
//! to and from device resources with Vulkan transfers (`vkCmdCopyBuffer`,
//! `vkCmdCopyBufferToImage`, `vkCmdCopyImageToBuffer` record from and into it).
//! The doctor's deep self-test copies through it.

use ash::vk;

use super::support::find_memory_type;
use super::VulkanDevice;
use crate::error::{Error, Result};

/// A `TRANSFER_SRC | TRANSFER_DST` buffer in host-visible, host-coherent memory
/// (host-cached where the device has such a type: every byte copied back is read
/// on the host, and uncached, write-combined memory is slow to read), mapped for
/// its whole life. It has no `Drop`: [`HostBuffer::destroy`] frees it, and a
/// buffer a pending submit may still use is leaked by not calling it.
pub struct HostBuffer {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    ptr: *mut u8,
    size: usize,
}

impl HostBuffer {
    /// A mapped buffer of `size` bytes on `dev`.
    pub fn create(dev: &VulkanDevice, size: usize) -> Result<HostBuffer> {
        let d = &dev.device;
        let info = vk::BufferCreateInfo::default()
            .size(size as u64)
            .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST);
        // SAFETY: plain object creation on a live device; released on error.
        unsafe {
            let buffer = d
                .create_buffer(&info, None)
                .map_err(|e| dev.error("vkCreateBuffer", e))?;
            let req = d.get_buffer_memory_requirements(buffer);
            let Some(index) = find_memory_type(
                &dev.props.memory,
                req.memory_type_bits,
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
                vk::MemoryPropertyFlags::HOST_CACHED,
            ) else {
                d.destroy_buffer(buffer, None);
                return Err(Error::unsupported("no host-visible coherent memory type"));
            };
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
                .and_then(|_| d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()));
            match mapped {
                Ok(p) => Ok(HostBuffer {
                    buffer,
                    memory,
                    ptr: p.cast(),
                    size,
                }),
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    d.free_memory(memory, None);
                    Err(dev.error("vkMapMemory", e))
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

    /// The mapped bytes. The memory is host-coherent: what the host writes here
    /// is seen by a submit made afterwards, and what a waited-for submit wrote is
    /// seen here.
    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `size` bytes and lives as long as `self`; the
        // caller records no transfer that runs while it holds this borrow (each
        // submit is waited for before the bytes are read or written).
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.size) }
    }

    /// Frees the buffer and its memory.
    ///
    /// # Safety
    /// `dev` is the device it was made on, and no pending submit uses it.
    pub unsafe fn destroy(self, dev: &VulkanDevice) {
        dev.device.destroy_buffer(self.buffer, None);
        dev.device.free_memory(self.memory, None);
    }
}
