/*
 * nvenc_open: the encode direction (issue 28, item 4) as far as this GPU lets it go. Vulkan renders an
 * RGBA frame (a transfer fill) into a shared buffer (vkcuda_buffer: one allocation, a VkBuffer and a
 * CUdeviceptr), releases it to CUDA, and CUDA checks the pixels; that device pointer, pitch width x 4,
 * is the frame NVENC takes as NV_ENC_INPUT_RESOURCE_TYPE_CUDADEVICEPTR in NV_ENC_BUFFER_FORMAT_ABGR
 * (bytes R, G, B, A: what Vulkan's R8G8B8A8 writes). libnvidia-encode.so.1 (and libcuda.so.1) are
 * loaded at run time through FFmpeg's nv-codec-headers (dynlink_loader.h), nothing links them.
 * Then nvEncOpenEncodeSessionEx on the context's CUDA context:
 *   - NV_ENC_ERR_NO_ENCODE_DEVICE (1) or NV_ENC_ERR_UNSUPPORTED_DEVICE (2; what the H200's driver
 *     580 returns: H100/H200-class chips have no encoder engine): prints "SKIPPED: nvenc_open: no NVENC
 *     engine on this GPU (NV_ENC_ERR_...)" and exits 77: a skip, not a pass, even with
 *     VKCUDA_REQUIRE_GPU=1 (there is a GPU; it has no encoder);
 *   - a session: the encoder is initialised (H.264, preset P4, the frame's size), the shared buffer
 *     registered and mapped as its ABGR input, then everything released: "nvenc_open: PASS" (no
 *     frame is encoded: on such a GPU, the next step). Not run yet: no GPU with NVENC here.
 * Without a CUDA GPU or libnvidia-encode: "SKIPPED: nvenc_open: why" and exit 77 (1 with VKCUDA_REQUIRE_GPU=1).
 * Its own translation unit without c_examples/example.h or the rig (rig.h includes it):
 * nv-codec-headers declare the CUDA types. Its skip is its own too: on a GPU without an
 * encoder engine it skips (77) even with VKCUDA_REQUIRE_GPU=1, where rig_skip fails.
 */
#include <vkcuda.h>
#include <vulkan/vulkan.h>

#include <ffnvcodec/dynlink_loader.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 1920
#define H 1080
#define RGBA_WORD 0xff2080e0u /* R 0xe0, G 0x80, B 0x20, A 0xff, little-endian */

static int fail(const char *what, long long code) {
    printf("nvenc_open: FAIL: %s (%lld): %s\n", what, code, vkcuda_last_error_message());
    return 1;
}

static int skip(int gpu_missing, const char *why, const char *detail) {
    const char *req = getenv("VKCUDA_REQUIRE_GPU");
    printf("SKIPPED: nvenc_open: %s%s\n", why, detail);
    return gpu_missing && req && strcmp(req, "1") == 0 ? 1 : 77;
}

