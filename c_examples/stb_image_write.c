/*
 * The one translation unit that compiles stb_image_write (Sean Barrett's public-domain
 * PNG writer; Debian/Ubuntu package libstb-dev, header /usr/include/stb). The programs
 * that write PNGs include <stb_image_write.h> for the declarations and link this file
 * (the vkcuda_stb_image_write library of cmake/vkcudaPrograms.cmake).
 */
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
