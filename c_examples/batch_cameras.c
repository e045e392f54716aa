/*
 * batch_cameras: many cameras, one tensor. Vulkan renders N views of one scene (a cube with six coloured faces;
 * shaders/batch_cameras.vert and .frag) with a graphics pipeline into two image batches, colour (RGBA8) and depth
 * (D32_SFLOAT). CUDA reads each batch as ONE tensor, [N, H, W, 4] and [N, H, W], and computes per camera the mean
 * colour and a depth histogram (batch_kernels.cu): no copy where the device takes LINEAR attachments (the zero-copy
 * path; elsewhere the library's one recorded readout), no host wait in the frame loop (one timeline orders it).
 * Each frame (the cameras move a little):
 *   1. Vulkan: the batches back from CUDA (after the first frame), one render pass per camera into element i of
 *      both batches, then vkcuda_batch_cmd_release_to_cuda: one call hands all N images of a batch over.
 *   2. CUDA: the stream waits for stage 1 on the GPU; one launch over all N cameras reads the tensors
 *      (vkcuda_batch_info: pointer, element stride, row pitch); the stream signals the next stage.
 * The engine's renderer is scene.c (render pass, pipeline, cameras); this file is the batch's part.
 * After the loop the host waits once and Vulkan copies the last frame out; every camera is checked: the centre
 * pixel's face colour and depth against the scene's geometry, the corners against the clear values, and CUDA's
 * figures against the same figures computed on the host from the pixels, exactly.
 *
 *   batch_cameras [--vulkan-only]    --vulkan-only: no CUDA (lavapipe): the render, handoffs and host checks
 */
#include "batch_kernels_ptx.h"
#include "example.h"
#include "scene.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define N 64u
#define W 128u
#define H 128u
#define FRAMES 4u
#define BINS 8u
#define STATS (3u + BINS) /* R, G, B sums, then the depth histogram (batch_kernels.cu) */

/* camera_stats of batch_kernels.cu on the host, over camera i's packed pixels. */
static void camera_stats_host(const uint8_t *rgba, const float *depth, uint64_t out[STATS]) {
    uint32_t p, c;
    memset(out, 0, STATS * sizeof *out);
    for (p = 0; p < W * H; p++) {
        float scaled = depth[p] * (float)BINS;
        for (c = 0; c < 3; c++) out[c] += rgba[4 * p + c];
        out[3 + (scaled >= (float)(BINS - 1) ? BINS - 1 : (uint32_t)scaled)]++;
    }
}

/* The copy path takes back only its readout region; the zero-copy path its images. */
static void acquire(vkcuda_batch *b, VkCommandBuffer cmd, const vkcuda_handoff_info *h) {
    vkcuda_batch_info i;
    CHECK(vkcuda_batch_get_info(b, &i));
    if (i.path == VKCUDA_BATCH_PATH_COPY) CHECK(vkcuda_batch_cmd_acquire_readout_from_cuda(b, cmd, h));
    else CHECK(vkcuda_batch_cmd_acquire_from_cuda(b, cmd, h, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL));
}

