/* Built against an installed FFmpeg bridge (find_package COMPONENTS ffmpeg, or
 * pkg-config vkcuda-ffmpeg): maps NV12 to its VkFormat and refuses a NULL context. */
#include <vkcuda_ffmpeg.h>

#include <stdio.h>

int main(void)
{
    VkFormat format = VK_FORMAT_UNDEFINED;
    vkcuda_ffmpeg *bridge = NULL;
    vkcuda_result mapped = vkcuda_ffmpeg_format_from_av(AV_PIX_FMT_NV12, &format);
    vkcuda_result refused = vkcuda_ffmpeg_create(NULL, NULL, &bridge);
    int ok = mapped == VKCUDA_SUCCESS && format == VK_FORMAT_G8_B8R8_2PLANE_420_UNORM &&
             refused == VKCUDA_ERROR_NULL_POINTER && bridge == NULL;
    printf("consumer (FFmpeg bridge): NV12 -> VkFormat %d, a NULL context: %s (%s): %s\n", (int)format,
           vkcuda_result_to_string(refused), vkcuda_ffmpeg_last_error_message(), ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