int main(void) {
    vkcuda_standalone_create_info si;
    vkcuda_context *ctx = NULL;
    vkcuda_vulkan_handles vh;
    vkcuda_cuda_info ci;
    int rc = 0;
    setvbuf(stdout, NULL, _IONBF, 0);
    memset(&si, 0, sizeof si);
    vkcuda_result r = vkcuda_context_create_standalone(&si, &ctx);
    if (r == VKCUDA_ERROR_CUDA_UNAVAILABLE || r == VKCUDA_ERROR_VULKAN_UNAVAILABLE || r == VKCUDA_ERROR_DEVICE_MISMATCH ||
        r == VKCUDA_ERROR_EXTENSION_NOT_PRESENT)
        return skip(1, "no CUDA GPU paired with a Vulkan device: ", vkcuda_last_error_message());
    if (r) return fail("vkcuda_context_create_standalone", r);
    if ((r = vkcuda_context_get_vulkan_handles(ctx, &vh)) || (r = vkcuda_context_get_cuda_info(ctx, &ci)))
        return fail("context handles", r);
    CudaFunctions *cu = NULL;
    NvencFunctions *nv = NULL;
    if (cuda_load_functions(&cu, NULL)) return skip(1, "libcuda.so.1 does not load", "");
    if (cu->cuCtxPushCurrent(ci.cuda_context) != CUDA_SUCCESS) return fail("cuCtxPushCurrent", 0);

    /* 1. Vulkan renders the frame into the shared buffer and hands it to CUDA. */
    vkcuda_buffer *frame = NULL;
    vkcuda_buffer_info bi;
    vkcuda_buffer_create_info bci = {0, VKCUDA_ALLOCATOR_VULKAN, (uint64_t)W * H * 4, 0};
    if ((r = vkcuda_buffer_create(ctx, &bci, &frame)) || (r = vkcuda_buffer_get_info(frame, &bi)))
        return fail("vkcuda_buffer_create", r);
    VkCommandPoolCreateInfo pci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL, 0, vh.queue_family_index};
    VkCommandPool pool;
    VkCommandBuffer cmd;
    if (vkCreateCommandPool(vh.device, &pci, NULL, &pool)) return fail("vkCreateCommandPool", 0);
    VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    VkCommandBufferBeginInfo begin = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL};
    if (vkAllocateCommandBuffers(vh.device, &cai, &cmd) || vkBeginCommandBuffer(cmd, &begin))
        return fail("command buffer", 0);
    vkCmdFillBuffer(cmd, bi.buffer, 0, bci.size, RGBA_WORD);
    vkcuda_handoff_info to_cuda;
    memset(&to_cuda, 0, sizeof to_cuda);
    to_cuda.queue_family_index = vh.queue_family_index;
    to_cuda.stage_mask = VK_PIPELINE_STAGE_TRANSFER_BIT, to_cuda.access_mask = VK_ACCESS_TRANSFER_WRITE_BIT;
    if ((r = vkcuda_buffer_cmd_release_to_cuda(frame, cmd, &to_cuda))) return fail("vkcuda_buffer_cmd_release_to_cuda", r);
    VkSubmitInfo submit = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &cmd, 0, NULL};
    if (vkEndCommandBuffer(cmd) || vkQueueSubmit(vh.queue, 1, &submit, VK_NULL_HANDLE) || vkQueueWaitIdle(vh.queue))
        return fail("the Vulkan render", 0);
    /* 2. CUDA sees the rendered pixels at the pointer NVENC would read (first and last pixel). */
    uint32_t px[2] = {0, 0};
    if (cu->cuMemcpyDtoH(&px[0], bi.cuda_pointer, 4) || cu->cuMemcpyDtoH(&px[1], bi.cuda_pointer + bci.size - 4, 4))
        return fail("cuMemcpyDtoH", 0);
    printf("nvenc_open: Vulkan-rendered %dx%d RGBA frame at CUdeviceptr 0x%llx, pitch %d: pixels 0x%08x 0x%08x (want 0x%08x)\n",
           W, H, (unsigned long long)bi.cuda_pointer, W * 4, px[0], px[1], RGBA_WORD);
    if (px[0] != RGBA_WORD || px[1] != RGBA_WORD) return printf("nvenc_open: FAIL: CUDA does not see Vulkan's pixels\n"), 1;

    /* 3. NVENC: load, create the API instance, open a session on the CUDA context. */
    uint32_t max = 0;
    NV_ENCODE_API_FUNCTION_LIST fl;
    void *enc = NULL;
    memset(&fl, 0, sizeof fl);
    if (nvenc_load_functions(&nv, NULL)) {
        rc = skip(1, "libnvidia-encode.so.1 does not load: no NVENC driver library here", "");
        goto done;
    }
    NVENCSTATUS s = nv->NvEncodeAPIGetMaxSupportedVersion(&max);
    printf("nvenc_open: driver's NVENC API %u.%u (status %d), headers %u.%u\n", max >> 4, max & 15, (int)s,
           NVENCAPI_MAJOR_VERSION, NVENCAPI_MINOR_VERSION);
    fl.version = NV_ENCODE_API_FUNCTION_LIST_VER;
    if ((s = nv->NvEncodeAPICreateInstance(&fl)) != NV_ENC_SUCCESS) {
        rc = fail("NvEncodeAPICreateInstance", s);
        goto done;
    }
    NV_ENC_OPEN_ENCODE_SESSION_EX_PARAMS op;
    memset(&op, 0, sizeof op);
    op.version = NV_ENC_OPEN_ENCODE_SESSION_EX_PARAMS_VER, op.deviceType = NV_ENC_DEVICE_TYPE_CUDA;
    op.device = ci.cuda_context, op.apiVersion = NVENCAPI_VERSION;
    s = fl.nvEncOpenEncodeSessionEx(&op, &enc);
    printf("nvenc_open: nvEncOpenEncodeSessionEx -> %d\n", (int)s);
    if (s == NV_ENC_ERR_NO_ENCODE_DEVICE || s == NV_ENC_ERR_UNSUPPORTED_DEVICE) {
        rc = skip(0,
                  s == NV_ENC_ERR_NO_ENCODE_DEVICE ? "no NVENC engine on this GPU (NV_ENC_ERR_NO_ENCODE_DEVICE)"
                                                   : "no NVENC engine on this GPU (NV_ENC_ERR_UNSUPPORTED_DEVICE)",
                  "");
        goto done;
    }
    if (s != NV_ENC_SUCCESS) {
        rc = fail("nvEncOpenEncodeSessionEx", s);
        enc = NULL;
        goto done;
    }
    /* 4. A session: initialise it for the frame, register and map the shared buffer as ABGR input. */
    NV_ENC_INITIALIZE_PARAMS ip;
    memset(&ip, 0, sizeof ip);
    ip.version = NV_ENC_INITIALIZE_PARAMS_VER, ip.encodeGUID = NV_ENC_CODEC_H264_GUID, ip.presetGUID = NV_ENC_PRESET_P4_GUID;
    ip.tuningInfo = NV_ENC_TUNING_INFO_HIGH_QUALITY, ip.encodeWidth = ip.darWidth = W, ip.encodeHeight = ip.darHeight = H;
    ip.frameRateNum = 30, ip.frameRateDen = 1, ip.enablePTD = 1;
    if ((s = fl.nvEncInitializeEncoder(enc, &ip)) != NV_ENC_SUCCESS) {
        rc = fail("nvEncInitializeEncoder", s);
        goto done;
    }
    NV_ENC_REGISTER_RESOURCE reg;
    memset(&reg, 0, sizeof reg);
    reg.version = NV_ENC_REGISTER_RESOURCE_VER, reg.resourceType = NV_ENC_INPUT_RESOURCE_TYPE_CUDADEVICEPTR;
    reg.width = W, reg.height = H, reg.pitch = W * 4, reg.resourceToRegister = (void *)(uintptr_t)bi.cuda_pointer;
    reg.bufferFormat = NV_ENC_BUFFER_FORMAT_ABGR, reg.bufferUsage = NV_ENC_INPUT_IMAGE;
    if ((s = fl.nvEncRegisterResource(enc, &reg)) != NV_ENC_SUCCESS) {
        rc = fail("nvEncRegisterResource (CUDADEVICEPTR, ABGR)", s);
        goto done;
    }
    NV_ENC_MAP_INPUT_RESOURCE map;
    memset(&map, 0, sizeof map);
    map.version = NV_ENC_MAP_INPUT_RESOURCE_VER, map.registeredResource = reg.registeredResource;
    if ((s = fl.nvEncMapInputResource(enc, &map)) != NV_ENC_SUCCESS) rc = fail("nvEncMapInputResource", s);
    else fl.nvEncUnmapInputResource(enc, map.mappedResource);
    fl.nvEncUnregisterResource(enc, reg.registeredResource);
    if (rc == 0) printf("nvenc_open: PASS: session open, the Vulkan-rendered frame registered and mapped as ABGR input\n");
done:
    if (enc) fl.nvEncDestroyEncoder(enc);
    nvenc_free_functions(&nv);
    vkDestroyCommandPool(vh.device, pool, NULL);
    vkcuda_buffer_destroy(frame);
    cu->cuCtxPopCurrent(NULL);
    cuda_free_functions(&cu);
    vkcuda_context_destroy(ctx);
    vkcuda_live_objects live;
    if (vkcuda_live_objects_get(&live) == VKCUDA_SUCCESS && live.contexts + live.vk_buffers + live.vk_memories +
        live.cuda_external_memories + live.cuda_allocations != 0)
        return printf("nvenc_open: FAIL: library objects left after cleanup\n"), 1;
    return rc;
}