int main(int argc, char **argv) {
    int cuda = !(argc > 1 && strcmp(argv[1], "--vulkan-only") == 0);
    example ex;
    VkDevice dev;
    vkcuda_batch_create_info bci = {0};
    vkcuda_batch *batch[2]; /* colour, depth */
    vkcuda_batch_info info[2];
    vkcuda_batch_element el;
    vkcuda_semaphore_create_info sci = {0};
    vkcuda_semaphore *timeline = NULL;
    VkSemaphore vk_timeline;
    vkcuda_handoff_info h;
    VkImageView views[N][2];
    VkFramebuffer framebuffers[N];
    VkCommandBuffer cmd[FRAMES];
    scene sc;
    CUmodule module = NULL;
    CUfunction kernel = NULL;
    CUdeviceptr results = 0;
    static uint64_t device_stats[FRAMES][N][STATS];
    vk_owned_buffer host[2];
    uint64_t done = 0, bad = 0;
    uint32_t i, f, k;

    example_open(&ex, "batch_cameras", cuda ? 0 : VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT);
    dev = ex.vh.device;
    /* The two batches: N attachments each in one exportable allocation (usage 0: attachment + transfers). */
    bci.count = N, bci.width = W, bci.height = H, bci.format = VK_FORMAT_R8G8B8A8_UNORM;
    CHECK(vkcuda_batch_create(ex.ctx, &bci, &batch[0]));
    bci.format = VK_FORMAT_D32_SFLOAT;
    CHECK(vkcuda_batch_create(ex.ctx, &bci, &batch[1]));
    for (k = 0; k < 2; k++) {
        CHECK(vkcuda_batch_get_info(batch[k], &info[k]));
        printf("%s batch: %u x %ux%u, %s path, element stride %llu, row pitch %llu, one allocation of %llu bytes\n",
               k ? "depth" : "colour", N, W, H, info[k].path == VKCUDA_BATCH_PATH_ZERO_COPY ? "zero-copy" : "copy",
               (unsigned long long)info[k].element_stride, (unsigned long long)info[k].row_pitch,
               (unsigned long long)info[k].allocation_size);
    }
    scene_create(&sc, dev, W, H);
    for (i = 0; i < N; i++) { /* a framebuffer per camera: element i of both batches */
        VkFramebufferCreateInfo fbi = {VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO, NULL, 0, sc.pass, 2, views[i], W, H,
                                       1};
        for (k = 0; k < 2; k++) {
            VkImageViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
            CHECK(vkcuda_batch_get_element(batch[k], i, &el));
            vi.image = el.image, vi.viewType = VK_IMAGE_VIEW_TYPE_2D, vi.format = info[k].format;
            vi.subresourceRange.aspectMask = k ? VK_IMAGE_ASPECT_DEPTH_BIT : VK_IMAGE_ASPECT_COLOR_BIT;
            vi.subresourceRange.levelCount = vi.subresourceRange.layerCount = 1;
            CHECK_VK(vkCreateImageView(dev, &vi, NULL, &views[i][k]));
        }
        CHECK_VK(vkCreateFramebuffer(dev, &fbi, NULL, &framebuffers[i]));
    }
    if (cuda) {
        CHECK_CU(cuModuleLoadDataEx(&module, batch_kernels_ptx, 0, NULL, NULL));
        CHECK_CU(cuModuleGetFunction(&kernel, module, "camera_stats"));
        CHECK_CU(cuMemAlloc(&results, sizeof device_stats));
    }
    if (cuda) { /* the timeline Vulkan and CUDA share */
        CHECK(vkcuda_semaphore_create(ex.ctx, &sci, &timeline));
        CHECK(vkcuda_semaphore_get_vk_semaphore(timeline, &vk_timeline));
    } else { /* no CUDA to share it with (and lavapipe cannot export one): Vulkan's own */
        VkSemaphoreTypeCreateInfo type = {VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, NULL,
                                          VK_SEMAPHORE_TYPE_TIMELINE, 0};
        VkSemaphoreCreateInfo si = {VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type, 0};
        CHECK_VK(vkCreateSemaphore(dev, &si, NULL, &vk_timeline));
    }
    h = example_handoff(&ex, 0, 0); /* all commands, all memory accesses */

    /* The frame loop: no host wait in it. */
    for (f = 0; f < FRAMES; f++) {
        vkcuda_timeline_stage render, consume;
        CUdeviceptr out = results + (CUdeviceptr)f * N * STATS * 8;
        uint32_t w = W, hh = H;
        void *params[9] = {&info[0].cuda_pointer, &info[0].element_stride, &info[0].row_pitch, &info[1].cuda_pointer,
                           &info[1].element_stride, &info[1].row_pitch, &w, &hh, &out};
        if (cuda) CHECK(vkcuda_semaphore_next_stage(timeline, &render));
        else render.wait_value = f, render.signal_value = f + 1;
        example_record(cmd[f] = example_command_buffer(&ex));
        for (k = 0; f > 0 && k < 2; k++) acquire(batch[k], cmd[f], &h); /* back from CUDA's last read */
        for (i = 0; i < N; i++) { /* camera i renders into element i of both batches */
            float eye[3];
            scene_camera_eye(i, N, f, eye);
            scene_cmd_draw(&sc, cmd[f], framebuffers[i], eye);
        }
        CHECK(vkcuda_batch_cmd_release_to_cuda(batch[0], cmd[f], &h, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL));
        CHECK(vkcuda_batch_cmd_release_to_cuda(batch[1], cmd[f], &h,
                                               VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL));
        example_submit_stage(&ex, cmd[f], vk_timeline, &render);
        done = render.signal_value;
        if (!cuda) continue;
        CHECK(vkcuda_semaphore_next_stage(timeline, &consume));
        CHECK(vkcuda_semaphore_cuda_wait(timeline, consume.wait_value, ex.stream));
        CHECK_CU(cuLaunchKernel(kernel, N, 1, 1, 256, 1, 1, 0, ex.stream, params, NULL));
        CHECK(vkcuda_semaphore_cuda_signal(timeline, consume.signal_value, ex.stream));
        done = consume.signal_value;
    }

    /* The one host wait; then Vulkan copies the last frame out, camera by camera. */
    if (cuda) CHECK(vkcuda_semaphore_host_wait(timeline, done, 30000000000ull));
    else CHECK_VK(vkQueueWaitIdle(ex.vh.queue));
    if (cuda) CHECK_CU(cuMemcpyDtoH(device_stats, results, sizeof device_stats));
    example_record(ex.cmd);
    for (k = 0; k < 2; k++) {
        host[k] = example_host_buffer(&ex, (VkDeviceSize)N * W * H * 4);
        acquire(batch[k], ex.cmd, &h);
        for (i = 0; i < N; i++) {
            VkBufferImageCopy region = {(VkDeviceSize)i * W * H * 4, 0, 0, {0, 0, 0, 1}, {0, 0, 0}, {W, H, 1}};
            region.imageSubresource.aspectMask = k ? VK_IMAGE_ASPECT_DEPTH_BIT : VK_IMAGE_ASPECT_COLOR_BIT;
            CHECK(vkcuda_batch_get_element(batch[k], i, &el));
            vkCmdCopyImageToBuffer(ex.cmd, el.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, host[k].buffer, 1, &region);
        }
    }
    vk_cmd_barrier(ex.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                   VK_ACCESS_HOST_READ_BIT);
    example_run(&ex, ex.cmd);

    /* The checks, camera by camera (the face seen at the centre: the axis of the eye's largest coordinate). */
    for (i = 0; i < N; i++) {
        const uint8_t *rgba = (const uint8_t *)host[0].mapped + (size_t)i * W * H * 4;
        const float *depth = (const float *)host[1].mapped + (size_t)i * W * H;
        const uint32_t centre = (H / 2) * W + W / 2, corner[4] = {0, W - 1, (H - 1) * W, H * W - 1};
        float eye[3], a[3], d, want_depth, top = 0, second = 0;
        uint64_t host_stats[STATS];
        int axis = 0, c;
        scene_camera_eye(i, N, FRAMES - 1, eye);
        for (c = 0; c < 3; c++) a[c] = fabsf(eye[c]), axis = a[c] > a[axis] ? c : axis;
        for (c = 0; c < 3; c++) top = a[c] > top ? a[c] : top, second = c != axis && a[c] > second ? a[c] : second;
        d = sqrtf(eye[0] * eye[0] + eye[1] * eye[1] + eye[2] * eye[2]) * (1.0f - 0.5f / top); /* eye to face */
        want_depth = SCENE_FAR * (d - SCENE_NEAR) / ((SCENE_FAR - SCENE_NEAR) * d);
        bad += fabsf(depth[centre] - want_depth) > 5e-3f; /* the pixel is half a pixel off the axis */
        for (c = 0; top - second > 0.05f * top && c < 3; c++) /* not too near an edge */
            bad += rgba[4 * centre + c] != scene_face_rgb[2 * axis + (eye[axis] < 0)][c];
        for (k = 0; k < 4; k++) bad += depth[corner[k]] != 1.0f || rgba[4 * corner[k]] + rgba[4 * corner[k] + 1] != 0;
        camera_stats_host(rgba, depth, host_stats);
        for (k = 0; cuda && k < STATS; k++) bad += device_stats[FRAMES - 1][i][k] != host_stats[k];
        if (i % 16 == 0) { /* what the consumer computed (the host's figures without CUDA) */
            const uint64_t *st = cuda ? device_stats[FRAMES - 1][i] : host_stats;
            printf("camera %2u: mean colour (%5.1f, %5.1f, %5.1f), depth histogram", i, st[0] / (double)(W * H),
                   st[1] / (double)(W * H), st[2] / (double)(W * H));
            for (k = 0; k < BINS; k++) printf(" %llu", (unsigned long long)st[3 + k]);
            printf("\n");
        }
    }
    printf("%u frames of %u cameras, %s; %llu checks failed\n", FRAMES, N,
           cuda ? "CUDA's figures of the last frame compared with the host's" : "Vulkan only (no kernel)",
           (unsigned long long)bad);

    CHECK_VK(vkDeviceWaitIdle(dev));
    if (cuda) CHECK_CU(cuMemFree(results)), CHECK_CU(cuModuleUnload(module));
    for (i = 0; i < N; i++) {
        vkDestroyFramebuffer(dev, framebuffers[i], NULL);
        for (k = 0; k < 2; k++) vkDestroyImageView(dev, views[i][k], NULL);
    }
    for (k = 0; k < 2; k++) vk_owned_buffer_destroy(&ex.vk, &host[k]), vkcuda_batch_destroy(batch[k]);
    scene_destroy(&sc);
    if (cuda) vkcuda_semaphore_destroy(timeline);
    else vkDestroySemaphore(dev, vk_timeline, NULL);
    example_close(&ex);
    printf("batch_cameras: %s\n", bad == 0 ? "PASS" : "FAIL");
    return bad == 0 ? 0 : 1;
}
